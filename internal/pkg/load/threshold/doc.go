// Package threshold parses and evaluates pass/fail criteria for a load test,
// written in Crankfire's syntax `metric:aggregate op value`, for example
// `http_req_duration:p99 < 300ms` or `http_req_failed:rate < 1%`.
//
// # Syntax
//
// A threshold names a metric, an optional endpoint selector, an aggregate,
// a comparison operator and a value:
//
//	http_req_duration:p95 < 500ms
//	http_req_duration{endpoint:login}:p99 <= 0.2s
//	http_req_failed:rate < 1%
//	http_requests:rate >= 450
//
// The metrics are http_req_duration (p50, p90, p95, p99, any pNN such as
// p99.9, avg or mean, min, max), http_req_failed (rate, count) and
// http_requests (rate, count). The operators are <, <=, >, >=, == and !=.
//
// # Units
//
// Every [Threshold] holds its value in one canonical unit: seconds for
// durations, a fraction in [0,1] for failure rates, requests per second for
// http_requests:rate, and a plain count for counts. Duration values accept
// ns, us (or µs), ms and s; a plain number is milliseconds, as in Crankfire.
// Failure-rate values accept a percentage (1%) or a plain fraction (0.01),
// as in Crankfire; a plain number above 1 is rejected because it is
// almost certainly a percentage missing its % sign.
//
// # Evaluation
//
// [Evaluate] reads results through the consumer-side [Source] and [Metrics]
// interfaces, which the engine's result implements, and returns one
// [Outcome] per threshold. Parsing and evaluation are pure functions with no
// shared state, safe for concurrent use.
package threshold
