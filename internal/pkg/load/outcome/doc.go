// Package outcome owns a load test's outcome: what the engine measured
// ([load.Result], measurements only), its summary computed once (a
// [summary.Summary]; package summary holds the reported view, the run's
// metadata and the per-host rows, below outcome so that the HTML report
// and the comparisons that outcome uses can read them too), its
// thresholds evaluated once (with the baseline and the job's services
// included), the run's metadata, and one verdict in one order. The job's
// load step, `forgeload load` and the multi-host coordinator build an
// [Outcome] with [New], write it with its Text, Markdown, JSON and HTML
// writers, and map its [Verdict] to a step result or an exit code.
//
// It also holds the one log_errors policy ([FailureLogger]) both callers
// use.
package outcome
