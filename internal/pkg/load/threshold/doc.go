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
// p99.9, avg or mean, min, max), http_req_failed (rate, count),
// http_requests (rate, count), checks (rate: the share of response-check
// evaluations that passed, read through [CheckSource]; a rate like a
// failure rate, in % or a fraction below 1), and the system under test's resources
// sut_cpu and sut_mem (max, avg), which take a {service:NAME} selector:
//
//	sut_cpu:max < 80%
//	sut_cpu{service:api}:avg < 1.5cores
//	sut_mem:max < 512MB
//
// The operators are <, <=, >, >=, == and !=.
//
// A {phase:NAME} selector, alone or beside the endpoint
// ({endpoint:login,phase:plateau}), judges only the seconds of a named
// phase of the run, through a [PhaseSource]:
//
//	http_req_duration{phase:plateau}:p99 < 200ms
//
// A Threshold's AbortOnFail and Delay, set from a config's mapping item
// (expr, abort_on_fail, delay), ask the run to stop as soon as it fails;
// the caller judges them on the per-second snapshots.
//
// # Baselines
//
// The value may be the same metric in a baseline run, optionally times a
// factor, and rps is short for http_requests:rate:
//
//	http_req_duration:p99 < baseline * 1.10
//	rps > baseline * 0.95
//
// [EvaluateBaseline] takes the baseline run as a second [Source]; without
// one, baseline thresholds are skipped (Outcome.Skipped) and pass. A
// baseline that stands for several runs ([Runs]) gives the median of the
// metric measured in each.
//
// # Units
//
// Every [Threshold] holds its value in one canonical unit: seconds for
// durations, a fraction in [0,1] for failure rates, requests per second for
// http_requests:rate, and a plain count for counts. Duration values accept
// ns, us (or µs), ms and s; a plain number is milliseconds, as in Crankfire.
// Failure-rate values accept a percentage (1%) or a plain fraction below 1
// (0.01), as in Crankfire; a plain number of 1 or more is refused with the
// fix ("write 1% or 0.01"), because it is a percentage missing its % sign
// or a bound of 100% that never fails. [Threshold.String], which summaries
// print, adds the bound in units where the text leaves them to a rule:
// "http_req_duration:p99 < 300 (300ms)", "http_req_failed:rate < 0.01
// (1%)". sut_cpu takes a
// percentage of the container's CPU limit (of the host's CPUs when it has
// none) or cores; sut_mem a percentage of the memory limit or a size in B,
// KB, MB, GB (powers of 1024, as docker's --memory reads them). Without a
// selector they check the service with the highest value.
//
// # Evaluation
//
// [EvaluateBaseline] reads results through the consumer-side [Source] and [Metrics]
// interfaces, which the engine's result implements, and returns one
// [Outcome] per threshold. Parsing and evaluation are pure functions with no
// shared state, safe for concurrent use.
package threshold
