package cluster

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestCoordinatorRunsOwnSegment: the coordinator's own runner is recruited
// first even when it serves only its own runs (max_segments 0), and a
// runner with OwnRunsOnly is never recruited by another coordinator.
func TestCoordinatorRunsOwnSegment(t *testing.T) {
	gate.Long(t, 7)
	srv, rdb := startRedis(t)
	log := newArrivalLog()
	// Who is recruited is checked here, not leases: leases that outlast
	// the machine's stalls keep the count exact (at the defaults, a worker
	// once fenced itself during the full suite, and 15 of 20 were sent).
	patient := func(o *PoolOptions) { o.FenceAfter, o.LeaseTTL = 15*time.Second, 20*time.Second }
	startPool(t, srv.Addr(), "a", log.runner("a"), func(o *PoolOptions) { patient(o); o.Capacity = 4 })
	startPool(t, srv.Addr(), "b", log.runner("b"), patient)
	startPool(t, srv.Addr(), "own", log.runner("own"), func(o *PoolOptions) { patient(o); o.OwnRunsOnly = true })
	waitRunners(t, rdb, 3)

	out, err := Coordinate(context.Background(), rdb, Run{
		Spec: []byte(`{"rate":20}`), Duration: time.Second, Workers: 2, JoinTimeout: 5 * time.Second,
	}, CoordOptions{RunID: "own1", Coordinator: "own", StartLead: time.Second, Logf: t.Logf}) // a lead a stall cannot eat: the count is exact
	if err != nil {
		t.Fatalf("Coordinate: %v", err)
	}
	var ids []string
	for _, w := range out.Workers {
		ids = append(ids, w.ID)
	}
	if !slices.Contains(ids, "own") || !slices.Contains(ids, "a") {
		t.Errorf("workers = %v, want the coordinator's own runner and the one with the most capacity (a)", ids)
	}
	if got := log.count(); got != 20 {
		t.Errorf("arrivals = %d, want 20", got)
	}

	_, err = Coordinate(context.Background(), rdb, Run{
		Spec: []byte(`{"rate":20}`), Duration: time.Second, Workers: 3, JoinTimeout: 2 * time.Second,
	}, CoordOptions{RunID: "own2", Coordinator: "elsewhere", StartLead: 200 * time.Millisecond, Logf: t.Logf})
	if err == nil || !strings.Contains(err.Error(), "only 2 of 3 workers joined") {
		t.Fatalf("Coordinate by another coordinator: err = %v, want only 2 of 3 joined (own serves only its own runs)", err)
	}
}

// TestSegmentErrorFailsRun: a worker whose SegmentRunner refuses its
// segment (its own policy, its own limits) fails the whole run with the
// reason, instead of the run finishing short of the plan.
func TestSegmentErrorFailsRun(t *testing.T) {
	gate.Short(t)
	srv, rdb := startRedis(t)
	log := newArrivalLog()
	startPool(t, srv.Addr(), "ok", log.runner("ok"), nil)
	startPool(t, srv.Addr(), "strict", segmentRunnerFunc(func(context.Context, Assignment) error {
		return errors.New("target 127.0.0.1:80 is denied by this runner's policy")
	}), nil)
	waitRunners(t, rdb, 2)
	_, err := Coordinate(context.Background(), rdb, Run{
		Spec: []byte(`{"rate":20}`), Duration: 3 * time.Second, Workers: 2, JoinTimeout: 5 * time.Second,
	}, CoordOptions{RunID: "refused", StartLead: 200 * time.Millisecond, Logf: t.Logf})
	if err == nil || !strings.Contains(err.Error(), "worker strict could not run segment") || !strings.Contains(err.Error(), "denied by this runner's policy") {
		t.Fatalf("Coordinate: err = %v, want the refusing worker and its reason", err)
	}
}
