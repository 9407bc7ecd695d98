package load

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Progress is the live view of a run, delivered to [Options.Progress] every
// progress interval. Rates and percentiles cover the last interval.
type Progress struct {
	// Elapsed is the plan time at the end of the interval.
	Elapsed time.Duration
	// Requests and Errors are totals so far.
	Requests, Errors int64
	// RPS is the achieved rate over the interval; TargetRPS the planned one
	// (0 in the closed model).
	RPS, TargetRPS float64
	// P50, P95 and P99 are the interval's latency percentiles.
	P50, P95, P99 time.Duration
	// InFlight is the number of requests in flight now.
	InFlight int
	// Dropped is the total number of dropped arrivals so far.
	Dropped int64
	// SUT is the latest resource sample of each target, from
	// [Options.Resources]; nil without one.
	SUT []ResourceSample
}

// Run executes the plan in o and returns its result. It blocks until the plan
// ends (Duration, Total, the last stage, Deadline) or ctx is done. Stopping
// is two-phase: first no new arrivals or iterations start, then in-flight
// requests get the grace period, then their context is cancelled. Once ctx
// is done, whether before or after the plan's end, in-flight requests are
// cancelled within MaxInterruptGrace, and Run waits at most MaxCancelWait
// more for them, so it returns within about 1.5 s of a cancel whatever the
// grace period and the requester's own timeouts. A run stopped by ctx
// returns its partial result with Interrupted set and a nil error; the
// error is non-nil for invalid options, and for a panic in the requester
// or a callback, which stops the run (see [Panic]). All goroutines Run
// starts have ended when it returns, except the worker of a request whose
// requester ignored its cancelled context for longer than MaxCancelWait:
// that one ends when the call returns.
func Run(ctx context.Context, o Options) (*Result, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	ctx, trap, stop := trapPanics(ctx, &o)
	defer stop(nil)
	e := newEngine(&o)
	res := e.run(ctx)
	if err := trap.err(); err != nil {
		return nil, err
	}
	return res, nil
}

type rawCounters struct {
	requests, errors, bytesIn, bytesOut, retries, late, queued int64
	status                                                     [600]int64
	classes                                                    [numClasses]int64
}

type epRecorder struct {
	hist *Histogram
	c    rawCounters
}

// recorder is a preallocated shard of measurements shared by a few workers;
// the collector drains it under mu once a second. Sharding by a small
// multiple of GOMAXPROCS keeps lock contention negligible while memory
// stays independent of the number of workers.
type recorder struct {
	mu  sync.Mutex
	eps []epRecorder
	// inFlight counts the shard's workers that are in a request. It sits
	// beside mu, which the same workers take anyway, so counting costs no
	// cache line shared by every worker of the run.
	inFlight atomic.Int64
	_        [64]byte // keep shards off each other's cache lines
}

// worker is one pull-based worker.
type worker struct {
	rec   *recorder
	s     Sample
	timer *time.Timer
	wake  *wakeTimer // made on the first precise wait; see preciseWindow
	_     [64]byte   // keep hot workers off each other's cache lines
}

func (w *worker) record(ep int, lat time.Duration, s *Sample, err error, late lateness) {
	rec := w.rec
	if ep < 0 || ep >= len(rec.eps) {
		ep = 0
	}
	class := s.Class
	if class == ClassNone && err != nil {
		class = Classify(err)
	}
	rec.mu.Lock()
	r := &rec.eps[ep]
	if r.hist == nil {
		r.hist = NewHistogram() // once per endpoint and shard; see maxRecorderHists
	}
	r.hist.Record(lat)
	c := &r.c
	c.requests++
	if class != ClassNone {
		c.errors++
		c.classes[class]++
	}
	c.bytesIn += s.BytesIn
	c.bytesOut += s.BytesOut
	if s.Attempts > 1 {
		c.retries += int64(s.Attempts - 1)
	}
	if late != onTime {
		c.late++
		if late == queued {
			c.queued++
		}
	}
	if s.Status > 0 && s.Status < len(c.status) {
		c.status[s.Status]++
	}
	rec.mu.Unlock()
}

type engine struct {
	o       *Options
	names   []string
	r       Requester
	base    time.Time // wall instant of plan time 0
	maxLate time.Duration
	precise time.Duration // see preciseWindow

	schedMu sync.Mutex
	sched   *Schedule
	dropped atomic.Int64
	// droppedBy splits dropped by reason; see drop.
	droppedBy [numDropReasons]atomic.Int64
	// genLate counts the arrivals sent more than GeneratorLateTolerance
	// late while a worker was free, and genLateMax holds the latest of
	// them (nanoseconds) since the last snapshot: the evidence that the
	// generator, not the target, fell behind.
	genLate    atomic.Int64
	genLateMax atomic.Int64

	issued    atomic.Uint64
	active    atomic.Int64
	vuMu      sync.Mutex
	vuChanged chan struct{}

	stop     chan struct{}
	stopOnce sync.Once
	stopAt   atomic.Int64 // unix nanos at which stop was closed
	reqCtx   context.Context
	// cancelled is set just before reqCtx is cancelled: a request that
	// would start after it is dropped (canceled_before_send) rather than
	// handed to the driver to fail at once.
	cancelled atomic.Bool
	// finalAt is the plan time at which the run is deemed to end; the
	// final progress window runs to it. Written before collDone closes.
	finalAt time.Duration
	recs    []*recorder

	// n is the most workers the run may have (the open model's
	// MaxConcurrency). The open model starts them lazily, one more
	// whenever the last idle one takes a request, so a huge cap costs only
	// what the load needs; the closed model starts one per user (at most
	// Total) at once.
	n        int
	started  atomic.Int64 // workers started
	idle     atomic.Int64 // open model: started workers not in a request
	workerWG sync.WaitGroup
}

func newEngine(o *Options) *engine {
	e := &engine{o: o, names: o.endpointNames(), r: o.Requester, maxLate: o.maxLateness(), precise: preciseWindow}
	e.sched = NewSchedule(o)
	n := o.maxConcurrency()
	if !o.open() {
		n = o.maxVUs()
		if o.ScaleVUs != nil {
			n = o.ScaleVUs(n)
		}
	}
	n = max(n, 0)
	if o.Total > 0 && uint64(n) > o.Total {
		n = int(o.Total) // more workers than requests would never work
	}
	e.n = n
	shards := min(max(n, 1), 4*runtime.GOMAXPROCS(0), max(maxRecorderHists/len(e.names), 1))
	e.recs = make([]*recorder, shards)
	for i := range e.recs {
		e.recs[i] = &recorder{eps: make([]epRecorder, len(e.names))}
	}
	return e
}

// maxRecorderHists bounds the latency histograms of the recorder shards
// (about 140 KB each): a run with many endpoints gets fewer shards, since
// its requests spread over as many per-endpoint histograms anyway. Each
// is made on its endpoint's first request in its shard, and a snapshot
// makes one only for an endpoint that had requests in its second, so a
// run's memory follows the endpoints it uses, up to about 0.5 MB each
// (shards, the second's snapshot and the result).
const maxRecorderHists = 1024

// newWorker returns worker i, with its recorder shard and a stopped timer.
func (e *engine) newWorker(i int64) *worker {
	w := &worker{rec: e.recs[i%int64(len(e.recs))], timer: time.NewTimer(time.Hour)}
	w.timer.Stop()
	return w
}

// release frees what the worker holds beyond memory; it runs when the
// worker's goroutine ends.
func (w *worker) release() {
	if w.wake != nil {
		w.wake.close()
	}
}

// spawnOpen starts one more open-model worker unless there are e.n
// already. It is called before the workers' WaitGroup is waited for, or by
// a running worker, so the WaitGroup never restarts from zero.
func (e *engine) spawnOpen() {
	for {
		s := e.started.Load()
		if s >= int64(e.n) {
			return
		}
		if e.started.CompareAndSwap(s, s+1) {
			w := e.newWorker(s)
			e.idle.Add(1)
			e.workerWG.Go(func() {
				defer w.release()
				e.openWorker(w)
			})
			return
		}
	}
}

func (e *engine) planNow() time.Duration { return time.Since(e.base) }

func (e *engine) run(ctx context.Context) *Result {
	res := &Result{Open: e.o.open()}
	if len(e.o.Phases) > 0 {
		res.SetPhases(e.o.Phases)
	}
	if !e.awaitStart(ctx, res) {
		return res
	}
	e.stop = make(chan struct{})
	reqCtx, cancelReq := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelReq()
	e.reqCtx = reqCtx

	var wg sync.WaitGroup
	allDone := e.startWorkers(&wg)
	collDone := make(chan struct{})
	wg.Go(func() { e.collect(res, collDone) })

	planEnd, hasEnd := e.planEnd()
	stopped, byEnd := e.awaitEnd(ctx, res, allDone, planEnd, hasEnd)
	end := e.stopRun(ctx, res, allDone, stopped, byEnd, cancelReq)
	e.setElapsed(res, end, planEnd, byEnd)
	e.finalAt = res.Start.Add(res.Elapsed).Sub(e.base)
	close(collDone)
	wg.Wait()
	e.setTargetRPS(res, planEnd, hasEnd)
	if res.Open {
		res.Workers, res.MaxWorkers = int(e.started.Load()), e.n
	}
	res.SUT = e.o.Resources.Summaries()
	res.Finish()
	return res
}

// awaitStart fixes plan time 0 and waits for Options.StartAt; it returns
// false, with res finished as interrupted, when ctx is done first.
func (e *engine) awaitStart(ctx context.Context, res *Result) bool {
	o := e.o
	start := o.StartAt
	if start.IsZero() {
		start = time.Now()
	}
	e.base = start.Add(-o.Offset)
	if d := time.Until(start); d > 0 {
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			res.Interrupted = true
			res.Start = start
			res.Finish()
			return false
		case <-t.C:
		}
	}
	res.Start = time.Now()
	if o.Offset > 0 && o.open() {
		// A run that starts mid-plan takes over a share another host was
		// driving, so it starts where the plan is now: arrivals that fell
		// due while it was being set up (warming connections, fetching a
		// token, a stalled host) are counted as dropped, not sent at once
		// in a burst beside the rest of the load (as the handover's).
		e.dropUnsent(res.Start.Add(-LateTolerance), DropHandover)
	}
	return true
}

// startWorkers starts the model's workers (and the closed model's VU
// controller, in wg) and returns a channel closed once every worker has
// returned.
func (e *engine) startWorkers(wg *sync.WaitGroup) <-chan struct{} {
	o := e.o
	if o.open() {
		e.spawnOpen()
	} else {
		e.active.Store(int64(e.vuCount()))
		e.vuChanged = make(chan struct{})
		if len(o.VUStages) > 0 || o.ScaleVUs != nil {
			wg.Go(e.vuController)
		}
		for i := range e.n {
			w := e.newWorker(int64(i))
			e.started.Add(1)
			e.workerWG.Go(func() {
				defer w.release()
				e.closedWorker(i, w)
			})
		}
	}
	allDone := make(chan struct{})
	go func() { e.workerWG.Wait(); close(allDone) }()
	return allDone
}

// planEnd returns the plan time at which the plan ends, if it has an end.
func (e *engine) planEnd() (time.Duration, bool) {
	if e.o.open() {
		return e.sched.End()
	}
	return e.o.Duration, e.o.Duration > 0
}

// awaitEnd waits for the run to end: every worker returned (Total, or an
// open plan out of arrivals, which still lasts to its planned end), the
// plan's end, the Deadline or ctx. stopped reports that workers may still
// be running and must be stopped; byEnd that the plan reached its end.
func (e *engine) awaitEnd(ctx context.Context, res *Result, allDone <-chan struct{}, planEnd time.Duration, hasEnd bool) (stopped, byEnd bool) {
	o := e.o
	var endC, deadC <-chan time.Time
	if hasEnd {
		t := time.NewTimer(time.Until(e.base.Add(planEnd)))
		defer t.Stop()
		endC = t.C
	}
	if o.Deadline > 0 {
		t := time.NewTimer(time.Until(e.base.Add(o.Deadline)))
		defer t.Stop()
		deadC = t.C
	}
	select {
	case <-allDone:
		// An open plan that ran out of arrivals by time still lasts until
		// its planned end, so the achieved rate covers the whole plan.
		if o.open() && hasEnd && !e.sched.totalHit {
			select {
			case <-endC:
				byEnd = true
			case <-ctx.Done():
				res.Interrupted = true
			case <-deadC:
			}
		}
	case <-ctx.Done():
		res.Interrupted = true
		stopped = true
	case <-endC:
		stopped, byEnd = true, true
	case <-deadC:
		stopped = true
	}
	return stopped, byEnd
}

// stopRun stops arrivals and, if workers may still run, drains them within
// the grace period, cancels their requests and waits (bounded) for them;
// then it counts the open model's unsent arrivals as dropped. It returns
// the instant the run ended.
func (e *engine) stopRun(ctx context.Context, res *Result, allDone <-chan struct{}, stopped, byEnd bool, cancelReq context.CancelFunc) time.Time {
	stopAt := time.Now()
	// An open plan that reached its end stops by itself: its schedule has
	// no arrivals past the end, and arrivals that fell due before it are
	// still sent (late) during the grace period. Otherwise stop now.
	drain := byEnd && e.o.open()
	if !drain {
		e.closeStop()
	}
	if stopped {
		e.drain(ctx, res, allDone)
		e.closeStop()
		e.cancelled.Store(true)
		cancelReq()
		e.awaitCancelled(allDone)
	} else if drain {
		e.closeStop()
	}
	end := time.Now()
	if e.o.open() {
		if drain {
			stopAt = end
		}
		e.dropUnsent(stopAt, DropStop)
	}
	return end
}

// setElapsed sets res.Elapsed: to end, or to the plan's end when the plan
// reached it, and in the open model to no less than the end of the last
// arrival's slot when Total ended the run.
func (e *engine) setElapsed(res *Result, end time.Time, planEnd time.Duration, byEnd bool) {
	res.Elapsed = end.Sub(res.Start)
	if byEnd {
		// Requests finishing in the grace period belong to the plan: the
		// achieved rate is over the planned time, not the drain.
		res.Elapsed = e.base.Add(planEnd).Sub(res.Start)
	}
	if e.o.open() && !res.Interrupted {
		// N arrivals at rate r take N/r seconds of plan, though the last
		// one is sent at (N-1)/r: a run that Total ended lasts at least to
		// the end of its last arrival's slot.
		if t, ok := e.sched.totalEnd(); ok {
			res.Elapsed = max(res.Elapsed, e.base.Add(t).Sub(res.Start))
		}
	}
}

// setTargetRPS sets the open model's planned rate over the part of the
// plan this run covered.
func (e *engine) setTargetRPS(res *Result, planEnd time.Duration, hasEnd bool) {
	if !res.Open {
		return
	}
	from := e.o.Offset
	to := e.o.Offset + res.Elapsed
	if hasEnd && !res.Interrupted {
		to = planEnd
	}
	if to > from {
		res.TargetRPS = e.sched.PlannedCount(from, to) / (to - from).Seconds()
	}
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

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func (e *engine) openWorker(w *worker) {
	for {
		e.schedMu.Lock()
		_, t, ok := e.sched.Next()
		e.schedMu.Unlock()
		if !ok {
			return
		}
		intended := e.base.Add(t)
		wait := time.Until(intended)
		// An arrival already due when a worker takes it waited for a
		// worker; if every worker exists (the pool is at concurrency) they
		// were all busy: the target's latency or concurrency limits the
		// test. Any other lateness is the generator's own: a worker that
		// could have been there was not scheduled on time.
		late := onTime
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
			if -wait > LateTolerance && e.started.Load() >= int64(e.n) {
				late = queued
			}
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
		if lag := time.Since(intended); late == onTime && lag > LateTolerance {
			late = generatorLate
			if lag > GeneratorLateTolerance {
				e.noteGeneratorLate(lag)
			}
		}
		// Keep one worker free for the next arrival, up to max concurrency.
		if e.idle.Add(-1) == 0 {
			e.spawnOpen()
		}
		e.do(w, intended, late)
		e.idle.Add(1)
	}
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

// stoppedAt returns when e.stop was closed; call it only after.
func (e *engine) stoppedAt() time.Time { return time.Unix(0, e.stopAt.Load()) }

// closeStop records the instant and closes e.stop, once.
func (e *engine) closeStop() {
	e.stopOnce.Do(func() {
		e.stopAt.Store(time.Now().UnixNano())
		close(e.stop)
	})
}

// lateness is why an arrival was sent late, if it was.
type lateness uint8

const (
	onTime lateness = iota
	// generatorLate: the generator itself sent it late (a timer fired late,
	// or a worker was not scheduled: its CPU fell behind).
	generatorLate
	// queued: it waited for a free worker while every worker was busy.
	queued
)

// dropUnsent counts the arrivals that were due before the run stopped at
// stopAt but that no worker picked up: they were intended and never sent.
// It computes the count rather than walking the arrivals, so it is quick
// whatever the rate.
func (e *engine) dropUnsent(stopAt time.Time, why DropReason) {
	e.schedMu.Lock()
	n := e.sched.SkipBefore(stopAt.Sub(e.base))
	e.schedMu.Unlock()
	e.drop(why, int64(n))
}

// drop counts n arrivals that were never sent, for reason why.
func (e *engine) drop(why DropReason, n int64) {
	if n <= 0 {
		return
	}
	e.dropped.Add(n)
	e.droppedBy[why].Add(n)
}

// noteGeneratorLate records an arrival that the generator sent lag late
// while a worker was free (see genLate).
func (e *engine) noteGeneratorLate(lag time.Duration) {
	e.genLate.Add(1)
	for {
		m := e.genLateMax.Load()
		if int64(lag) <= m || e.genLateMax.CompareAndSwap(m, int64(lag)) {
			return
		}
	}
}

func (e *engine) do(w *worker, start time.Time, late lateness) {
	if e.cancelled.Load() {
		e.drop(DropCanceled, 1) // the run's requests are cancelled: it would never leave
		return
	}
	w.rec.inFlight.Add(1)
	w.s.Reset()
	err := e.r.DoSample(e.reqCtx, &w.s)
	lat := time.Since(start)
	w.rec.inFlight.Add(-1)
	if w.s.Unsent != UnsentNone {
		// Nothing left the process: a dropped arrival, not a request.
		e.drop(w.s.Unsent, 1)
		return
	}
	w.record(w.s.Endpoint, lat, &w.s, err, late)
}

func (e *engine) closedWorker(i int, w *worker) {
	o := e.o
	for {
		for int64(i) >= e.active.Load() {
			e.vuMu.Lock()
			ch := e.vuChanged
			e.vuMu.Unlock()
			if int64(i) < e.active.Load() {
				break
			}
			select {
			case <-ch:
			case <-e.stop:
				return
			}
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
			w.timer.Reset(leasePoll)
			select {
			case <-w.timer.C:
			case <-e.stop:
				w.timer.Stop()
				return
			}
			continue
		}
		if o.Total > 0 && e.issued.Add(1) > o.Total {
			return
		}
		e.do(w, time.Now(), onTime)
		if think := o.thinkTime(); think > 0 {
			w.timer.Reset(think)
			select {
			case <-w.timer.C:
			case <-e.stop:
				w.timer.Stop()
				return
			}
		}
	}
}

// vuCount returns this host's VU target now.
func (e *engine) vuCount() int {
	v := e.o.vuTarget(e.planNow())
	if e.o.ScaleVUs != nil {
		v = e.o.ScaleVUs(v)
	}
	return min(max(v, 0), e.n)
}

func (e *engine) vuController() {
	t := time.NewTicker(vuEvalInterval)
	defer t.Stop()
	for {
		select {
		case <-e.stop:
			return
		case <-t.C:
		}
		v := int64(e.vuCount())
		if v != e.active.Load() {
			e.active.Store(v)
			e.vuMu.Lock()
			close(e.vuChanged)
			e.vuChanged = make(chan struct{})
			e.vuMu.Unlock()
		}
	}
}

// minProgressWindow is the shortest final window that gets a progress line.
const minProgressWindow = 200 * time.Millisecond

// collect closes one plan second at a time, and flushes the final partial
// second when collDone is closed (after every worker has returned).
func (e *engine) collect(res *Result, collDone <-chan struct{}) {
	o := e.o
	sec := int(e.planNow() / time.Second)
	win := NewProgressWindow(o.ProgressInterval)
	var lastDropped dropMarks
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	flush := func(final bool) {
		snap := e.snapshot(sec, &lastDropped)
		res.AddSnapshot(snap)
		win.Add(snap)
		// The final flush covers a partial second: its rate is over the
		// time it really spans, and a sliver (the drain right after a
		// whole-second plan end) gets no line, since the summary follows.
		span := win.Span()
		if final {
			span = max(e.planNow(), e.finalAt) - time.Duration(sec+1)*time.Second + span
		}
		if o.Progress != nil && (win.Full() || final) && span >= minProgressWindow {
			p := win.Take(e.planNow(), span)
			p.SUT = o.Resources.Latest()
			o.Progress(p)
		} else if win.Full() {
			win.Take(0, 0) // no one listens: start the next window
		}
		if o.OnSecond != nil {
			o.OnSecond(snap)
		}
	}
	for {
		t.Reset(time.Until(e.base.Add(time.Duration(sec+1) * time.Second)))
		select {
		case <-t.C:
			flush(false)
			sec++
		case <-collDone:
			flush(true)
			return
		}
	}
}

// dropMarks are the engine's drop and generator-lateness counters as of
// the previous snapshot, so that each snapshot gets its second's share.
type dropMarks struct {
	dropped [numDropReasons]int64
	genLate int64
}

// snapshotDrops sets s's dropped arrivals (by reason) and generator
// lateness since the previous snapshot.
func (e *engine) snapshotDrops(s *Snapshot, last *dropMarks) {
	for r := DropReason(1); r < numDropReasons; r++ {
		d := e.droppedBy[r].Load()
		if n := d - last.dropped[r]; n > 0 {
			s.Dropped += n
			if s.DroppedBy == nil {
				s.DroppedBy = make(map[string]int64)
			}
			s.DroppedBy[r.String()] = n
		}
		if r == DropStall {
			s.Stalled = d - last.dropped[r]
		}
		last.dropped[r] = d
	}
	g := e.genLate.Load()
	s.GeneratorLate = g - last.genLate
	last.genLate = g
	s.GeneratorLateMax = time.Duration(e.genLateMax.Swap(0))
}

// snapshot drains every worker's recorder into a new Snapshot for second sec.
func (e *engine) snapshot(sec int, lastDropped *dropMarks) *Snapshot {
	s := &Snapshot{Second: sec, Endpoints: make([]EndpointStats, len(e.names))}
	s.Latency = NewHistogram()
	var sum rawCounters
	eps := make([]rawCounters, len(e.names))
	for j := range s.Endpoints {
		s.Endpoints[j].Name = e.names[j]
	}
	for _, rec := range e.recs {
		s.InFlight += int(rec.inFlight.Load())
		rec.mu.Lock()
		for j := range rec.eps {
			r := &rec.eps[j]
			if r.c.requests == 0 {
				continue
			}
			if s.Endpoints[j].Latency == nil {
				s.Endpoints[j].Latency = NewHistogram()
			}
			s.Endpoints[j].Latency.Merge(r.hist)
			r.hist.Reset()
			addRaw(&eps[j], &r.c)
			r.c = rawCounters{}
		}
		rec.mu.Unlock()
	}
	for j := range eps {
		fillStats(&s.Endpoints[j].Stats, &eps[j])
		s.Latency.Merge(s.Endpoints[j].Latency)
		addRaw(&sum, &eps[j])
	}
	lat := s.Latency
	fillStats(&s.Stats, &sum)
	s.Latency = lat
	e.snapshotDrops(s, lastDropped)
	if e.o.open() {
		from := time.Duration(sec) * time.Second
		s.TargetRPS = e.sched.PlannedCount(from, from+time.Second)
	}
	return s
}

func addRaw(dst, src *rawCounters) {
	dst.requests += src.requests
	dst.errors += src.errors
	dst.bytesIn += src.bytesIn
	dst.bytesOut += src.bytesOut
	dst.retries += src.retries
	dst.late += src.late
	dst.queued += src.queued
	for i, v := range src.status {
		dst.status[i] += v
	}
	for i, v := range src.classes {
		dst.classes[i] += v
	}
}

func fillStats(s *Stats, c *rawCounters) {
	s.Requests, s.Errors = c.requests, c.errors
	s.BytesIn, s.BytesOut = c.bytesIn, c.bytesOut
	s.Retries, s.Late, s.Queued = c.retries, c.late, c.queued
	for code, v := range c.status {
		if v > 0 {
			if s.Status == nil {
				s.Status = make(map[int]int64)
			}
			s.Status[code] = v
		}
	}
	for cl, v := range c.classes {
		if v > 0 {
			if s.Classes == nil {
				s.Classes = make(map[string]int64)
			}
			s.Classes[ErrorClass(cl).String()] = v
		}
	}
}
