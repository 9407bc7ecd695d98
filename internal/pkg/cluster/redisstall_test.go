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
