package cluster

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

// TestDeadWorkerCountsWhatItSent: in a closed-model total, worker a sends
// 200 requests of its share and dies (kill -9) before it ships any
// metrics. Its status said it had sent them, so its row says 200, not 0,
// and its heir sends only what is left of the share, not the 200 again.
func TestDeadWorkerCountsWhatItSent(t *testing.T) {
	gate.Long(t, 8)
	srv, rdb := startRedis(t)
	const total, early = 1000, 200
	tg := newShareTarget(total)
	var aSent atomic.Int64
	dying := segmentRunnerFunc(func(ctx context.Context, a Assignment) error {
		for range early {
			if a.Lease() { // the engine checks the lease right before each send
				aSent.Add(1)
			}
		}
		<-ctx.Done() // it never ships: it dies first
		return context.Cause(ctx)
	})
	pools := map[string]*testPool{
		"a": startPool(t, srv.Addr(), "a", dying, quick),
		"b": startPool(t, srv.Addr(), "b", tg.runner("b", false, 0), nil),
	}
	waitRunners(t, rdb, 2)
	pools["spare"] = startPool(t, srv.Addr(), "spare", tg.runner("spare", false, 0), nil)
	waitRunners(t, rdb, 3)
	res := coordinateAsync(t, rdb, Run{Spec: []byte(`{}`), Duration: 20 * time.Second, Workers: 2, Spares: 1, EndsEarly: true},
		CoordOptions{StartLead: 300 * time.Millisecond, Logf: t.Logf, SweepInterval: quickSweep})
	waitFor(t, 30*time.Second, "a to send its early requests", func() bool { return aSent.Load() == early })
	// Wait until a heartbeat has carried the count to its status.
	waitFor(t, 10*time.Second, "a's status to say what it sent", func() bool {
		st, err := Status(context.Background(), rdb)
		if err != nil || len(st.Runs) == 0 {
			return false
		}
		n, _ := rdb.HGet(context.Background(), runKeys(st.Runs[0].ID).status("a"), "sent").Int64()
		return n == early
	})
	pools["a"].p.o.skipAbandon = true
	pools["a"].cancel()
	r := <-res
	if r.err != nil {
		t.Fatalf("Coordinate: %v", r.err)
	}
	i := slices.IndexFunc(r.out.Workers, func(w WorkerRow) bool { return w.ID == "a" })
	if i < 0 || !r.out.Workers[i].Lost {
		t.Fatalf("no lost row for a: %+v", r.out.Workers)
	}
	if got := r.out.Workers[i].SentAtLeast; got != early {
		t.Errorf("a's row: sent at least %d, want the %d its status said", got, early)
	}
	// The target got a's 200 plus what the others sent: exactly the total,
	// since a died having sent exactly what its status said.
	if got := tg.count() + early; got != total {
		t.Errorf("the target got %d requests of a closed-model total of %d: a's heir sent its share again", got, total)
	}
}
