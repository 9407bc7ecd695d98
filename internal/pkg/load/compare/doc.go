// Package compare reads JSON results back (of any schema version) and
// compares two runs: a table of deltas for the rate, the latency
// percentiles, the error rate and the systems under test, each marked as beyond the run-to-run
// noise or not, and whether it regressed beyond a given limit. A [Result]
// is also a threshold source, so it serves as the baseline of thresholds
// such as `http_req_duration:p99 < baseline * 1.10`.
//
// # Noise
//
// A change counts as beyond noise when:
//   - percentiles: the 95% confidence intervals of the two percentiles do
//     not overlap. Each interval is read from the run's HDR histogram at
//     the ranks n·q ± 1.96·√(n·q·(1-q)) (the order-statistic interval of a
//     quantile of n samples);
//   - rate: the means of the per-second achieved rates (first and last
//     second left out) differ by more than 1.96 standard errors of their
//     difference;
//   - error rate: a two-proportion z-test on the error counts at 95%.
//
// Rate and percentile changes must also exceed [MinChange] (2%), because
// requests are not independent samples and machines vary between runs.
// The systems under test (mean CPU, peak memory) are compared when both
// results measured them, and count as beyond noise over 5%.
// A result without a histogram or per-second series (schema 1) falls back
// to a change of more than [FallbackChange] (5%).
//
// A delta regresses when it is beyond noise, goes the wrong way (higher
// latency or error rate, lower rate) and exceeds its limit: a relative
// change for rate and percentiles, percentage points for the error rate.
package compare
