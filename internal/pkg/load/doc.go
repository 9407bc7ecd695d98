// Package load is forgeload's load engine: it owns the arrival schedule
// (uniform or Poisson arrivals over a timeline of ramp, step and spike
// stages), the closed model (virtual users with a ramp and think time), the
// pull-based workers that call a [Requester], the retry and failure-logging
// decorators and the HDR-histogram measurement (overall, per endpoint and
// per second, mergeable across hosts), which [Result] holds: measurements
// only. What is shown of a run (its summary, the reports, where it came
// from, the verdict) is package outcome's and its summary package's; the
// engine formats only its live progress lines ([FormatProgress]) and
// numbers in the units the summaries share ([FormatMS] and its kin).
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
// # Executors
//
// A run's scheduling model is an executor, one small type per model
// behind the engine's executor interface (size and start the workers; say
// when the plan ends and what that end means; settle the books at the
// stop): the open model (arrivals at a planned rate from the shared
// [Schedule], taken by a pool of workers that starts with
// [Options.Concurrency] and grows up to [Options.MaxConcurrency]), the
// closed model (a fixed number of virtual users, each sending its next
// request when its last one ends) and the ramping closed model (the users
// active follow [Options.VUStages] and [Options.ScaleVUs], set by a
// controller every 100 ms). The engine owns the rest: plan time, the
// recorders, the collector and the graceful stop.
//
// # Stop
//
// The stop takes two steps whatever the model, each a context (as k6's
// executors stop). First the "no new work" context ends: no new iteration
// or arrival starts (the workers check its Done channel between requests,
// a receive on a channel they hold). It is derived from the run's ctx, so
// a cancel of ctx takes this step at once; otherwise the engine takes it
// when the run ends ([Options.Duration], [Options.Total],
// [Options.Deadline]; a panic cancels ctx). Then, after the grace period
// ([Options.Grace]; [MaxInterruptGrace] once ctx is done; never past
// [Options.Deadline]), the requests' context, which carries ctx's values
// but not its cancel, is cancelled, and the workers are waited for, at
// most [MaxCancelWait]. So a cancel of ctx ends both: new work at once,
// the requests in flight within MaxInterruptGrace. An open plan that
// reaches its end takes the first step by itself: it has no arrival past
// its end, and the ones already due are still sent during the grace
// period.
//
// # Hot path
//
// Workers pull arrivals from one shared schedule, record into preallocated
// recorder shards (a few per CPU) and never allocate per successful
// request (a failure may cost its error's message, which is counted, at
// most [MaxErrorMessages] distinct ones per endpoint and shard; a status
// error costs nothing); a collector merges the shards once per plan
// second and feeds the
// [ProgressWindow] that makes the progress lines (a coordinator of a
// multi-host run feeds one with the merged seconds of every host).
package load
