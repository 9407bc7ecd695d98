// Package metrics owns forgeload's Prometheus metrics and the HTTP server that
// exposes them.
//
// [New] builds every collector of the design's metrics list (namespace
// forgeload_) on a registry the caller injects, so tests and several daemons
// in one process never share state; label values are the exported constants,
// so every label stays bounded. The load series are the exception: they are
// labelled by workflow job, step and endpoint, names a workflow chooses, so
// they are written only through [Metrics.StartLoadStep], which sanitizes
// and cuts each value ([LabelValue]), caps how many distinct values a
// daemon has at once (the rest share [LabelOther]) and deletes a finished
// step's series after a retention ([LoadLimits]), at scrape time. [NewServer]
// serves /metrics, /healthz and /readyz; readiness comes from a
// consumer-supplied [Readiness] (the daemon's poller, which tolerates forge
// errors for a grace period).
package metrics
