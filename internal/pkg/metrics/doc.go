// Package metrics owns forgeload's Prometheus metrics and the HTTP server that
// exposes them.
//
// [New] builds every collector of the design's metrics list (namespace
// forgeload_) on a registry the caller injects, so tests and several daemons
// in one process never share state; label values are the exported constants,
// so every label stays bounded. [NewServer] serves /metrics, /healthz and
// /readyz; readiness comes from a consumer-supplied [Readiness] (the
// daemon's poller, which tolerates forge errors for a grace period).
package metrics
