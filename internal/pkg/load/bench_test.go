package load

import (
	"context"
	"testing"
	"time"
)

// noop is a Requester that reports a 200 with a few bytes.
type noop struct{}

func (noop) Do(context.Context) error { return nil }
func (noop) DoSample(_ context.Context, s *Sample) error {
	s.Status, s.BytesIn, s.BytesOut = 200, 100, 50
	return nil
}

// TestHotPathDoesNotAllocate pins the 0-allocations-per-request promise of
// the scheduler and recording path. It is not parallel: AllocsPerRun
// refuses to run beside other tests.
func TestHotPathDoesNotAllocate(t *testing.T) { //nolint:paralleltest // AllocsPerRun
	for _, model := range []ArrivalModel{Uniform, Poisson} {
		o := &Options{Requester: noop{}, Rate: 1e6, Arrival: model, Stages: []Stage{Ramp(1, 1e6, time.Hour)}}
		// The requester wrapped as Run wraps it, panic trap included.
		_, _, stop := trapPanics(t.Context(), o)
		defer stop(nil)
		e := newEngine(o)
		e.base = time.Now()
		e.reqCtx = t.Context()
		w := e.newWorker(0)
		allocs := testing.AllocsPerRun(1000, func() {
			e.schedMu.Lock()
			_, at, _ := e.sched.Next()
			e.schedMu.Unlock()
			e.do(w, e.base.Add(at), onTime)
		})
		if allocs != 0 {
			t.Errorf("%v: %v allocations per request, want 0", model, allocs)
		}
	}
}

func BenchmarkScheduleNext(b *testing.B) {
	for _, model := range []ArrivalModel{Uniform, Poisson} {
		b.Run(model.String(), func(b *testing.B) {
			s := NewSchedule(&Options{Stages: []Stage{Ramp(1, 1e9, time.Hour)}, Arrival: model})
			b.ReportAllocs()
			for b.Loop() {
				s.Next()
			}
		})
	}
}

func BenchmarkRecord(b *testing.B) {
	e := newEngine(&Options{Requester: noop{}})
	w := e.newWorker(0)
	s := Sample{Status: 200, BytesIn: 10}
	b.ReportAllocs()
	for b.Loop() {
		w.record(0, 1234*time.Microsecond, &s, nil, onTime)
	}
}

// BenchmarkRunOpen drives the whole engine (schedule, workers, recording,
// collector) at a rate far above what it can reach, with a no-op requester.
// Its pool starts at its cap (Concurrency is the starting pool and, without
// MaxConcurrency, the cap), so it measures the path of a pool that cannot
// grow: the growth checks cost one load of the started count per arrival.
func BenchmarkRunOpen(b *testing.B) {
	b.ReportAllocs()
	res, err := Run(b.Context(), Options{Requester: noop{}, Concurrency: 4, Rate: 1e9, Total: uint64(b.N), MaxLateness: -1})
	if err != nil {
		b.Fatal(err)
	}
	if res.Requests != int64(b.N) {
		b.Fatalf("requests = %d, want %d", res.Requests, b.N)
	}
}

// BenchmarkRunClosed drives the closed model with a no-op requester.
func BenchmarkRunClosed(b *testing.B) {
	b.ReportAllocs()
	res, err := Run(b.Context(), Options{Requester: noop{}, Concurrency: 4, Total: uint64(b.N)})
	if err != nil {
		b.Fatal(err)
	}
	if res.Requests != int64(b.N) {
		b.Fatalf("requests = %d, want %d", res.Requests, b.N)
	}
}

// secondSnapshot is one host's second at a modest rate: 300 requests
// between 0.5 and 2.6 ms on one endpoint, as a collector hands it over.
func secondSnapshot(sec int) *Snapshot {
	s := &Snapshot{Second: sec, Endpoints: []EndpointStats{{Name: "GET /"}}}
	h := NewHistogram()
	for i := range 300 {
		h.Record(time.Duration(500+i*7) * time.Microsecond)
	}
	s.Endpoints[0].Stats = Stats{Requests: 300, Latency: h}
	s.Stats = Stats{Requests: 300, Latency: h.Clone()}
	return s
}

// BenchmarkResultSecond is the per-second bookkeeping of a run: one host's
// snapshot added to the result (the "one host" case, every second of
// every run), and a second host's snapshot of the same second merged in
// (what a multi-host coordinator does for each worker every second).
func BenchmarkResultSecond(b *testing.B) {
	b.Run("one host", func(b *testing.B) {
		var r Result
		snaps := []*Snapshot{secondSnapshot(0)}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			s := snaps[0]
			s.Second = i
			r.AddSnapshot(s)
			i++
		}
	})
	b.Run("second host", func(b *testing.B) {
		var r Result
		a, c := secondSnapshot(0), secondSnapshot(0)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			a.Second, c.Second = i, i
			r.AddSnapshot(a)
			r.AddSnapshot(c)
			i++
		}
	})
}
