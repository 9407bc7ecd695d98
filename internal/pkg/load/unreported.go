package load

// Unreported is what a multi-host run's merged result counts of its lost
// hosts' traffic without their metrics, and the most those hosts may have
// sent beyond it. The target may have received up to Requests + Bound.
type Unreported struct {
	// Counted is how many requests the lost hosts' last heartbeats said
	// they had sent beyond the metrics they shipped; they are in
	// Requests, with no latency, status or error.
	Counted int64 `json:"counted"`
	// Bound is the most they may have sent after those heartbeats, until
	// they stopped (a heartbeat plus their fence at most).
	Bound int64 `json:"bound"`
	// Detail says it per host, in one line.
	Detail string `json:"detail"`
}
