package load

import (
	"strings"
	"testing"
	"testing/synctest"
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
func TestFormatProgress(t *testing.T) {
	t.Parallel()
	got := FormatProgress(Progress{Elapsed: 10 * time.Second, Requests: 200, Errors: 2, RPS: 998, TargetRPS: 1000,
		P50: 1200 * time.Microsecond, P95: 3400 * time.Microsecond, P99: 1500 * time.Millisecond, InFlight: 3, Dropped: 1})
	want := "[  10s] 998.0/1000.0 req/s  p50 1.20ms  p95 3.40ms  p99 1.50s  errors 2 (1.00%)  in-flight 3  dropped 1"
	if got != want {
		t.Errorf("FormatProgress = %q, want %q", got, want)
	}
	got = FormatProgress(Progress{Elapsed: time.Second, RPS: 5, P50: 300 * time.Microsecond})
	if !strings.Contains(got, "5.0 req/s  p50 300µs") {
		t.Errorf("closed-model progress = %q, want no target and µs precision", got)
	}
}

func TestRunDeliversProgress(t *testing.T) {
	t.Parallel()
	// On the fake clock: the 2.5 s run was this package's longest wait.
	synctest.Test(t, func(t *testing.T) {
		var got []Progress
		res, err := Run(t.Context(), Options{Requester: noop{}, Concurrency: 2, Rate: 100, Duration: 2500 * time.Millisecond,
			ProgressInterval: time.Second, Progress: func(p Progress) { got = append(got, p) }})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) < 2 || got[len(got)-1].Requests != res.Requests || got[0].TargetRPS != 100 {
			t.Errorf("progress = %+v, want one per second ending at %d requests", got, res.Requests)
		}
	})
}
