package cluster

import (
	"strings"
	"testing"
	"time"
)

// TestNoWorkerLeftFailsPromptly: Redis stalls (SIGSTOP) past every
// worker's fence, so each one stops its own load and leaves once Redis
// answers again. With no worker left the run can send nothing more: the
// coordinator fails it at once, naming why each worker left, rather than
// at the end of its 30 s duration.
func TestNoWorkerLeftFailsPromptly(t *testing.T) {
	gate.Long(t, 8)
	srv, rdb := startRedis(t)
	log := newArrivalLog()
	for _, id := range []string{"a", "b"} {
		startPool(t, srv.Addr(), id, log.runner(id), quick)
	}
	waitRunners(t, rdb, 2)
	res := coordinateAsync(t, rdb, Run{Spec: []byte(`{"rate":20}`), Duration: 30 * time.Second, Workers: 2},
		CoordOptions{StartLead: 300 * time.Millisecond, Logf: t.Logf, SweepInterval: quickSweep})
	waitFor(t, 30*time.Second, "the workers to send", func() bool { return sentBy(log, "a") >= 2 && sentBy(log, "b") >= 2 })
	srv.Pause()
	var o PoolOptions
	quick(&o)
	// The stall is the fault, not a synchronisation: past the workers'
	// fence, within the coordinator's 7 s lease.
	stalled := time.Now()
	waitFor(t, 10*time.Second, "the stall to outlast the fence", func() bool { return time.Since(stalled) > o.FenceAfter+time.Second })
	srv.Resume()
	resumed := time.Now()
	select {
	case r := <-res:
		if r.err == nil || !strings.Contains(r.err.Error(), "no worker left") {
			t.Fatalf("Coordinate error = %v, want one saying no worker is left", r.err)
		}
		t.Logf("failed %s after Redis answered again: %v", time.Since(resumed), r.err)
	case <-time.After(10 * time.Second): // the run has 30 s; 10 s fails one that waits for its end
		t.Fatal("the run went on 10 s after every worker had left")
	}
}

// TestShortRedisStallKeepsEveryone: Redis stalls (SIGSTOP) for less than
// the workers' fence. They renew as soon as it answers again: no worker
// is lost, no share moves, and the run ends green.
func TestShortRedisStallKeepsEveryone(t *testing.T) {
	gate.Long(t, 8)
	srv, rdb := startRedis(t)
	log := newArrivalLog()
	for _, id := range []string{"a", "b"} {
		startPool(t, srv.Addr(), id, log.runner(id), nil)
	}
	waitRunners(t, rdb, 2)
	res := coordinateAsync(t, rdb, Run{Spec: []byte(`{"rate":20}`), Duration: 6 * time.Second, Workers: 2},
		CoordOptions{StartLead: 300 * time.Millisecond, Logf: t.Logf, SweepInterval: quickSweep})
	waitFor(t, 30*time.Second, "the workers to send", func() bool { return sentBy(log, "a") >= 2 && sentBy(log, "b") >= 2 })
	srv.Pause()
	// The stall is the fault, not a synchronisation: 1 s, well inside the
	// 3.5 s fence even if it began just before a renewal was due.
	stalled := time.Now()
	waitFor(t, 10*time.Second, "the stall", func() bool { return time.Since(stalled) > time.Second })
	srv.Resume()
	r := <-res
	if r.err != nil {
		t.Fatalf("Coordinate after a 1 s Redis stall: %v", r.err)
	}
	for _, w := range r.out.Workers {
		if w.Lost {
			t.Errorf("worker %s lost (%s) after a Redis stall shorter than its fence", w.ID, w.Reason)
		}
	}
	if r.out.Reassignments != 0 {
		t.Errorf("reassignments = %d after a short Redis stall, want 0", r.out.Reassignments)
	}
	log.checkNoDoubleOwner(t)
}
