package load

import "testing"

// TestStallIsTheGenerators: arrivals skipped after a stall of the
// generator are dropped, but blamed on the generator, not on the target
// (worker-bound), and the verdict names the stall; merging keeps them.
func TestStallIsTheGenerators(t *testing.T) {
	t.Parallel()
	var r Result
	r.Merge(&Result{Stats: Stats{Requests: 100, Stalled: 30}, Dropped: 30, DroppedBy: map[string]int64{"stalled": 30}})
	r.Merge(&Result{Stats: Stats{Requests: 50}})
	r.Finish()
	if r.Stalled != 30 || r.Dropped != 30 {
		t.Fatalf("merged stalled %d, dropped %d; want 30 and 30", r.Stalled, r.Dropped)
	}
	if !r.GeneratorBound || r.WorkerBound {
		t.Errorf("generator-bound %v, worker-bound %v; want true, false: a stall is the generator's", r.GeneratorBound, r.WorkerBound)
	}
	// One more drop that is not a stall (a late one) is the target's again.
	r.Dropped++
	r.DroppedBy["late"]++
	r.Finish()
	if !r.WorkerBound {
		t.Error("a drop beside the stalled ones is not worker-bound")
	}
}
