// Command target is the HTTP server that bench/run.sh aims every load
// generator at. It listens on 127.0.0.1 only and answers every request with a
// small 200 OK over keep-alive. Its default implementation is a purpose-built
// HTTP/1.1 responder (-impl raw), so that the target and not the generator is
// never the ceiling when one core serves it; -impl net serves the same
// answers through net/http for comparison. In stall mode (-mode stall) it
// freezes every response during the first -stall-for of each -stall-every
// window (1 s of every 5 s by default), which is the coordinated-omission
// probe. It also counts the requests it receives in 10 ms buckets from the
// first one, so the benchmark can judge a generator's achieved rate and
// start-up burst from the target's side: GET /__bench/reset clears the
// counters and restarts the stall windows, and GET /__bench/stats returns
// them as JSON. Neither control request is counted.
package main
