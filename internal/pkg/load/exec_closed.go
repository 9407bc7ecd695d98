package load

import (
	"sync"
	"sync/atomic"
	"time"
)

// closedExecutor is the closed model: e.n virtual users, each a worker
// that sends its next request when its last one ends (after its think
// time), until Duration, Total or the stop. User i is active while i is
// below active; with a fixed number of users they all are, and the ramping
// executor moves active over the run.
type closedExecutor struct {
	e *engine
	// issued counts the requests the users took, against Options.Total.
	issued atomic.Uint64
	// active is the number of users allowed to send now.
	active atomic.Int64
	// vuChanged is closed (and replaced) whenever active changes, waking
	// the users that wait to become active.
	vuMu      sync.Mutex
	vuChanged chan struct{}
}

// maxWorkers returns the most users the plan ever asks for, this host's
// share of them under ScaleVUs.
func (x *closedExecutor) maxWorkers() int {
	o := x.e.o
	n := o.maxVUs()
	if o.ScaleVUs != nil {
		n = o.ScaleVUs(n)
	}
	return n
}

func (x *closedExecutor) start(*sync.WaitGroup) { x.startUsers() }

// startUsers starts one worker per user, all at once.
func (x *closedExecutor) startUsers() {
	e := x.e
	x.active.Store(int64(x.vuCount()))
	x.vuChanged = make(chan struct{})
	for i := range e.n {
		w := e.newWorker(int64(i))
		e.started.Add(1)
		e.workerWG.Go(func() {
			defer w.release()
			x.worker(i, w)
		})
	}
}

func (x *closedExecutor) planEnd() (time.Duration, bool) {
	return x.e.o.Duration, x.e.o.Duration > 0
}

func (x *closedExecutor) timeline() bool                      { return false }
func (x *closedExecutor) stopped(time.Time)                   {}
func (x *closedExecutor) finish(*Result, time.Duration, bool) {}

// vuCount returns this host's number of active users now.
func (x *closedExecutor) vuCount() int {
	e := x.e
	v := e.o.vuTarget(e.planNow())
	if e.o.ScaleVUs != nil {
		v = e.o.ScaleVUs(v)
	}
	return min(max(v, 0), e.n)
}

// worker is user i: it waits until it is active, then sends requests one
// after another, until Total is issued or the run stops.
func (x *closedExecutor) worker(i int, w *worker) {
	e := x.e
	o := e.o
	for {
		if int64(i) >= x.active.Load() && !x.awaitActive(i) {
			return // (the check is inline: an active user pays no call)
		}
		select {
		case <-e.stop:
			return
		default:
		}
		if o.Lease != nil && !o.Lease() {
			// Not ours to send now: wait (off the request path) until the
			// lease is renewed or the run stops, which its owner does
			// soon after a lease runs out.
			if !e.pause(w, leasePoll) {
				return
			}
			continue
		}
		if o.Total > 0 && x.issued.Add(1) > o.Total {
			return
		}
		e.do(w, time.Now(), onTime)
		if think := o.thinkTime(); think > 0 && !e.pause(w, think) {
			return
		}
	}
}

// awaitActive waits until user i is active; it returns false when the run
// stops first.
func (x *closedExecutor) awaitActive(i int) bool {
	for int64(i) >= x.active.Load() {
		x.vuMu.Lock()
		ch := x.vuChanged
		x.vuMu.Unlock()
		if int64(i) < x.active.Load() {
			break
		}
		select {
		case <-ch:
		case <-x.e.stop:
			return false
		}
	}
	return true
}

// setActive sets the number of active users to v, waking the users that
// wait, if it changed.
func (x *closedExecutor) setActive(v int64) {
	if v == x.active.Load() {
		return
	}
	x.active.Store(v)
	x.vuMu.Lock()
	close(x.vuChanged)
	x.vuChanged = make(chan struct{})
	x.vuMu.Unlock()
}

// pause waits d on the worker's timer; it returns false when the run stops
// first.
func (e *engine) pause(w *worker, d time.Duration) bool {
	w.timer.Reset(d)
	select {
	case <-w.timer.C:
		return true
	case <-e.stop:
		w.timer.Stop()
		return false
	}
}
