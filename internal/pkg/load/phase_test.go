package load

import (
	"strings"
	"testing"
	"time"
)

func phaseSnap(sec int, n int64, lat time.Duration) *Snapshot {
	s := &Snapshot{Second: sec, Stats: Stats{Requests: n, Latency: NewHistogram()}, Endpoints: []EndpointStats{{Name: "api", Stats: Stats{Requests: n}}}}
	for range n {
		s.Latency.Record(lat)
	}
	return s
}

// A second belongs to the phase that holds its middle: a phase ending at
// 1.5 s holds seconds 0 (its middle at 0.5 s) and not 1 (1.5 s).
func TestPhasesTakeTheirSeconds(t *testing.T) {
	t.Parallel()
	r := &Result{}
	r.SetPhases([]Phase{{Name: "warmup", End: 1500 * time.Millisecond}, {Name: "plateau", Start: 1500 * time.Millisecond, End: 4 * time.Second}})
	r.AddSnapshot(phaseSnap(0, 10, 300*time.Millisecond))
	r.AddSnapshot(phaseSnap(1, 20, time.Millisecond))
	r.AddSnapshot(phaseSnap(2, 30, time.Millisecond))
	r.AddSnapshot(phaseSnap(7, 1, time.Millisecond)) // after every phase
	if w, p := r.Phases[0].Requests, r.Phases[1].Requests; w != 10 || p != 50 {
		t.Fatalf("warmup %d, plateau %d requests; want 10 and 50", w, p)
	}
	if ep := r.Phases[1].Endpoints; len(ep) != 1 || ep[0].Name != "api" || ep[0].Requests != 50 {
		t.Errorf("plateau endpoints = %+v", ep)
	}
	if q := r.Phases[1].Quantile(0.99); q > 2*time.Millisecond {
		t.Errorf("plateau p99 = %v, want the fast seconds only", q)
	}
	// Another host's result merges phase by phase.
	o := &Result{}
	o.SetPhases([]Phase{{Name: "warmup", End: 1500 * time.Millisecond}, {Name: "plateau", Start: 1500 * time.Millisecond, End: 4 * time.Second}})
	o.AddSnapshot(phaseSnap(2, 5, time.Millisecond))
	r.Merge(o)
	if p := r.Phases[1].Requests; p != 55 || len(r.Phases) != 2 {
		t.Errorf("after the merge: %d phases, plateau %d requests; want 2 and 55", len(r.Phases), p)
	}
	r.Elapsed = 3 * time.Second
	ps, covered, ok := r.Phase("plateau")
	if !ok || ps.Requests != 55 || covered != 1500*time.Millisecond {
		t.Errorf("Phase(plateau) = %d requests over %v (%v), want 55 over 1.5s", ps.Requests, covered, ok)
	}
	if _, _, ok := r.Phase("soak"); ok {
		t.Error("Phase(soak) found a phase")
	}
	if got := strings.Join(r.PhaseNames(), ","); got != "warmup,plateau" {
		t.Errorf("PhaseNames() = %q", got)
	}
}

// A name used by two windows is one phase for thresholds, two rows in
// the summary.
func TestPhaseNameOverTwoWindows(t *testing.T) {
	t.Parallel()
	r := &Result{Elapsed: 4 * time.Second}
	r.SetPhases([]Phase{{Name: "hold", End: time.Second}, {Name: "spike", Start: time.Second, End: 2 * time.Second}, {Name: "hold", Start: 2 * time.Second, End: 4 * time.Second}})
	for sec := range 4 {
		r.AddSnapshot(phaseSnap(sec, 10, time.Millisecond))
	}
	ps, covered, ok := r.Phase("hold")
	if !ok || ps.Requests != 30 || covered != 3*time.Second {
		t.Errorf("Phase(hold) = %d requests over %v, want 30 over 3s", ps.Requests, covered)
	}
}
