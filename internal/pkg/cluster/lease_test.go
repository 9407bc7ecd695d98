package cluster

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// TestLeaseOnTheMonotonicClock: a member may send only until FenceAfter
// after its last renewal was SENT; past that, leaseValid is false at once,
// before the fence timer's goroutine has even run, and then the fence
// cancels the load.
func TestLeaseOnTheMonotonicClock(t *testing.T) {
	gate.Short(t)
	synctest.Test(t, func(t *testing.T) {
		p := &Pool{o: PoolOptions{ID: "w1", Heartbeat: time.Second, FenceAfter: 3500 * time.Millisecond, LeaseTTL: 5 * time.Second}}
		m := newMember(p, "L1", nil, time.Minute, 3600)
		m.loadCtx, m.cancelLoad = context.WithCancelCause(t.Context())
		m.armFence()
		defer m.fenceT.Stop()
		if !m.leaseValid() {
			t.Fatal("lease not valid right after joining")
		}
		// Joining counts as a renewal sent one heartbeat earlier: 2.5 s.
		time.Sleep(2400 * time.Millisecond)
		if !m.leaseValid() {
			t.Fatal("lease invalid 2.4 s after joining, want valid until 2.5 s")
		}
		// A renewal sent at 1 s that came back only now extends the lease
		// to 1 s + 3.5 s, not to now + 3.5 s.
		m.renewed(time.Second)
		time.Sleep(2 * time.Second) // 4.4 s
		if !m.leaseValid() {
			t.Fatal("lease invalid at 4.4 s, want valid until 4.5 s")
		}
		time.Sleep(200 * time.Millisecond) // 4.6 s
		if m.leaseValid() {
			t.Fatal("lease still valid at 4.6 s: a renewal sent at 1 s must not let it send past 4.5 s")
		}
		synctest.Wait()
		select {
		case <-m.fenced:
		default:
			t.Fatal("not fenced after the lease ran out")
		}
		if !errors.Is(context.Cause(m.loadCtx), ErrSelfFenced) {
			t.Errorf("load context cause %v, want ErrSelfFenced", context.Cause(m.loadCtx))
		}
		// A renewal that arrives after the fence does not reopen the gate.
		m.renewed(5 * time.Second)
		if m.leaseValid() {
			t.Error("lease valid again after a late renewal; a fenced member must stay fenced")
		}
	})
}

// TestLeaseCheckDoesNotAllocate: leaseValid runs before every request.
func TestLeaseCheckDoesNotAllocate(t *testing.T) { //nolint:paralleltest // AllocsPerRun
	p := &Pool{o: PoolOptions{ID: "w1", Heartbeat: time.Second, FenceAfter: 3500 * time.Millisecond}}
	lease := newMember(p, "L2", nil, time.Minute, 3600).leaseValid
	if n := testing.AllocsPerRun(1000, func() { lease() }); n != 0 {
		t.Errorf("leaseValid: %v allocations per call, want 0", n)
	}
}
