// Package load is forgeload's load engine: it owns the arrival schedule
// (uniform or Poisson arrivals over a timeline of ramp, step and spike
// stages), the closed model (virtual users with a ramp and think time), the
// pull-based workers that call a [Requester], the retry and failure-logging
// decorators, the HDR-histogram measurement (overall, per endpoint and per
// second, mergeable across hosts) and the text, JSON and Markdown summaries
// (package outcome computes a run's [Summary] once and judges the run).
// It knows nothing of the forge, Redis or Prometheus: protocol drivers such as
// httpload plug in through [Requester], and the multi-host coordinator
// through [Options.Owns], [Options.ScaleVUs], [Options.StartAt],
// [Options.Offset] and [Options.OnSecond].
//
// # Measurement
//
// Whenever a rate is set, latency is measured from each arrival's intended
// send time, so a stalled target shows up in the percentiles (no coordinated
// omission). An arrival that finds every worker busy for longer than
// [Options.MaxLateness] is dropped and counted; a run with dropped or late
// arrivals is flagged as generator-bound. Percentiles always come from HDR
// histograms (1 µs to 60 s, 3 significant digits) and, across hosts, from
// merged histograms; they are never averaged.
//
// # Hot path
//
// Workers pull arrivals from one shared schedule, record into preallocated
// recorder shards (a few per CPU) and never allocate per request; a
// collector merges the shards once per plan second and feeds the
// [ProgressWindow] that makes the progress lines (a coordinator of a
// multi-host run feeds one with the merged seconds of every host).
package load
