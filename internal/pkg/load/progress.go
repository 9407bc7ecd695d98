package load

import "time"

// ProgressWindow gathers a run's per-second [Snapshot]s into [Progress]
// lines, one per progress interval: the engine feeds it the seconds of its
// own host, a coordinator the merged seconds of all hosts, so both print
// the same numbers the same way. Totals run over every second added; rates
// and percentiles over the seconds since the last [ProgressWindow.Take].
// Use [NewProgressWindow]; it is not safe for concurrent use.
type ProgressWindow struct {
	every int // seconds per line

	requests, errors, dropped int64 // totals so far

	secs     int        // seconds in the window
	winReq   int64      // requests completed in the window
	target   float64    // sum of the window's planned rates
	lat      *Histogram // the window's latencies
	inFlight int        // in flight at the end of the last second
}

// NewProgressWindow returns an empty window for lines every interval,
// rounded up to whole seconds; interval <= 0 means
// [DefaultProgressInterval].
func NewProgressWindow(interval time.Duration) *ProgressWindow {
	if interval <= 0 {
		interval = DefaultProgressInterval
	}
	return &ProgressWindow{every: max(1, int((interval+time.Second-1)/time.Second)), lat: NewHistogram()}
}

// Add counts one second into the window and the totals.
func (w *ProgressWindow) Add(s *Snapshot) {
	w.requests += s.Requests
	w.errors += s.Errors
	w.dropped += s.Dropped
	w.secs++
	w.winReq += s.Requests
	w.target += s.TargetRPS
	w.lat.Merge(s.Latency)
	w.inFlight = s.InFlight
}

// Full reports whether the window holds a whole progress interval.
func (w *ProgressWindow) Full() bool { return w.secs >= w.every }

// Span is the time the window's seconds cover.
func (w *ProgressWindow) Span() time.Duration { return time.Duration(w.secs) * time.Second }

// Take returns the line for the window and starts a new one. elapsed is
// the plan time at its end; span is the time it covers, [ProgressWindow.Span]
// or less for a run that ended inside its last second, and divides the
// achieved rate. The planned rate is the mean over the window's seconds.
func (w *ProgressWindow) Take(elapsed, span time.Duration) Progress {
	p := Progress{
		Elapsed: elapsed, Requests: w.requests, Errors: w.errors, Dropped: w.dropped,
		P50: w.lat.Quantile(0.50), P95: w.lat.Quantile(0.95), P99: w.lat.Quantile(0.99),
		InFlight: w.inFlight,
	}
	if span > 0 {
		p.RPS = float64(w.winReq) / span.Seconds()
	}
	if w.secs > 0 {
		p.TargetRPS = w.target / float64(w.secs)
	}
	w.secs, w.winReq, w.target = 0, 0, 0
	w.lat.Reset()
	return p
}
