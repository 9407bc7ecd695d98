package load

import (
	"context"
	"sync/atomic"
	"time"
)

// stopping is a run's graceful stop, as two contexts:
//
//  1. stopCtx, "no new work": once it is done, no new iteration or arrival
//     starts. It is derived from the run's ctx, so a cancel of ctx takes
//     this step at once, and the engine cancels it itself at the plan's
//     end, the Deadline, Total or a stop of the run. The workers check its
//     Done channel (stop, fetched once at begin) between requests: a
//     receive on a channel they already hold, so the request path pays no
//     call for it, and return.
//  2. reqCtx, the context of every request: once it is cancelled,
//     requests still in flight end. The engine cancels it once the grace
//     period after the first step is over, MaxInterruptGrace after ctx is
//     done (whichever is first), and never later than Options.Deadline.
//     It carries ctx's values but not its cancel, so that an interrupt
//     leaves the requests in flight up to MaxInterruptGrace to end; and
//     cancelling it takes the first step too, if it has not been taken.
type stopping struct {
	stopCtx context.Context
	stopNew context.CancelFunc
	// stop is stopCtx.Done(), held so that the workers' check is a
	// receive on a field, as it was when it was a channel of its own.
	stop   <-chan struct{}
	stopAt atomic.Int64 // unix nanos of the first step; see stoppedAt

	reqCtx    context.Context
	cancelReq context.CancelFunc
	// cancelled is set just before reqCtx is cancelled: a request that
	// would start after it is dropped (canceled_before_send) rather than
	// handed to the driver to fail at once.
	cancelled atomic.Bool
}

// begin readies both steps for a run under ctx; the returned function
// releases both contexts' resources.
func (s *stopping) begin(ctx context.Context) context.CancelFunc {
	s.reqCtx, s.cancelReq = context.WithCancel(context.WithoutCancel(ctx))
	s.stopCtx, s.stopNew = context.WithCancel(ctx)
	s.stop = s.stopCtx.Done()
	return func() {
		s.stopNew()
		s.cancelReq()
	}
}

// closeStop takes the first step, and records its instant if none is
// recorded yet.
func (s *stopping) closeStop() {
	s.stopAt.CompareAndSwap(0, time.Now().UnixNano())
	s.stopNew()
}

// stoppedAt returns when the first step was taken; call it only after.
// When a cancel of the run's ctx took it, no one recorded the instant as
// stopCtx ended, and the first caller records now: the first step's
// instant as its first observer saw it, as a worker waking at its timer
// sees it (sleepUntil).
func (s *stopping) stoppedAt() time.Time {
	s.stopAt.CompareAndSwap(0, time.Now().UnixNano())
	return time.Unix(0, s.stopAt.Load())
}

// cancelRequests takes the second step (after the first).
func (s *stopping) cancelRequests() {
	s.closeStop()
	s.cancelled.Store(true)
	s.cancelReq()
}

// awaitEnd waits for the run to end: every worker returned (Total, or a
// plan out of arrivals, which on a timeline still lasts to its planned
// end), the plan's end, the Deadline or ctx, which marks res interrupted.
// It reports whether the plan reached its end.
func (e *engine) awaitEnd(ctx context.Context, res *Result, allDone <-chan struct{}, planEnd time.Duration, hasEnd bool) (reached bool) {
	var endC, deadC <-chan time.Time
	if hasEnd {
		t := time.NewTimer(time.Until(e.base.Add(planEnd)))
		defer t.Stop()
		endC = t.C
	}
	if e.o.Deadline > 0 {
		t := time.NewTimer(time.Until(e.base.Add(e.o.Deadline)))
		defer t.Stop()
		deadC = t.C
	}
	for {
		select {
		case <-allDone:
			// A timeline that ran out of arrivals by time still lasts
			// until its planned end, so the achieved rate covers the
			// whole plan.
			if interruptedBy(ctx, res) || !hasEnd || !e.x.timeline() || e.sched.totalHit {
				return false
			}
			allDone = nil
		case <-ctx.Done():
			res.Interrupted = true
			return false
		case <-endC:
			return true
		case <-deadC:
			return false
		}
	}
}

// stopRun stops the run in its two steps. Unless the plan reached its end
// on a timeline, which stops by itself (its schedule has no arrivals past
// the end, and arrivals that fell due before it are still sent, late,
// during the grace period), new work stops at once. Workers still running
// get the grace period (drain), then their requests are cancelled and
// they are waited for, bounded. Then the executor settles its books as of
// the stop. It returns the instant the run ended.
func (e *engine) stopRun(ctx context.Context, res *Result, allDone <-chan struct{}, reached bool) time.Time {
	stopAt := time.Now()
	drains := reached && e.x.timeline()
	if !drains {
		e.closeStop()
	}
	select {
	case <-allDone: // nothing in flight
		if drains {
			interruptedBy(ctx, res) // they may have returned for ctx
		}
	default:
		e.drain(ctx, res, allDone)
		e.cancelRequests()
		e.awaitCancelled(allDone)
	}
	e.closeStop()
	end := time.Now()
	if drains {
		stopAt = end
	}
	e.x.stopped(stopAt)
	return end
}

// drain waits, once arrivals have stopped (or, for an open plan that
// reached its end, while the arrivals due before the end are still sent),
// for the requests in flight to end: for at most the grace period, at most
// MaxInterruptGrace once ctx is done (a cancel during the drain cuts it
// short: nothing more is sent and res is marked interrupted), and never
// past Options.Deadline.
func (e *engine) drain(ctx context.Context, res *Result, allDone <-chan struct{}) {
	o := e.o
	g := o.grace()
	if res.Interrupted {
		g = min(g, MaxInterruptGrace)
	}
	end := time.Now().Add(g)
	if o.Deadline > 0 {
		end = minTime(end, e.base.Add(o.Deadline))
	}
	if !time.Now().Before(end) {
		return
	}
	t := time.NewTimer(time.Until(end))
	defer t.Stop()
	done := ctx.Done()
	for {
		select {
		case <-allDone:
			interruptedBy(ctx, res)
			return
		case <-t.C:
			return
		case <-done:
			done = nil
			res.Interrupted = true
			e.closeStop()
			if cut := time.Now().Add(MaxInterruptGrace); cut.Before(end) {
				end = cut
				t.Reset(time.Until(end))
			}
		}
	}
}

// awaitCancelled waits, after the requests' context is cancelled, for the
// workers to return: at most MaxCancelWait, so that a requester that
// ignores its context cannot hold the run (its worker is left to end when
// the call returns, and what it measures is not counted).
func (e *engine) awaitCancelled(allDone <-chan struct{}) {
	t := time.NewTimer(MaxCancelWait)
	defer t.Stop()
	select {
	case <-allDone:
	case <-t.C:
	}
}

// interruptedBy marks res interrupted if ctx is done; it is called where
// the workers are found all returned. stopCtx is derived from ctx, so a
// cancel of ctx may have made them return before the engine saw ctx done,
// and the run it cut short must read as interrupted all the same.
func interruptedBy(ctx context.Context, res *Result) bool {
	if ctx.Err() == nil {
		return false
	}
	res.Interrupted = true
	return true
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
