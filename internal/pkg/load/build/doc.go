// Package build turns a validated load config (package spec) into a runnable
// load test, an [Engine]: engine options (package load), the protocol driver
// (for a mixed-protocol run, a driver per endpoint protocol behind one
// requester that picks each request's endpoint by weight) and the parsed
// thresholds; [EvaluateBaseline] turns the thresholds, on a
// result and a baseline, into the summary's checks (package outcome calls
// it once per run; [Engine.Run] returns measurements only). It also
// sets up the feeder (shared with the other hosts of a multi-host run
// through Settings.ShareRows), auth, and the tracing block's OpenTelemetry
// exporter, flushed when Run ends. [EngineOptions] gives the engine options
// alone and [LoadFeeder] the feeder's rows, opening nothing, for a
// coordinator that only ships the run to other hosts. [Limits] is the one
// place the runner admin's caps are checked: on a whole run ([Limits.Check])
// and on one host's share of a multi-host run ([Limits.CheckShare]). The
// load executor (package loadrun) builds every run here, so the
// `forgeload/load@v1` step, `forgeload load` and a cluster segment behave
// the same.
package build
