package load

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// TestRampingUsersFollowActive checks the ramping executor's seam without
// its controller: a user above the active count sends nothing, starts once
// the count rises to include it, finishes its request and waits again when
// the count falls, and a waiting user returns when the run stops.
func TestRampingUsersFollowActive(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		req := &countingRequester{sleep: time.Second}
		e := newEngine(&Options{Requester: req, VUStages: []VUStage{{Duration: time.Hour, Target: 4}}})
		x, ok := e.x.(*rampingExecutor)
		if !ok {
			t.Fatalf("executor for VUStages = %T, want *rampingExecutor", e.x)
		}
		e.base = time.Now()
		defer e.begin(t.Context())()
		x.startUsers() // at plan time 0 the ramp asks for no user
		synctest.Wait()
		if n := req.n.Load(); n != 0 || e.started.Load() != 4 {
			t.Fatalf("before any user is active: %d requests, %d users started; want 0, 4", n, e.started.Load())
		}
		x.setActive(3)
		synctest.Wait()
		if n := req.n.Load(); n != 3 {
			t.Fatalf("3 users active: %d requests in flight, want 3", n)
		}
		x.setActive(1)
		time.Sleep(1500 * time.Millisecond) // fake time: the first requests end at 1 s
		synctest.Wait()
		if n := req.n.Load(); n != 4 {
			t.Fatalf("down to 1 user: %d requests sent, want 4 (3, then user 0's second)", n)
		}
		e.cancelRequests()
		e.workerWG.Wait()
	})
}

// TestStoppingTwoSteps checks the run's two-step stop: once new work has
// stopped, a request still goes out with a live context (the grace
// period); once requests are cancelled, their context is done and a
// request that would start after is dropped unsent.
func TestStoppingTwoSteps(t *testing.T) {
	t.Parallel()
	req := &countingRequester{}
	e := newEngine(&Options{Requester: req})
	defer e.begin(t.Context())()
	w := e.newWorker(0)
	e.closeStop()
	select {
	case <-e.stop:
	default:
		t.Fatal("stop not closed after closeStop")
	}
	if err := e.reqCtx.Err(); err != nil {
		t.Fatalf("request context after the first step: %v, want live", err)
	}
	e.do(w, time.Now(), onTime)
	if n := req.n.Load(); n != 1 {
		t.Fatalf("a request in the grace period: %d sent, want 1", n)
	}
	e.cancelRequests()
	if e.reqCtx.Err() == nil {
		t.Fatal("request context live after cancelRequests")
	}
	e.do(w, time.Now(), onTime)
	if n, d := req.n.Load(), e.droppedBy[DropCanceled].Load(); n != 1 || d != 1 {
		t.Fatalf("a request after the cancel: %d sent, %d dropped as canceled; want 1, 1", n, d)
	}
}

// TestStopFollowsTheRunContext checks that the first step of the stop is a
// context derived from the run's: a cancel of the run's context stops new
// work at once (before, only the engine's own loop took the step, once it
// saw the cancel), while the requests in flight keep a live context, to
// end within the interrupt grace.
func TestStopFollowsTheRunContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	e := newEngine(&Options{Requester: noop{}})
	defer e.begin(ctx)()
	select {
	case <-e.stop:
		t.Fatal("new work stopped before the run's context was cancelled")
	default:
	}
	before := time.Now()
	cancel()
	select {
	case <-e.stop:
	default:
		t.Fatal("new work not stopped once the run's context was cancelled")
	}
	if err := e.reqCtx.Err(); err != nil {
		t.Fatalf("request context after a cancel of the run's: %v, want live until the interrupt grace is over", err)
	}
	if at := e.stoppedAt(); at.Before(before) || at.After(time.Now()) {
		t.Errorf("stoppedAt = %v, want the instant the stop was first seen, after %v", at, before)
	}
}

// TestCancelledRunIsInterrupted: where the engine finds every worker
// returned while the run's context is done, the run is interrupted. The
// stop context is derived from the run's, so a cancel may make the
// workers return before the engine sees it; which of the two it then sees
// first is the select's choice, and without interruptedBy about half of
// such runs read as complete.
func TestCancelledRunIsInterrupted(t *testing.T) {
	t.Parallel()
	e := newEngine(&Options{Requester: noop{}, Duration: time.Hour})
	e.base = time.Now()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	allDone := make(chan struct{})
	close(allDone)
	for i := range 50 {
		res := &Result{}
		if e.awaitEnd(ctx, res, allDone, time.Hour, true) || !res.Interrupted {
			t.Fatalf("try %d: the workers gone and ctx done: interrupted %v, want true", i, res.Interrupted)
		}
	}
}

// TestGrowthNotHeldAtLowRates: below holdMinRate the open pool's growth is
// never held for the generator's lateness or CPU, while above it the
// generator's lateness this second holds it. Before, a 200 req/s run on a
// busy machine held its growth (an arrival that waited for a worker then
// counted as the generator's lateness, which held growth again) and sent a
// third of its arrivals with two workers against a 50 ms target.
func TestGrowthNotHeldAtLowRates(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		rate float64
		want bool
	}{{200, false}, {holdMinRate - 1, false}, {50_000, true}} {
		e := newEngine(&Options{Requester: noop{}, Rate: tt.rate, Duration: time.Hour})
		e.genLateMax.Store(int64(50 * time.Millisecond)) // the generator was late this second
		x, ok := e.x.(*openExecutor)
		if !ok {
			t.Fatalf("rate %v: executor %T, want the open model's", tt.rate, e.x)
		}
		if got := x.held(time.Second, true); got != tt.want {
			t.Errorf("rate %v: held = %v, want %v", tt.rate, got, tt.want)
		}
	}
}
