// Package duet judges a paired A/B run: one load run whose arrivals
// alternate between the candidate target and a baseline target, so that
// whatever slows the machine in a given second (a noisy neighbour on a
// shared CI runner, a GC pause of the generator) hits both sides alike.
//
// It owns the pairing requester ([Pair]), which sends even arrivals to
// the candidate and odd ones to the baseline and records the baseline's
// requests under endpoint indexes offset by the endpoint count, the
// [Collector], which reads each second's two sides from the engine's
// snapshots, and [Judge], the paired statistics.
//
// # Statistics
//
// For each latency percentile (p50, p95, p99) every second where both
// sides answered a request successfully gives one paired log-ratio ln(candidate /
// baseline); for the error rate, one paired difference of the two
// seconds' error rates. The estimate is the mean over the seconds (for
// latencies, the geometric mean ratio) and its 95% confidence interval is
// a percentile bootstrap over the seconds ([Resamples] resamples with the
// fixed seed [Seed], so the same run always gives the same verdict). A
// change is beyond noise when the interval excludes no change and, for
// latencies, the estimate is more than [compare.MinChange] away from it;
// it is a REGRESSION when it is also worse by more than its limit
// (`p99=10` is 10% slower, `error_rate=0.5` is half a percentage point
// more errors), [DefaultLimits] when none are given. Fewer than
// [MinSeconds] paired seconds judge nothing, and the run fails.
package duet
