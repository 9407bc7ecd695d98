// Package summary is the reported view of a load test: the [Summary] that
// the text, Markdown and JSON summaries, the HTML report (package
// resultview) and the comparisons with earlier runs (package compare) are
// all written from, built from the engine's [load.Result] and its
// threshold checks by [Of]; the [RunInfo] that says where a run came from
// (with its [ConfigRow]s and a multi-host run's [HostRow]s); and the
// verdict sentences the reports share ([ValidityVerdict],
// [GeneratorVerdict], [WorkerVerdict]).
//
// It is presentation only, and part of package outcome, which computes a
// run's Summary once and writes it. It is a package of its own, below
// outcome, resultview and compare, because those three read it and
// outcome imports the other two: the engine (package load) knows nothing
// of it.
package summary
