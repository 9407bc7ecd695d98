package load

import (
	"sync"
	"time"
)

// openExecutor is the open model: arrivals at the planned rate (Rate,
// Stages) of the shared schedule, each taken by a free worker and sent at
// its intended time whatever the target's latency. The pool of workers
// starts with Concurrency (at most e.n) and grows, one worker at a time,
// up to e.n (MaxConcurrency), so a huge cap costs only what the load
// needs. It grows only when every other started worker is in a request
// (the recorder shards' in-flight counts, summed on this rare path only)
// and either the arrival a worker takes is already due (it waited for a
// worker) or the worker is about to send the latest arrival taken (no
// worker is waiting for the next one). A worker that is free but late to
// run (the generator's CPU is behind) is not in a request; and the pool
// does not grow while the thread running workers wanted a CPU for most of
// the last millisecond, nor, past a worker's first arrival, while the
// generator has been late this second (see held), so a generator that
// falls behind does not answer with more workers. No counter shared by
// every worker changes per request.
type openExecutor struct {
	e *engine
}

func (x *openExecutor) maxWorkers() int { return x.e.o.maxConcurrency() }

// start starts the starting pool: Concurrency workers, or e.n if fewer.
func (x *openExecutor) start(*sync.WaitGroup) {
	for range min(x.e.o.concurrency(), x.e.n) {
		x.spawn()
	}
}

func (x *openExecutor) planEnd() (time.Duration, bool) { return x.e.sched.End() }

func (x *openExecutor) timeline() bool { return true }

// stopped counts the arrivals that were due before at but that no worker
// picked up: they were intended and never sent.
func (x *openExecutor) stopped(at time.Time) { x.e.dropUnsent(at, DropStop) }

// finish sets the planned rate over the part of the plan this run
// covered, and the workers the pool grew to.
func (x *openExecutor) finish(res *Result, planEnd time.Duration, hasEnd bool) {
	e := x.e
	from := e.o.Offset
	to := e.o.Offset + res.Elapsed
	if hasEnd && !res.Interrupted {
		to = planEnd
	}
	if to > from {
		res.TargetRPS = e.sched.PlannedCount(from, to) / (to - from).Seconds()
	}
	res.Workers, res.MaxWorkers = int(e.started.Load()), e.n
}

// spawn starts one more worker unless there are e.n already. It is called
// before the workers' WaitGroup is waited for, or by a running worker, so
// the WaitGroup never restarts from zero.
func (x *openExecutor) spawn() {
	e := x.e
	for {
		s := e.started.Load()
		if s >= int64(e.n) {
			return
		}
		if e.started.CompareAndSwap(s, s+1) {
			w := e.newWorker(s)
			e.workerWG.Go(func() {
				defer w.release()
				x.worker(w)
			})
			return
		}
	}
}

// worker takes the schedule's next arrival, waits for its intended time
// and sends it, until the schedule is out of arrivals or the run stops.
func (x *openExecutor) worker(w *worker) {
	e := x.e
	sent := false // whether this worker has taken an arrival to send before
	for {
		e.schedMu.Lock()
		k, t, ok := e.sched.Next()
		if ok {
			e.lastTaken.Store(k)
		}
		e.schedMu.Unlock()
		if !ok {
			return
		}
		intended := e.base.Add(t)
		wait := time.Until(intended)
		// An arrival already due when a worker takes it waited for a
		// worker; if every other worker is in a request (or, the pool at
		// max concurrency, every worker exists) they were all busy: the
		// target's latency or concurrency limits the test, and the pool
		// grows if it may. Any other lateness is the generator's own: a
		// worker that could have been there was not scheduled on time.
		late := onTime
		grown := false
		if wait > 0 {
			if !e.sleepUntil(w, intended) {
				return
			}
		} else {
			select {
			case <-e.stop:
				e.drop(DropStop, 1) // due, and now never sent
				return
			default:
			}
			late, grown = x.due(t+(-wait), -wait, sent)
			if -wait > e.maxLate {
				// Too late to send: drop it and every arrival that is
				// as late, at once, so a rate the generator cannot follow
				// costs no more than one that it can.
				e.schedMu.Lock()
				n := e.sched.SkipBefore(e.planNow() - e.maxLate)
				e.schedMu.Unlock()
				e.drop(DropLate, 1+int64(n))
				continue
			}
		}
		if e.stalledPast(intended, late == queued) {
			continue
		}
		if e.o.Lease != nil && !e.o.Lease() {
			e.drop(DropLease, 1) // due, but this host does not hold the lease now
			continue
		}
		lag := time.Since(intended)
		if late == onTime && lag > LateTolerance {
			late = generatorLate
			if lag > GeneratorLateTolerance {
				e.noteGeneratorLate(lag)
			}
		}
		// Keep a worker for the next arrival: when no other worker holds a
		// later one and every other is in a request, start one more.
		if !grown && e.started.Load() < int64(e.n) && e.lastTaken.Load() == k &&
			!x.held(t+lag, sent) && x.othersBusy() {
			x.spawn()
		}
		sent = true
		e.do(w, intended, late)
	}
}

// due classifies an arrival that was already due, by overdue, when a
// worker took it at plan time now, and grows the pool if every other
// worker is in a request; see worker.
func (x *openExecutor) due(now, overdue time.Duration, sent bool) (late lateness, grown bool) {
	e := x.e
	if e.started.Load() >= int64(e.n) {
		if overdue > LateTolerance {
			late = queued // every worker exists, and none was free
		}
		return late, false
	}
	// While the generator's CPU is behind, the wait is its own, not the
	// workers' (see held); otherwise it is queued if every other worker
	// is in a request, and the pool grows by one for it.
	if x.held(now, sent) || !x.othersBusy() {
		return onTime, false
	}
	x.spawn()
	if overdue > LateTolerance {
		late = queued
	}
	return late, true
}

// held reports whether the pool must not grow now (plan time) because the
// generator's CPU is behind: the thread running workers wanted a CPU for
// most of the last millisecond (cpuBehind), or the caller has sent before
// and the generator has been late this second (an arrival left more than
// GeneratorLateTolerance late while a worker was free; see genLateMax).
// Then the workers in a request may be waiting for this CPU rather than
// for the target (their responses read late), and more workers on a CPU
// that is behind make it slower still. A worker's first arrival is held
// only by the CPU, so a pool whose requests never return keeps growing.
//
// Below holdMinRate nothing holds the pool: there the workers cost the
// CPU next to nothing, and on a CPU that is behind for other programs'
// sake (a busy CI machine) the hold fed itself: an arrival that waited for
// a worker while growth was held counted as the generator's lateness,
// which held growth for the rest of the second, so a 200 req/s run against
// a 50 ms target kept two workers and sent a third of its arrivals.
func (x *openExecutor) held(now time.Duration, sent bool) bool {
	e := x.e
	if e.sched.PlannedRate(now) < holdMinRate {
		return false
	}
	return sent && e.genLateMax.Load() > 0 || e.cpuBehind(now)
}

// holdMinRate is the planned rate (req/s) below which the pool's growth
// is never held for the generator's CPU (see held): at some 20 µs of CPU
// an arrival, 2,000 req/s is 4% of a core, so more workers cannot be what
// starves the generator there.
const holdMinRate = 2000

// othersBusy reports whether every started worker but the caller is in a
// request: it sums the recorder shards' in-flight counts, which the
// callers do only below max concurrency, on the rare paths where the pool
// may be short and the CPU is not behind.
func (x *openExecutor) othersBusy() bool {
	e := x.e
	s := e.started.Load()
	var busy int64
	for _, rec := range e.recs {
		busy += rec.inFlight.Load()
	}
	return busy >= s-1
}

// preciseWindow is the last stretch before an arrival that a worker waits
// on a timerfd (wakeTimer) rather than on its Go timer (a variable only so
// that tests on a fake clock can turn it off). When every P is idle, the
// Go runtime waits for its next timer in the netpoller, whose timeout is
// in whole milliseconds: a timer due in 0.3 ms fires 1 ms later, and since
// latency is measured from the intended time, that delay showed up in every
// percentile at low rates (p50 0.6 ms at 5,000 req/s against 0.2 ms at
// 20,000, when a busy P checks its timers more often). A timerfd wakes the
// netpoller itself when it fires.
var preciseWindow = time.Millisecond

// preciseMaxRate is the planned rate above which workers wait on their Go
// timers only: at such rates the Ps are busy and check their timers often
// enough, and the timerfd's two system calls per arrival would cost more
// than they gain.
const preciseMaxRate = 10_000

// sleepUntil waits until intended. Up to preciseMaxRate, it waits on the
// worker's Go timer until e.precise (preciseWindow) before it, so that
// e.stop interrupts a long wait, then waits the rest on the worker's
// timerfd, which wakes within tens of microseconds; above, it waits on the
// Go timer only. It returns false when the run stopped first; an arrival
// that fell due before the stop is then counted as dropped.
func (e *engine) sleepUntil(w *worker, intended time.Time) bool {
	precise := e.precise > 0 && e.sched.PlannedRate(intended.Sub(e.base)) <= preciseMaxRate
	if precise && w.wake == nil {
		if w.wake = newWakeTimer(); w.wake == nil {
			precise = false // no timerfd (descriptors exhausted): the Go timer alone
		}
	}
	wait := time.Until(intended)
	if precise {
		wait -= e.precise
	}
	if wait > 0 {
		w.timer.Reset(wait)
		select {
		case <-w.timer.C:
		case <-e.stop:
			w.timer.Stop()
			if time.Until(intended) <= 0 {
				e.drop(DropStop, 1) // it fell due as the run stopped: never sent
			}
			return false
		}
	}
	if precise {
		w.wake.sleep(time.Until(intended))
	}
	select {
	case <-e.stop:
		if intended.Before(e.stoppedAt()) {
			e.drop(DropStop, 1) // it fell due before the run stopped: never sent
		}
		return false
	default:
		return true
	}
}
