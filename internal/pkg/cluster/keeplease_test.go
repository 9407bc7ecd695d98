package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// slowClock is a go-redis hook that answers TIME late: the worker's loop
// waits on it (it measures Redis's clock when it joins a run and again on
// "prepare"), as it waited on a saturated machine; every other call is
// answered at once.
type slowClock struct{ delay time.Duration }

func (slowClock) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h slowClock) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() == "time" {
			late := time.NewTimer(h.delay)
			defer late.Stop()
			select {
			case <-late.C:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return next(ctx, cmd)
	}
}

func (slowClock) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

var _ redis.Hook = slowClock{}

// TestWorkerKeepsItsLeaseWhileItsLoopWaits: a worker whose loop waits
// longer than its lease for something other than the lease (here Redis's
// clock, 5 samples of 0.6 s when it joins) still renews its lease, since
// Redis answers renewals all along, and runs its share to the end. Before,
// renewals waited for the loop, and the worker fenced itself as it joined.
func TestWorkerKeepsItsLeaseWhileItsLoopWaits(t *testing.T) {
	gate.Long(t, 8)
	srv, rdb := startRedis(t)
	log := newArrivalLog()
	p := startPool(t, srv.Addr(), "busy", log.runner("busy"), nil)
	p.p.rdb.AddHook(slowClock{delay: 600 * time.Millisecond})
	waitRunners(t, rdb, 1)
	out, err := Coordinate(context.Background(), rdb, Run{
		Spec: []byte(`{"rate":20}`), Duration: time.Second, Workers: 1, JoinTimeout: 10 * time.Second,
	}, CoordOptions{StartLead: time.Second, Logf: t.Logf})
	if err != nil {
		t.Fatalf("Coordinate: %v", err)
	}
	if out.Reassignments != 0 || out.Degraded || len(out.Workers) != 1 || out.Workers[0].Lost {
		t.Errorf("outcome: %d reassignments, degraded %v, workers %+v; want the one worker to keep its share", out.Reassignments, out.Degraded, out.Workers)
	}
	if got := log.count(); got != 20 {
		t.Errorf("arrivals = %d, want all 20", got)
	}
	select {
	case lv := <-p.leaves:
		if lv.err != nil {
			t.Errorf("the worker left the run with %v, want a clean end", lv.err)
		}
	case <-time.After(10 * time.Second):
		t.Error("the worker did not leave the run after its end")
	}
}
