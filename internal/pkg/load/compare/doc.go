// Package compare reads JSON results back (of any schema version) and
// compares a run with one earlier run or with a history of them: a table
// of deltas for the rate, the latency
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
// # History
//
// [History] makes several earlier runs into one baseline: the old value of
// each metric is their median, and the within-run tests above use, for
// the old side, the median of each run's ingredient (interval widths,
// standard errors, request counts). A change is then beyond noise only
// when it also exceeds the run-to-run noise: [CriticalMAD](n) times the
// MAD (median absolute deviation) of the metric over the n runs. The
// critical values are the 95th percentiles of |x − median|/MAD for normal
// noise, found by simulation; the median and the MAD keep one bad earlier
// run from moving the baseline or hiding a regression.
//
// [ChangePoints] finds, over a longer history (read in order by
// [LoadHistory]), where each metric's level shifted, with package
// changepoint.
//
// A delta regresses when it is beyond noise, goes the wrong way (higher
// latency or error rate, lower rate) and exceeds its limit: a relative
// change for rate and percentiles, percentage points for the error rate.
package compare
