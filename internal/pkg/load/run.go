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
}

// Run executes the plan in o and returns its result. It blocks until the plan
// ends (Duration, Total, the last stage) or ctx is done. Stopping is
// two-phase: first no new arrivals or iterations start, then in-flight
// requests get the grace period, then their context is cancelled. A run
// stopped by ctx returns its partial result with Interrupted set and a nil
// error; the error is non-nil only for invalid options. All goroutines Run
// starts have ended when it returns.
func Run(ctx context.Context, o Options) (*Result, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	e := newEngine(&o)
	return e.run(ctx), nil
}

type rawCounters struct {
	requests, errors, bytesIn, bytesOut, retries, late int64
	status                                             [600]int64
	classes                                            [numClasses]int64
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
	_   [64]byte // keep shards off each other's cache lines
}

// worker is one pull-based worker.
type worker struct {
	rec   *recorder
	busy  atomic.Bool
	s     Sample
	timer *time.Timer
	_     [64]byte // keep hot workers off each other's cache lines
}

func (w *worker) record(ep int, lat time.Duration, s *Sample, err error, late bool) {
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
	if late {
		c.late++
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
	sr      SampleRequester
	base    time.Time // wall instant of plan time 0
	maxLate time.Duration

	schedMu sync.Mutex
	sched   *Schedule
	dropped atomic.Int64

	issued    atomic.Uint64
	active    atomic.Int64
	vuMu      sync.Mutex
	vuChanged chan struct{}

	stop    chan struct{}
	reqCtx  context.Context
	workers []*worker
	recs    []*recorder
}

func newEngine(o *Options) *engine {
	e := &engine{o: o, names: o.endpointNames(), r: o.Requester, maxLate: o.maxLateness()}
	e.sr, _ = o.Requester.(SampleRequester)
	e.sched = NewSchedule(o)
	n := o.concurrency()
	if !o.open() {
		n = o.maxVUs()
		if o.ScaleVUs != nil {
			n = o.ScaleVUs(n)
		}
	}
	n = max(n, 0)
	shards := min(max(n, 1), 4*runtime.GOMAXPROCS(0))
	e.recs = make([]*recorder, shards)
	for i := range e.recs {
		r := &recorder{eps: make([]epRecorder, len(e.names))}
		for j := range r.eps {
			r.eps[j].hist = NewHistogram()
		}
		e.recs[i] = r
	}
	e.workers = make([]*worker, n)
	for i := range e.workers {
		e.workers[i] = &worker{rec: e.recs[i%shards]}
	}
	return e
}

func (e *engine) planNow() time.Duration { return time.Since(e.base) }

func (e *engine) run(ctx context.Context) *Result {
	o := e.o
	start := o.StartAt
	if start.IsZero() {
		start = time.Now()
	}
	e.base = start.Add(-o.Offset)
	res := &Result{Open: o.open()}
	if d := time.Until(start); d > 0 {
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			res.Interrupted = true
			res.Start = start
			res.Finish()
			return res
		case <-t.C:
		}
	}
	res.Start = time.Now()
	e.stop = make(chan struct{})
	reqCtx, cancelReq := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelReq()
	e.reqCtx = reqCtx

	var wg sync.WaitGroup
	if !o.open() {
		e.active.Store(int64(e.vuCount()))
		e.vuChanged = make(chan struct{})
		if len(o.VUStages) > 0 || o.ScaleVUs != nil {
			wg.Go(e.vuController)
		}
	}
	var workersWG sync.WaitGroup
	for i, w := range e.workers {
		w.timer = time.NewTimer(time.Hour)
		w.timer.Stop()
		if o.open() {
			workersWG.Go(func() { e.openWorker(w) })
		} else {
			workersWG.Go(func() { e.closedWorker(i, w) })
		}
	}
	allDone := make(chan struct{})
	go func() { workersWG.Wait(); close(allDone) }()
	collDone := make(chan struct{})
	wg.Go(func() { e.collect(res, collDone) })

	var endC <-chan time.Time
	planEnd, hasEnd := o.Duration, o.Duration > 0
	if o.open() {
		planEnd, hasEnd = e.sched.End()
	}
	if hasEnd {
		t := time.NewTimer(time.Until(e.base.Add(planEnd)))
		defer t.Stop()
		endC = t.C
	}
	stopped, byEnd := false, false
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
			}
		}
	case <-ctx.Done():
		res.Interrupted = true
		stopped = true
	case <-endC:
		stopped, byEnd = true, true
	}
	stopAt := time.Now()
	// An open plan that reached its end stops by itself: its schedule has
	// no arrivals past the end, and arrivals that fell due before it are
	// still sent (late) during the grace period. Otherwise stop now.
	drain := byEnd && o.open()
	if !drain {
		close(e.stop)
	}
	if stopped {
		if g := o.grace(); g > 0 {
			t := time.NewTimer(g)
			select {
			case <-allDone:
			case <-t.C:
			}
			t.Stop()
		}
		if drain {
			close(e.stop)
		}
		cancelReq()
		<-allDone
	} else if drain {
		close(e.stop)
	}
	end := time.Now()
	if o.open() {
		if drain {
			stopAt = end
		}
		e.dropUnsent(stopAt)
	}
	close(collDone)
	wg.Wait()
	res.Elapsed = end.Sub(res.Start)
	if byEnd {
		// Requests finishing in the grace period belong to the plan: the
		// achieved rate is over the planned time, not the drain.
		res.Elapsed = e.base.Add(planEnd).Sub(res.Start)
	}
	if res.Open {
		from := o.Offset
		to := o.Offset + res.Elapsed
		if hasEnd && !res.Interrupted {
			to = planEnd
		}
		if to > from {
			res.TargetRPS = e.sched.PlannedCount(from, to) / (to - from).Seconds()
		}
	}
	res.Finish()
	return res
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
		if wait > 0 {
			w.timer.Reset(wait)
			select {
			case <-w.timer.C:
			case <-e.stop:
				w.timer.Stop()
				if time.Until(intended) <= 0 {
					e.dropped.Add(1) // it fell due as the run stopped: never sent
				}
				return
			}
		} else {
			select {
			case <-e.stop:
				e.dropped.Add(1) // due, and now never sent
				return
			default:
			}
			if -wait > e.maxLate {
				e.dropped.Add(1)
				continue
			}
		}
		e.do(w, intended, -wait > LateTolerance)
	}
}

// dropUnsent counts the arrivals that were due before the run stopped at
// stopAt but that no worker picked up: they were intended and never sent.
func (e *engine) dropUnsent(stopAt time.Time) {
	due := stopAt.Sub(e.base)
	e.schedMu.Lock()
	defer e.schedMu.Unlock()
	for {
		_, t, ok := e.sched.Next()
		if !ok || t >= due {
			return
		}
		e.dropped.Add(1)
	}
}

func (e *engine) do(w *worker, start time.Time, late bool) {
	w.busy.Store(true)
	w.s.Reset()
	err := doSample(e.reqCtx, e.r, e.sr, &w.s)
	lat := time.Since(start)
	w.busy.Store(false)
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
		if o.Total > 0 && e.issued.Add(1) > o.Total {
			return
		}
		e.do(w, time.Now(), false)
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
	return min(max(v, 0), len(e.workers))
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
	every := o.progressEvery()
	window := NewHistogram()
	var winReq, lastDropped int64
	var winSecs int
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	flush := func(final bool) {
		snap := e.snapshot(sec, &lastDropped)
		res.AddSnapshot(snap)
		window.Merge(snap.Latency)
		winReq += snap.Requests
		winSecs++
		// The final flush covers a partial second: its rate is over the
		// time it really spans, and a sliver (the drain right after a
		// whole-second plan end) gets no line, since the summary follows.
		winDur := time.Duration(winSecs) * time.Second
		if final {
			winDur = e.planNow() - time.Duration(sec-winSecs+1)*time.Second
		}
		if o.Progress != nil && (winSecs >= every || final) && winDur >= minProgressWindow {
			p := Progress{
				Elapsed:   e.planNow(),
				Requests:  res.Requests,
				Errors:    res.Errors,
				RPS:       float64(winReq) / winDur.Seconds(),
				TargetRPS: snap.TargetRPS,
				P50:       window.Quantile(0.50),
				P95:       window.Quantile(0.95),
				P99:       window.Quantile(0.99),
				InFlight:  snap.InFlight,
				Dropped:   res.Dropped,
			}
			o.Progress(p)
			window.Reset()
			winReq, winSecs = 0, 0
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

// snapshot drains every worker's recorder into a new Snapshot for second sec.
func (e *engine) snapshot(sec int, lastDropped *int64) *Snapshot {
	s := &Snapshot{Second: sec, Endpoints: make([]EndpointStats, len(e.names))}
	s.Latency = NewHistogram()
	var sum rawCounters
	eps := make([]rawCounters, len(e.names))
	for j := range s.Endpoints {
		s.Endpoints[j].Name = e.names[j]
		s.Endpoints[j].Latency = NewHistogram()
	}
	for _, w := range e.workers {
		if w.busy.Load() {
			s.InFlight++
		}
	}
	for _, rec := range e.recs {
		rec.mu.Lock()
		for j := range rec.eps {
			r := &rec.eps[j]
			if r.c.requests == 0 {
				continue
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
	d := e.dropped.Load()
	s.Dropped = d - *lastDropped
	*lastDropped = d
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
	s.Retries, s.Late = c.retries, c.late
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
