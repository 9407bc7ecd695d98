package load

import (
	"testing"
	"time"
)

// second is one plan second with n requests of latency lat, errs failed.
func second(sec int, n, errs int64, lat time.Duration, target float64) *Snapshot {
	s := &Snapshot{Second: sec, Stats: Stats{Requests: n, Errors: errs, Latency: NewHistogram()}, TargetRPS: target, InFlight: sec, Dropped: 1}
	for range n {
		s.Latency.Record(lat)
	}
	return s
}

// A window of 2 s: totals run on, rates and percentiles cover the window,
// the planned rate is its mean, and a final partial window is rated over
// the time it spans.
func TestProgressWindow(t *testing.T) {
	t.Parallel()
	w := NewProgressWindow(1500 * time.Millisecond) // rounds up to 2 s
	w.Add(second(0, 30, 1, 10*time.Millisecond, 10))
	if w.Full() {
		t.Fatal("full after 1 of 2 seconds")
	}
	w.Add(second(1, 10, 0, 30*time.Millisecond, 30))
	if !w.Full() || w.Span() != 2*time.Second {
		t.Fatalf("after 2 seconds: full %t, span %s; want true, 2s", w.Full(), w.Span())
	}
	p := w.Take(2*time.Second, w.Span())
	if p.Requests != 40 || p.Errors != 1 || p.Dropped != 2 || p.RPS != 20 || p.TargetRPS != 20 || p.InFlight != 1 || p.Elapsed != 2*time.Second {
		t.Errorf("first line = %+v, want 40 requests, 1 error, 2 dropped, 20 req/s of 20 planned, 1 in flight at 2s", p)
	}
	if p.P50 < 9*time.Millisecond || p.P50 > 11*time.Millisecond || p.P99 < 29*time.Millisecond || p.P99 > 31*time.Millisecond {
		t.Errorf("first line p50 %s, p99 %s; want about 10ms and 30ms", p.P50, p.P99)
	}

	w.Add(second(2, 5, 0, 100*time.Millisecond, 50))
	p = w.Take(2500*time.Millisecond, 500*time.Millisecond)
	if p.Requests != 45 || p.Errors != 1 || p.RPS != 10 || p.TargetRPS != 50 || p.P50 < 99*time.Millisecond || p.P50 > 101*time.Millisecond {
		t.Errorf("final line = %+v, want totals 45/1, 10 req/s over 0.5 s, 50 planned, p50 about 100ms (the old window gone)", p)
	}
	if p := w.Take(3*time.Second, 0); p.RPS != 0 || p.TargetRPS != 0 || p.P99 != 0 || p.Requests != 45 {
		t.Errorf("empty window = %+v, want no rates, no latency, totals kept", p)
	}
}

func TestNewProgressWindowDefault(t *testing.T) {
	t.Parallel()
	for _, d := range []time.Duration{0, -time.Second} {
		if got, want := NewProgressWindow(d).every, int(DefaultProgressInterval/time.Second); got != want {
			t.Errorf("NewProgressWindow(%s) lines every %d s, want %d", d, got, want)
		}
	}
}
