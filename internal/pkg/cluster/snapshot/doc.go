// Package snapshot is the mergeable unit of load-test metrics that cluster
// workers ship once per second: the engine's typed measurements
// ([load.Stats] overall and per endpoint, with HDR latency histograms and
// the endpoints' counted error messages), dropped arrivals by reason, the
// generator's lateness, the response checks' counts and requests in
// flight: everything the single-host verdict and report read, so a merged
// result is judged and shown by the same rules.
//
// A [Snapshot] merges exactly: merging the per-worker snapshots of a second
// gives the same counts as one histogram of every sample. Percentiles across
// hosts must come from merged histograms, never from averaging per-host
// percentiles. The wire form ([Snapshot.MarshalBinary]) is versioned JSON
// whose histograms are HDR V2-compressed encodings in base64, about
// 1–20 KB per worker-second; a snapshot of another version is refused.
package snapshot
