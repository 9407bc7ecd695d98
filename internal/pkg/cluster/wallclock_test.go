package cluster

import (
	"sync/atomic"
	"testing"
	"time"
)

// offWall is a host's wall clock that is off by off and, if stepAfter is
// set, steps by step once it has been read stepAfter times. Its
// monotonic clock is the real one: that is what a wrong or stepped wall
// clock does to a host.
type offWall struct {
	off       atomic.Int64
	reads     atomic.Int64
	stepAfter int64
	step      time.Duration
}

func newOffWall(off time.Duration, stepAfter int64, step time.Duration) *offWall {
	w := &offWall{stepAfter: stepAfter, step: step}
	w.off.Store(int64(off))
	return w
}

func (w *offWall) now() time.Time {
	if n := w.reads.Add(1); w.stepAfter > 0 && n == w.stepAfter+1 {
		w.off.Add(int64(w.step))
	}
	return time.Now().Add(time.Duration(w.off.Load()))
}

// TestWorkerWallClockOffsetMovesNothing: three workers whose wall clocks
// are 5 s ahead, 5 s behind, and 5 s ahead until just after they measured
// Redis's clock for the start (then 5 s behind: a 10 s step back between
// the measurement and the start), and the first steps again mid-run. They
// start within a few milliseconds of one another, no share is driven
// twice or moves, the plan is sent exactly and the run ends on time; the
// offsets they report are their wall clocks' (so the clocks were in use).
func TestWorkerWallClockOffsetMovesNothing(t *testing.T) {
	gate.Long(t, 8)
	_, rdb := startRedis(t)
	log := newArrivalLog()
	// The stepping clock is read once per TIME sample: 5 at the join and
	// 5 as the run prepares, then the step, before the start is converted.
	walls := map[string]*offWall{
		"ahead":   newOffWall(5*time.Second, 0, 0),
		"behind":  newOffWall(-5*time.Second, 0, 0),
		"stepper": newOffWall(5*time.Second, 2*clockSamples, -10*time.Second),
	}
	for id, w := range walls {
		startPool(t, rdb.Options().Addr, id, log.runner(id), func(o *PoolOptions) { o.WallClock = w.now })
	}
	waitRunners(t, rdb, 3)
	const rate, dur, lead = 30, 5 * time.Second, 500 * time.Millisecond
	began := time.Now()
	res := coordinateAsync(t, rdb, Run{Spec: []byte(`{"rate":30}`), Duration: dur, Workers: 3},
		CoordOptions{StartLead: lead, Logf: t.Logf, SweepInterval: quickSweep})
	waitFor(t, 30*time.Second, "the workers to send", func() bool { return log.count() >= 30 })
	walls["ahead"].off.Add(int64(-10 * time.Second)) // a step mid-run
	r := <-res
	took := time.Since(began)
	if r.err != nil {
		t.Fatalf("Coordinate: %v", r.err)
	}
	log.checkNoDoubleOwner(t)
	if got, want := log.count(), int(rate*dur/time.Second); got != want {
		t.Errorf("target got %d arrivals, want exactly the plan's %d", got, want)
	}
	if r.out.Reassignments != 0 {
		t.Errorf("reassignments = %d with wall clocks off by 5 s and stepping, want 0", r.out.Reassignments)
	}
	// The join, the barrier, the lead and the plan take about 6 s; a run
	// held by a wall clock 5 s behind would take 5 s more.
	if took > dur+lead+4*time.Second {
		t.Errorf("the run took %s, want about %s (the plan and its lead): a wall clock held it", took, dur+lead)
	}
	var first, last time.Time
	log.mu.Lock()
	for id, as := range log.starts {
		if len(as) == 0 {
			continue
		}
		at := as[0].StartAt
		t.Logf("%s converted the start to %s", id, at.Format("15:04:05.000000"))
		if first.IsZero() || at.Before(first) {
			first = at
		}
		if at.After(last) {
			last = at
		}
	}
	n := len(log.starts)
	log.mu.Unlock()
	if n != 3 {
		t.Fatalf("%d workers started, want 3", n)
	}
	// In one process the three monotonic clocks are one: the skew is the
	// error of the clock measurements, a millisecond or so.
	if skew := last.Sub(first); skew > 50*time.Millisecond {
		t.Errorf("start skew %s between workers whose wall clocks are 5 s apart, want under 50 ms", skew)
	} else {
		t.Logf("start skew %s", skew)
	}
	want := map[string]time.Duration{"ahead": -5 * time.Second, "behind": 5 * time.Second, "stepper": -5 * time.Second}
	for _, w := range r.out.Workers {
		if w.Lost {
			t.Errorf("worker %s lost (%s) with its wall clock off", w.ID, w.Reason)
		}
		if d := w.ClockOffset - want[w.ID]; d < -time.Second || d > time.Second {
			t.Errorf("worker %s reports clock offset %s, want about %s: its wall clock was not the one it read", w.ID, w.ClockOffset, want[w.ID])
		}
	}
}
