package cluster

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

type coordResult struct {
	out *Outcome
	err error
}

func coordinateAsync(t *testing.T, rdb *redis.Client, r Run, o CoordOptions) chan coordResult {
	t.Helper()
	c := make(chan coordResult, 1)
	go func() {
		out, err := Coordinate(context.Background(), rdb, r, o)
		c <- coordResult{out, err}
	}()
	return c
}

func segOwnedBy(t *testing.T, log *arrivalLog, w string) int {
	t.Helper()
	var segs []int
	waitFor(t, 30*time.Second, w+" to start a segment", func() bool { segs = log.segOf(w); return len(segs) > 0 })
	return segs[0]
}

func sentBy(log *arrivalLog, w string) int {
	log.mu.Lock()
	defer log.mu.Unlock()
	n := 0
	for _, as := range log.byK {
		for _, a := range as {
			if a.w == w {
				n++
			}
		}
	}
	return n
}

// TestKilledWorkerIsReassigned: a worker vanishes without abandoning (as
// with kill -9). Its segment moves to the spare within heartbeat + lease +
// sweep (7 s at the defaults, which TestE2EClusterKillWorker checks; here
// 3.5 s: the victim is quick and the coordinator sweeps twice a second),
// and no segment ever has two owners at once.
func TestKilledWorkerIsReassigned(t *testing.T) {
	gate.Long(t, 9)
	srv, rdb := startRedis(t)
	log := newArrivalLog()
	pools := map[string]*testPool{}
	// Only the victim is quick: the others keep leases that outlast a
	// loaded machine's stalls, so no one else is lost by accident.
	const victim = "a"
	for _, id := range []string{"a", "b", "c", "spare"} {
		mod := func(*PoolOptions) {}
		if id == victim {
			mod = quick
		}
		pools[id] = startPool(t, srv.Addr(), id, log.runner(id), mod)
	}
	waitRunners(t, rdb, 4)
	obs := &countObserver{}
	res := coordinateAsync(t, rdb, Run{Spec: []byte(`{"rate":30}`), Duration: 8 * time.Second, Workers: 3, Spares: 1},
		CoordOptions{StartLead: 300 * time.Millisecond, Logf: t.Logf, Observer: obs, SweepInterval: quickSweep})
	// Runners of equal capacity are ranked by name, so "a" owns a segment
	// and "spare" is the spare, unless one joined too late to be ranked.
	waitFor(t, 30*time.Second, "a segment owner to send", func() bool {
		return sentBy(log, victim) >= 3 || len(log.segOf("spare")) > 0 && sentBy(log, "b") > 5
	})
	if sentBy(log, victim) < 3 {
		t.Skip("the quick runner was ranked as the spare; nothing to kill")
	}
	seg := segOwnedBy(t, log, victim)
	// Kill it once it has shipped some metrics, so there is a count to
	// hand on with its segment.
	waitFor(t, 10*time.Second, victim+" to ship metrics", func() bool {
		st, err := Status(context.Background(), rdb)
		if err != nil || len(st.Runs) == 0 {
			return false
		}
		msgs, _ := rdb.XRange(context.Background(), runKeys(st.Runs[0].ID).metrics(), "-", "+").Result()
		for _, m := range msgs {
			if m.Values["w"] == victim {
				return true
			}
		}
		return false
	})
	pools[victim].p.o.skipAbandon = true
	pools[victim].cancel()
	killed := time.Now()
	var heir string
	var at time.Time
	waitFor(t, 15*time.Second, "the killed worker's segment to be driven again", func() bool {
		for id := range pools {
			if id == victim {
				continue
			}
			if ts, ok := log.firstBy(id, seg, killed); ok {
				heir, at = id, ts
				return true
			}
		}
		return false
	})
	// The lease (2.5 s since the last renewal, at most 0.5 s before the
	// kill) expires and the next sweep (every 0.5 s) sees it: 2 to 3 s,
	// 3.5 s promised. 2 s more leave room for a machine at a load average
	// of 20 and still fail a takeover that waited for a second lease or
	// the end.
	var o PoolOptions
	quick(&o)
	promised := o.Heartbeat + o.LeaseTTL + quickSweep
	if d := at.Sub(killed); d > promised+2*time.Second {
		t.Errorf("segment %d resumed %s after the kill, want about %s at most (%s allowed)", seg, d, promised, promised+2*time.Second)
	} else {
		t.Logf("segment %d resumed on %s %s after the kill", seg, heir, d)
	}
	r := <-res
	if r.err != nil {
		t.Fatalf("Coordinate: %v", r.err)
	}
	log.checkNoDoubleOwner(t)
	if r.out.Reassignments != 1 || obs.reassigned.Load() != 1 {
		t.Errorf("reassignments = %d (observer %d), want 1", r.out.Reassignments, obs.reassigned.Load())
	}
	if r.out.Degraded {
		t.Error("run marked degraded although a spare took over")
	}
	lost := slices.IndexFunc(r.out.Workers, func(w WorkerRow) bool { return w.ID == victim })
	if lost < 0 || !r.out.Workers[lost].Lost {
		t.Fatalf("worker row for %s not marked lost: %+v", victim, r.out.Workers)
	}
	// The heir is told what the victim reported for the segment, so a
	// closed-model total counts it as sent.
	log.mu.Lock()
	var prior int64 = -1
	for _, a := range log.starts[heir] {
		if a.Index == seg {
			prior = a.Prior
		}
	}
	log.mu.Unlock()
	if want := r.out.Workers[lost].Total.Requests; prior != want || want == 0 {
		t.Errorf("heir %s took segment %d with Prior %d, want the %d requests %s reported", heir, seg, prior, want, victim)
	}
}

// TestAbandonReassignsAtOnce: a gracefully stopping worker hands its
// segment back and the spare resumes it in under a second.
func TestAbandonReassignsAtOnce(t *testing.T) {
	gate.Long(t, 7)
	srv, rdb := startRedis(t)
	log := newArrivalLog()
	pools := map[string]*testPool{}
	for _, id := range []string{"a", "b", "spare"} {
		pools[id] = startPool(t, srv.Addr(), id, log.runner(id), nil)
	}
	waitRunners(t, rdb, 3)
	res := coordinateAsync(t, rdb, Run{Spec: []byte(`{"rate":40}`), Duration: 5 * time.Second, Workers: 2, Spares: 1},
		CoordOptions{StartLead: 300 * time.Millisecond, Logf: t.Logf})
	var victim string
	waitFor(t, 30*time.Second, "a segment owner to send", func() bool {
		for id := range pools {
			if sentBy(log, id) >= 3 {
				victim = id
				return true
			}
		}
		return false
	})
	seg := segOwnedBy(t, log, victim)
	pools[victim].cancel()
	stopped := time.Now()
	var at time.Time
	waitFor(t, 10*time.Second, "the abandoned segment to be driven again", func() bool {
		for id := range pools {
			if id != victim {
				if ts, ok := log.firstBy(id, seg, stopped); ok {
					at = ts
					return true
				}
			}
		}
		return false
	})
	// Tens of milliseconds; 3 s leaves room for a loaded machine and still
	// fails a handover that waited for the lease (4 to 6 s).
	if d := at.Sub(stopped); d >= 3*time.Second {
		t.Errorf("abandoned segment resumed after %s, want at once (no lease wait)", d)
	}
	r := <-res
	if r.err != nil {
		t.Fatalf("Coordinate: %v", r.err)
	}
	log.checkNoDoubleOwner(t)
	if r.out.Reassignments != 1 {
		t.Errorf("reassignments = %d, want 1", r.out.Reassignments)
	}
}

// TestPartitionedWorkerSelfFences: a worker cut off from Redis stops its
// own load within its FenceAfter, before the coordinator reassigns its
// segment.
//
// The cut worker renews, fences and lets its lease lapse at half the
// defaults (quick; the others keep them) and the coordinator sweeps twice
// a second, so the run lasts 6 s instead of 11 s;
// TestE2EClusterPartitionedWorkerFences checks the defaults' 3.5 s.
func TestPartitionedWorkerSelfFences(t *testing.T) {
	gate.Long(t, 7)
	const fenceAfter = DefaultFenceAfter / 2
	srv, rdb := startRedis(t)
	px := startProxy(t, srv.Addr())
	log := newArrivalLog()
	cut := startPool(t, px.Addr(), "cut", log.runner("cut"), func(o *PoolOptions) {
		o.Capacity = 1
		quick(o)
	})
	// Cleanups run last first: heal the link before the cut pool stops, so
	// it leaves the pool at once instead of timing out against the cut.
	t.Cleanup(px.Heal)
	startPool(t, srv.Addr(), "b", log.runner("b"), nil)
	startPool(t, srv.Addr(), "spare", log.runner("spare"), nil)
	waitRunners(t, rdb, 3)
	res := coordinateAsync(t, rdb, Run{Spec: []byte(`{"rate":20}`), Duration: 6 * time.Second, Workers: 2, Spares: 1},
		CoordOptions{StartLead: 300 * time.Millisecond, Logf: t.Logf, SweepInterval: quickSweep})
	waitFor(t, 30*time.Second, "all three to join", func() bool { return len(cut.p.Runs()) == 1 })
	// "cut" may have become the spare; then there is nothing to fence, so
	// wait until we know it owns a segment.
	waitFor(t, 30*time.Second, "the proxied worker to send", func() bool { return sentBy(log, "cut") >= 2 || len(log.segOf("spare")) > 0 && sentBy(log, "b") > 5 })
	if sentBy(log, "cut") < 2 {
		t.Skip("the proxied runner was ranked as the spare; nothing to fence")
	}
	seg := segOwnedBy(t, log, "cut")
	px.Cut()
	cutAt := time.Now()
	waitFor(t, 10*time.Second, "the cut worker to stop its load", func() bool {
		log.mu.Lock()
		defer log.mu.Unlock()
		return !log.stops["cut"].IsZero()
	})
	log.mu.Lock()
	fencedAfter := log.stops["cut"].Sub(cutAt)
	log.mu.Unlock()
	// fenceAfter after its last renewal, which was before the cut; 1 s more
	// for the fence timer and the load's goroutines on a loaded machine. A
	// worker without the fence runs on to the run's end.
	if fencedAfter > fenceAfter+time.Second {
		t.Errorf("cut worker stopped its load %s after the cut, want ≤ %s (%s allowed)", fencedAfter, fenceAfter, fenceAfter+time.Second)
	}
	select {
	case lv := <-cut.leaves:
		if !errors.Is(lv.err, ErrSelfFenced) {
			t.Errorf("cut worker left with %v, want ErrSelfFenced", lv.err)
		}
	case <-time.After(15 * time.Second): // after fencing it tries to flush and abandon, each with a bounded timeout against a cut connection; the bound that matters (load stopped ≤ 3.5 s) is checked above
		t.Error("cut worker did not leave the run")
	}
	r := <-res
	if r.err != nil {
		t.Fatalf("Coordinate: %v", r.err)
	}
	log.checkNoDoubleOwner(t)
	if ts, ok := log.firstBy("spare", seg, cutAt); !ok {
		t.Error("the fenced segment was never taken over")
	} else {
		log.mu.Lock()
		stop := log.stops["cut"]
		log.mu.Unlock()
		if !ts.After(stop) {
			t.Errorf("spare drove segment %d at %s, before the fenced owner stopped at %s", seg, ts, stop)
		}
		t.Logf("fenced after %s; spare took over %s after the cut", fencedAfter, ts.Sub(cutAt))
	}
}

// TestLossPolicyAbort: with on_worker_loss abort an abandoning worker
// fails the run. The loss comes a fraction of a second into the run; the
// run lasts 6 s so that it still falls within it on a loaded machine.
func TestLossPolicyAbort(t *testing.T) {
	gate.Short(t)
	lossPolicy(t, LossAbort)
}

// TestLossPolicyContinue: with on_worker_loss continue the abandoning
// worker's segment stays unowned and the run is degraded. The run lasts 6 s
// as in [TestLossPolicyAbort].
func TestLossPolicyContinue(t *testing.T) {
	gate.Long(t, 7)
	lossPolicy(t, LossContinue)
}

func lossPolicy(t *testing.T, policy LossPolicy) {
	srv, rdb := startRedis(t)
	log := newArrivalLog()
	pools := map[string]*testPool{}
	for _, id := range []string{"a", "b"} {
		pools[id] = startPool(t, srv.Addr(), id, log.runner(id), nil)
	}
	waitRunners(t, rdb, 2)
	res := coordinateAsync(t, rdb, Run{Spec: []byte(`{"rate":20}`), Duration: 6 * time.Second, Workers: 2, OnWorkerLoss: policy},
		CoordOptions{StartLead: 200 * time.Millisecond, Logf: t.Logf})
	waitFor(t, 30*time.Second, "b to send", func() bool { return sentBy(log, "b") >= 2 })
	pools["b"].cancel()
	r := <-res
	switch policy {
	case LossAbort:
		if r.err == nil || !strings.Contains(r.err.Error(), "on_worker_loss is abort") {
			t.Fatalf("Coordinate error = %v, want the abort policy named", r.err)
		}
		select {
		case lv := <-pools["a"].leaves:
			if !errors.Is(lv.err, ErrAborted) {
				t.Errorf("a left with %v, want ErrAborted", lv.err)
			}
		case <-time.After(5 * time.Second):
			t.Error("a did not leave the aborted run")
		}
	case LossContinue:
		if r.err != nil {
			t.Fatalf("Coordinate: %v", r.err)
		}
		if !r.out.Degraded || r.out.Reassignments != 0 {
			t.Errorf("degraded=%v reassignments=%d, want true and 0", r.out.Degraded, r.out.Reassignments)
		}
		st, _ := Status(context.Background(), rdb)
		for _, s := range st.Runs[0].Segments {
			if s.Owner == "b" {
				t.Errorf("segment %d still owned by the lost worker b", s.Index)
			}
		}
	}
	log.checkNoDoubleOwner(t)
}

// TestReassignWithoutSpare: with no spare the lost segment goes to the live
// worker with headroom; once everyone is at MaxSegments the next loss
// leaves a segment unowned and the run degraded. Both losses are abandons,
// handed on at once, a fraction of a second into the run; the run lasts 6 s
// so that they still fall within it on a loaded machine.
func TestReassignWithoutSpare(t *testing.T) {
	gate.Long(t, 8)
	srv, rdb := startRedis(t)
	log := newArrivalLog()
	pools := map[string]*testPool{}
	for _, id := range []string{"a", "b", "c"} {
		pools[id] = startPool(t, srv.Addr(), id, log.runner(id), nil)
	}
	waitRunners(t, rdb, 3)
	res := coordinateAsync(t, rdb, Run{Spec: []byte(`{"rate":30}`), Duration: 6 * time.Second, Workers: 3, MaxSegments: 2},
		CoordOptions{StartLead: 200 * time.Millisecond, Logf: t.Logf, HeadroomCPU: 1e6})
	waitFor(t, 30*time.Second, "everyone to send", func() bool {
		return sentBy(log, "a") > 1 && sentBy(log, "b") > 1 && sentBy(log, "c") > 1
	})
	pools["a"].cancel()
	waitFor(t, 10*time.Second, "a's segment to move", func() bool { return len(log.segOf("b"))+len(log.segOf("c")) == 3 })
	// Whoever took it now holds 2 = MaxSegments; losing the other leaves
	// one segment without an owner.
	other := "b"
	if len(log.segOf("b")) == 2 {
		other = "c"
	}
	pools[other].cancel()
	r := <-res
	if r.err != nil {
		t.Fatalf("Coordinate: %v", r.err)
	}
	if r.out.Reassignments != 1 || !r.out.Degraded {
		t.Errorf("reassignments=%d degraded=%v, want 1 and true", r.out.Reassignments, r.out.Degraded)
	}
	log.checkNoDoubleOwner(t)
}
