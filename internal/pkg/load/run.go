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
// requests get the grace period, then their context is cancelled (see the
// package's Stop section). Once ctx is done, whether before or after the
// plan's end, no new work starts and in-flight requests are cancelled
// within MaxInterruptGrace, and Run waits at most MaxCancelWait
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
	// msgs counts the failures by message; see errorMessage.
	msgs ErrorMessages
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
	var msg string
	if class != ClassNone {
		msg = errorMessage(err, s, class) // outside the lock: Error may take its time
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
		r.msgs.Add(msg, 1)
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
	// lastTaken is the global index of the arrival last taken from sched,
	// stored under schedMu (beside it, on the line the lock already
	// moves); the open model reads it to tell whether any worker holds a
	// later arrival.
	lastTaken atomic.Uint64
	dropped   atomic.Int64
	// droppedBy splits dropped by reason; see drop.
	droppedBy [numDropReasons]atomic.Int64
	// genLate counts the arrivals sent more than GeneratorLateTolerance
	// late while a worker was free, and genLateMax holds the latest of
	// them (nanoseconds) since the last snapshot: the evidence that the
	// generator, not the target, fell behind.
	genLate    atomic.Int64
	genLateMax atomic.Int64
	// cpu tells whether the generator's CPU is busy; see cpuBehind.
	cpu cpuMeter

	// x is the run's scheduling model; see executor.
	x executor
	// stopping is the run's graceful stop, two contexts; see stop.go.
	stopping
	// finalAt is the plan time at which the run is deemed to end; the
	// final progress window runs to it. Written before collDone closes.
	finalAt time.Duration
	recs    []*recorder

	// n is the most workers the run may have: the open model's
	// MaxConcurrency, the closed models' most users (after ScaleVUs); at
	// most Total either way.
	n        int
	started  atomic.Int64 // workers started
	workerWG sync.WaitGroup
}

func newEngine(o *Options) *engine {
	e := &engine{o: o, names: o.endpointNames(), r: o.Requester, maxLate: o.maxLateness(), precise: preciseWindow}
	e.sched = NewSchedule(o)
	e.x = newExecutor(e)
	n := max(e.x.maxWorkers(), 0)
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

func (e *engine) planNow() time.Duration { return time.Since(e.base) }

func (e *engine) run(ctx context.Context) *Result {
	res := &Result{Open: e.x.timeline()}
	if len(e.o.Phases) > 0 {
		res.SetPhases(e.o.Phases)
	}
	if !e.awaitStart(ctx, res) {
		return res
	}
	defer e.begin(ctx)()

	var wg sync.WaitGroup
	e.x.start(&wg)
	allDone := make(chan struct{})
	go func() { e.workerWG.Wait(); close(allDone) }()
	collDone := make(chan struct{})
	wg.Go(func() { e.collect(res, collDone) })

	planEnd, hasEnd := e.x.planEnd()
	reached := e.awaitEnd(ctx, res, allDone, planEnd, hasEnd)
	end := e.stopRun(ctx, res, allDone, reached)
	e.setElapsed(res, end, planEnd, reached)
	e.finalAt = res.Start.Add(res.Elapsed).Sub(e.base)
	close(collDone)
	wg.Wait()
	e.x.finish(res, planEnd, hasEnd)
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
	if o.Offset > 0 && e.x.timeline() {
		// A run that starts mid-plan takes over a share another host was
		// driving, so it starts where the plan is now: arrivals that fell
		// due while it was being set up (warming connections, fetching a
		// token, a stalled host) are counted as dropped, not sent at once
		// in a burst beside the rest of the load (as the handover's).
		e.dropUnsent(res.Start.Add(-LateTolerance), DropHandover)
	}
	return true
}

// setElapsed sets res.Elapsed: to end, or to the plan's end when the plan
// reached it, and on a timeline of arrivals to no less than the end of the
// last arrival's slot when Total ended the run.
func (e *engine) setElapsed(res *Result, end time.Time, planEnd time.Duration, reached bool) {
	res.Elapsed = end.Sub(res.Start)
	if reached {
		// Requests finishing in the grace period belong to the plan: the
		// achieved rate is over the planned time, not the drain.
		res.Elapsed = e.base.Add(planEnd).Sub(res.Start)
	}
	if e.x.timeline() && !res.Interrupted {
		// N arrivals at rate r take N/r seconds of plan, though the last
		// one is sent at (N-1)/r: a run that Total ended lasts at least to
		// the end of its last arrival's slot.
		if t, ok := e.sched.totalEnd(); ok {
			res.Elapsed = max(res.Elapsed, e.base.Add(t).Sub(res.Start))
		}
	}
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

// busyCPUShare is the share of a span above which a thread that wanted a
// CPU (ran or waited for one) is deemed behind, and cpuWindow the span.
const (
	busyCPUShare = 0.9
	cpuWindow    = time.Millisecond
)

// cpuMeter tells whether the generator's CPU was behind over its last
// window: whether a thread running workers wanted a CPU (ran, or waited
// on a run queue for one) for most of it. It is read only where the open
// pool would grow: within a window the answer is two atomic loads; the
// reader that finds the window over measures it, on its own thread (a
// window that ends on another thread than it began is started again).
type cpuMeter struct {
	mu            sync.Mutex
	tid           int
	run, wait, at time.Duration // the thread's times and the real clock at the window's start
	from          atomic.Int64  // the window's start, plan time in ns; 0 before the first reading
	busy          atomic.Bool
}

// cpuBehind reports whether the generator's CPU was behind over the last
// window measured, now being the plan time: the CPU, not the target, then
// holds requests up (see openExecutor.held).
func (e *engine) cpuBehind(now time.Duration) bool {
	m := &e.cpu
	from := m.from.Load()
	if from != 0 && now-time.Duration(from) < cpuWindow || !m.mu.TryLock() {
		return m.busy.Load()
	}
	defer m.mu.Unlock()
	if from = m.from.Load(); from != 0 && now-time.Duration(from) < cpuWindow {
		return m.busy.Load() // measured by another reader meanwhile
	}
	if tid, run, wait, at, ok := threadCPU(); ok {
		now = e.planNow()
		// The span is judged only when the plan's clock and the real one
		// agree on it: in a test on a fake clock they do not, and the
		// CPU's pace says nothing about the plan's.
		if span := at - m.at; tid == m.tid && from != 0 && span > 0 && absDuration(now-time.Duration(from)-span) <= span/10 {
			m.busy.Store(float64(run-m.run+wait-m.wait) >= busyCPUShare*float64(span))
		}
		m.tid, m.run, m.wait, m.at = tid, run, wait, at
		m.from.Store(max(int64(now), 1))
	}
	return m.busy.Load()
}

func absDuration(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
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
	room := maxSnapshotMessages // distinct messages the snapshot may still take
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
			room -= s.Endpoints[j].Messages.mergeAtMost(&r.msgs, room)
			r.msgs.reset()
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
	if e.x.timeline() {
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
