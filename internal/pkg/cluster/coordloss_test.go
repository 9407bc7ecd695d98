package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// lineLog collects Logf lines.
type lineLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *lineLog) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

func (l *lineLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// TestCoordinatorReachableOnItsLease: the coordinator's reckoning of
// whether Redis answers, on fake time (the clock is its own; the calls it
// counts are fed in by hand). Silence up to a seventh of the lease plus
// one bounded round of calls (or half the lease, if shorter) is normal;
// past it, it says so once, and again when a call gets through; past the
// whole lease it fails with ErrRedisUnreachable, not a moment before. The
// real-time tests below and TestE2EClusterCoordinatorPartitioned show the
// same with Redis stopped or cut off.
func TestCoordinatorReachableOnItsLease(t *testing.T) {
	gate.Short(t)
	for _, tc := range []struct {
		lease, quiet time.Duration
	}{
		{DefaultCoordLease, DefaultCoordLease/7 + stepTimeout}, // 1 s + 2 s
		{1400 * time.Millisecond, 700 * time.Millisecond},      // half the lease is shorter
	} {
		synctest.Test(t, func(t *testing.T) {
			lines := &lineLog{}
			c := &coordinator{o: CoordOptions{Lease: tc.lease, Logf: lines.logf}, run: "R", base: time.Now()}
			check := func(at string, wantErr bool, wantLines int) {
				t.Helper()
				err := c.reachable()
				if (err != nil) != wantErr || (err != nil && !errors.Is(err, ErrRedisUnreachable)) {
					t.Fatalf("lease %s, %s: reachable() = %v, want error %v", tc.lease, at, err, wantErr)
				}
				if n := len(lines.lines); n != wantLines {
					t.Fatalf("lease %s, %s: %d log lines, want %d:\n%s", tc.lease, at, n, wantLines, lines)
				}
			}
			time.Sleep(time.Second)
			c.reached(time.Since(c.base)) // a call sent now reached Redis
			time.Sleep(tc.quiet)
			check("silent for the quiet span", false, 0)
			time.Sleep(time.Millisecond)
			check("silent a moment longer", false, 1)
			check("asked again", false, 1) // said once
			if !strings.Contains(lines.String(), "cannot reach Redis") {
				t.Errorf("lease %s: the first sign of trouble is not logged as such:\n%s", tc.lease, lines)
			}
			c.reached(time.Since(c.base) - time.Hour) // an answer to a call sent long ago moves nothing
			check("after a stale answer", false, 1)
			c.reached(time.Since(c.base))
			check("after an answer", false, 2)
			// The line gives the outage's length, from the last call
			// that got through to this one, not the time since this one.
			if want := "reached Redis again after " + (tc.quiet + time.Millisecond).Round(100*time.Millisecond).String(); !strings.Contains(lines.String(), want) {
				t.Errorf("lease %s: recovery line does not say %q:\n%s", tc.lease, want, lines)
			}
			time.Sleep(tc.lease)
			check("silent for the whole lease", false, 3)
			time.Sleep(time.Millisecond)
			check("silent past the lease", true, 3)
		})
	}
}

// TestCoordinatorLosesRedis: a coordinator that cannot reach Redis ends
// the run within its lease plus one bounded round of calls and the abort,
// with ErrRedisUnreachable, and says so in its log before that; it never
// waits for Redis to come back. Its workers leave by themselves once the
// coordinator lease is gone, and the run shows as ABORTED.
//
// Each fault is a test of its own, so the gate runs them side by side.
func TestCoordinatorLosesRedis(t *testing.T) {
	gate.Long(t, 8)
	coordinatorLosesRedis(t, "redis stopped")
}

// TestCoordinatorPartitionedFromRedis is [TestCoordinatorLosesRedis] with
// the coordinator cut off from a Redis its workers still reach.
func TestCoordinatorPartitionedFromRedis(t *testing.T) {
	gate.Long(t, 8)
	coordinatorLosesRedis(t, "coordinator partitioned")
}

func coordinatorLosesRedis(t *testing.T, fault string) {
	// The lease is short, so the fault is seen soon, but not shorter than
	// the stalls of a loaded two-core machine: at 1.4 s both tests once
	// lost their coordinator lease before the fault, their workers having
	// started 0.7 to 0.9 s late (the whole suite beside them).
	const lease = 2800 * time.Millisecond
	// lease, then one bounded round of calls, then the abort's 3 s, with
	// 5 s for a loaded machine: a coordinator that waited for Redis to
	// come back would run to the end of its minute.
	const bound = lease + stepTimeout + 3*time.Second + 5*time.Second
	srv, rdb := startRedis(t)
	px := startProxy(t, srv.Addr())
	log := newArrivalLog()
	pools := map[string]*testPool{}
	for _, id := range []string{"a", "b"} {
		pools[id] = startPool(t, srv.Addr(), id, log.runner(id), func(o *PoolOptions) { o.CoordLostAfter = 500 * time.Millisecond })
	}
	waitRunners(t, rdb, 2)
	lines := &lineLog{}
	res := coordinateAsync(t, newClient(t, px.Addr()), Run{Spec: []byte(`{"rate":20}`), Duration: time.Minute, Workers: 2},
		CoordOptions{StartLead: 200 * time.Millisecond, Logf: lines.logf, Lease: lease})
	waitFor(t, 30*time.Second, "both to send", func() bool { return sentBy(log, "a") > 2 && sentBy(log, "b") > 2 })
	faultAt := time.Now()
	if fault == "redis stopped" {
		srv.Stop()
	} else {
		px.Cut()
	}
	var r coordResult
	select {
	case r = <-res:
	case <-time.After(bound + 5*time.Second):
		t.Fatalf("Coordinate still running %s after the fault, want it to end within %s:\n%s", time.Since(faultAt), bound, lines)
	}
	took := time.Since(faultAt)
	if !errors.Is(r.err, ErrRedisUnreachable) {
		t.Fatalf("Coordinate error %v, want ErrRedisUnreachable:\n%s", r.err, lines)
	}
	if took > bound {
		t.Errorf("Coordinate ended %s after the fault, want within %s", took, bound)
	}
	if !strings.Contains(lines.String(), "redis unreachable") {
		t.Errorf("log does not say Redis is unreachable before failing:\n%s", lines)
	}
	t.Logf("%s: the coordinator failed after %s: %v", fault, took.Round(time.Millisecond), r.err)
	if fault == "redis stopped" {
		return
	}
	// The workers still reach Redis: they see the coordinator lease
	// gone and leave, and the run is marked ABORTED.
	for id, p := range pools {
		select {
		case lv := <-p.leaves:
			// The first to notice marks the run ABORTED; the other
			// may see that first.
			if !errors.Is(lv.err, ErrCoordinatorLost) && !strings.Contains(fmt.Sprint(lv.err), "coordinator was lost") {
				t.Errorf("%s left with %v, want ErrCoordinatorLost or the run aborted because of it", id, lv.err)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("%s did not leave the run after its coordinator was cut off", id)
		}
	}
	px.Heal()
	st, err := Status(context.Background(), rdb)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Runs) != 1 || st.Runs[0].State != StateAborted || !strings.Contains(st.Runs[0].AbortReason, "coordinator was lost") {
		t.Errorf("runs after the coordinator was lost: %+v, want one ABORTED run naming the lost coordinator", st.Runs)
	}
	if ttl := rdb.TTL(context.Background(), runKeys(st.Runs[0].ID).state()).Val(); ttl > time.Hour {
		t.Errorf("state TTL %s after the run was abandoned, want at most an hour", ttl)
	}
}

// TestFrozenCoordinatorBlamesItself: a coordinator whose own process
// froze (its last step began 10 s ago and every call of it failed on its
// expired deadline) while Redis was fine is not failed as "redis
// unreachable": it asks Redis once more, finds it answering, and says
// that it was the one that stalled.
func TestFrozenCoordinatorBlamesItself(t *testing.T) {
	gate.Short(t)
	_, rdb := startRedis(t)
	lines := &lineLog{}
	c := &coordinator{rdb: rdb, o: CoordOptions{Lease: DefaultCoordLease, Logf: lines.logf}, run: "R", base: time.Now().Add(-10 * time.Second)}
	deadline := error(context.DeadlineExceeded)
	c.lastErr.Store(&deadline)
	if err := c.judgeReach(context.Background(), time.Now().Add(-10*time.Second)); err != nil {
		t.Fatalf("a coordinator that froze 10 s while Redis answered: %v", err)
	}
	if !strings.Contains(lines.String(), "this coordinator did not run for") {
		t.Errorf("the log does not say the coordinator itself stalled:\n%s", lines)
	}
}
