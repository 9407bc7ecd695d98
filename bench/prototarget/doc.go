// Command prototarget is the server bench/protocols.sh aims forgeload,
// Crankfire and k6 at when it compares WebSocket, SSE and gRPC throughput.
// It listens on 127.0.0.1 only and keeps no record of what it receives, so
// that it costs as little as possible per message: a WebSocket endpoint
// (/ws) that reads every message and never replies, an SSE endpoint
// (/events) that writes small events, flushing each, until the client goes
// away, and a gRPC
// Greeter (greeter.proto, registered by hand with dynamic messages) whose
// SayHello answers every call. It counts only the WebSocket messages it
// reads and the gRPC calls it answers (atomic counters, returned by GET
// /__bench/stats as {"ws_messages":N,"grpc_calls":N}), so the benchmark can
// check each generator's count from the server's side. It prints one line,
// "http=ADDR grpc=ADDR", when both listeners are up, writes greeter.proto
// to -proto, and stops on SIGINT or SIGTERM.
package main
