package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/forgeload/forgeload/internal/pkg/cluster/segment"
)

// member is one runner's participation in one run. Its loop goroutine owns
// all fields not marked otherwise; the segment goroutines, the command
// reader and the metric shipper are owned by it and waited for on exit.
type member struct {
	p        *Pool
	run      string
	k        runKeys
	spec     []byte
	job      string // the run's job and step names, see Assignment.Job
	step     string
	duration time.Duration
	ttl      int

	stop     chan struct{} // closed by shutdown
	stopOnce sync.Once
	abandon  atomic.Bool

	clock      clock
	clockAt    time.Time
	startMs    int64     // start_at (Redis ms) that startLocal converts
	startLocal time.Time // start_at on this runner's monotonic clock
	appliedGen int64
	maxTerm    int64
	cur        desired
	seq        *segment.Sequence
	segs       map[int]*segRun
	segDone    chan *segRun
	quit       chan struct{} // closed when the loop exits; unblocks segment goroutines
	segWG      sync.WaitGroup
	hadSegs    bool
	// ran holds the segments this runner ran to their end; they are never
	// started again (a closed-model total's share would be sent twice).
	ran        map[int]bool
	stopped    bool
	coordGone  time.Time
	shipGen    atomic.Int64 // appliedGen, for the shipper goroutine
	ignored    atomic.Int64 // stale commands or desired states ignored (for tests)
	cmdCursor  atomic.Value // string
	ship       *shipper
	loadCtx    context.Context
	cancelLoad context.CancelCauseFunc

	// leaseBase and leaseUntil are the lease as this runner's monotonic
	// clock sees it: no request may be sent once time.Since(leaseBase)
	// reaches leaseUntil (nanoseconds). A renewal extends it to the instant
	// the renewal was SENT plus FenceAfter, which is before Redis can expire
	// the lease (TTL from when Redis ran it), so a paused or partitioned
	// runner stops before anyone else may take its segments.
	leaseBase  time.Time
	leaseUntil atomic.Int64
	// sent counts the requests that passed the lease check, which the
	// engine makes right before it sends one: the status's "sent", so
	// the coordinator knows this much went out even when the worker dies
	// before it ships the metrics (see WorkerRow.SentAtLeast for the
	// few checks that send nothing).
	sent atomic.Int64

	// keeping runs keepLease until stopKeeping.
	keeping  sync.WaitGroup
	stopKeep context.CancelFunc

	fenceMu   sync.Mutex
	fenceT    *time.Timer
	fenced    chan struct{}
	isFenced  bool
	cpuPrev   time.Duration
	cpuPrevAt time.Time
	cpuPct    float64
}

type segRun struct {
	idx    int
	cancel context.CancelCauseFunc
	done   chan struct{}
	err    error
}

func newMember(p *Pool, run string, spec []byte, dur time.Duration, ttl int) *member {
	m := &member{
		p: p, run: run, k: runKeys(run), spec: spec, duration: dur, ttl: max(ttl, 60),
		stop: make(chan struct{}), segs: map[int]*segRun{}, ran: map[int]bool{}, segDone: make(chan *segRun),
		quit: make(chan struct{}), fenced: make(chan struct{}),
		leaseBase: time.Now(),
	}
	// The join script set the lease just before this; count from now minus
	// the renewal period, a conservative stand-in for when it was sent.
	m.leaseUntil.Store(int64(p.o.FenceAfter - p.o.Heartbeat))
	m.cmdCursor.Store("0")
	return m
}

// shutdown asks the loop to leave; abandon says whether to hand the
// segments back (graceful) or just vanish (kill -9 simulation).
func (m *member) shutdown(abandon bool) {
	m.abandon.Store(abandon)
	m.stopOnce.Do(func() { close(m.stop) })
}

func (m *member) logf(format string, args ...any) {
	m.p.o.Logf("cluster: runner %s run %s: "+format, append([]any{m.p.o.ID, m.run}, args...)...)
}

// loop runs the membership until the run ends, the runner is fenced, or
// shutdown is called. It returns nil on a clean end.
func (m *member) loop(parent context.Context) (err error) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(parent))
	defer cancel()
	m.loadCtx, m.cancelLoad = context.WithCancelCause(ctx)
	m.armFence()
	keepCtx, stopKeep := context.WithCancel(ctx)
	m.keeping.Add(1)
	go func() { defer m.keeping.Done(); m.keepLease(keepCtx) }()
	m.stopKeep = stopKeep
	defer m.stopKeeping()

	if m.clock, err = measureClock(ctx, m.p.rdb, m.p.o.WallClock); err != nil {
		m.logf("%v", err)
	}
	m.clockAt = time.Now()
	m.ship = newShipper(m)
	shipCtx, stopShip := context.WithCancel(ctx)
	var bg sync.WaitGroup
	bg.Add(2)
	go func() { defer bg.Done(); m.ship.run(shipCtx) }()

	cmds := make(chan *desired, 16)
	reader := m.p.readerClient()
	readCtx, stopRead := context.WithCancel(ctx)
	go func() { defer bg.Done(); m.readCommands(readCtx, reader, cmds) }()

	defer func() {
		close(m.quit)
		m.cancelLoad(errors.New("left the run"))
		m.segWG.Wait()
		stopRead()
		_ = reader.Close()
		stopShip()
		bg.Wait()
		m.fenceMu.Lock()
		m.fenceT.Stop()
		m.fenceMu.Unlock()
	}()

	m.reconcile(ctx)
	t := time.NewTicker(m.p.o.Heartbeat)
	defer t.Stop()
	for {
		select {
		case <-m.stop:
			return m.onStop(ctx)
		case <-m.fenced:
			return m.onFenced(ctx)
		case <-t.C:
			if err := m.onHeartbeat(ctx); err != nil {
				return err
			}
		case d := <-cmds:
			m.onCommand(ctx, d)
		case sr := <-m.segDone:
			m.onSegmentDone(ctx, sr)
		}
		if m.stopped && m.cur.Phase == phaseStop {
			m.delAlive(ctx)
			return nil
		}
	}
}

// onStop leaves the run on shutdown, handing the segments back first if
// asked to abandon them.
func (m *member) onStop(ctx context.Context) error {
	if m.abandon.Load() {
		m.doAbandon(ctx, "runner shutting down")
	}
	return nil
}

// onFenced leaves the run once the fence timer has cut this runner off:
// its load stops and its segments are handed back.
func (m *member) onFenced(ctx context.Context) error {
	m.stopSegments(ErrSelfFenced)
	m.logf("%v (no renewal for %s)", ErrSelfFenced, m.p.o.FenceAfter)
	m.doAbandon(ctx, "self-fenced")
	return ErrSelfFenced
}

// onHeartbeat beats; when the heartbeat says this runner must leave, it
// stops the segments, reports and releases what it still can, and returns
// why.
func (m *member) onHeartbeat(ctx context.Context) error {
	err := m.heartbeat(ctx)
	if err == nil {
		return nil
	}
	m.stopSegments(err)
	if !errors.Is(err, ErrStateLost) && !errors.Is(err, ErrRemoved) {
		m.flushAndStopped(ctx, "error")
	}
	if !errors.Is(err, ErrStateLost) {
		m.delAlive(ctx)
	}
	return err
}

// onCommand applies a desired state the command reader forwarded, or
// re-reads desired when it forwarded none (nil).
func (m *member) onCommand(ctx context.Context, d *desired) {
	if d == nil {
		m.reconcile(ctx)
	} else {
		m.apply(ctx, *d)
	}
}

// onSegmentDone records a segment that ended: ran to its end, or failed
// (the coordinator is told), and reports "stopped" once none is left.
func (m *member) onSegmentDone(ctx context.Context, sr *segRun) {
	if m.segs[sr.idx] == sr {
		delete(m.segs, sr.idx)
		if sr.err == nil && m.loadCtx.Err() == nil {
			m.ran[sr.idx] = true
		}
		if sr.err != nil && m.loadCtx.Err() == nil {
			// The error can quote the job's input (a target, a
			// header) and this daemon does not know the job's
			// secrets: its text goes to the job's log only, through
			// the coordinator, which masks it.
			m.logf("segment %d failed; the job's log says why", sr.idx)
			m.segmentFailed(ctx, sr.idx, sr.err)
		}
	}
	if len(m.segs) == 0 && m.hadSegs && m.loadCtx.Err() == nil && !m.stopped {
		m.flushAndStopped(ctx, "stopped")
	}
}

// armFence starts the self-fence timer: if no renewal succeeds for
// FenceAfter, it cancels all load by itself.
// The timer ends the run's load as a whole; [member.leaseValid], checked
// before every request, covers the time until the timer's goroutine runs.
func (m *member) armFence() {
	m.fenceMu.Lock()
	defer m.fenceMu.Unlock()
	m.fenceT = time.AfterFunc(m.leaseLeft(), func() {
		m.fenceMu.Lock()
		defer m.fenceMu.Unlock()
		if m.isFenced {
			return
		}
		if left := m.leaseLeft(); left > 0 { // renewed meanwhile
			m.fenceT.Reset(left)
			return
		}
		m.isFenced = true
		m.leaseUntil.Store(0)
		m.cancelLoad(ErrSelfFenced)
		close(m.fenced)
	})
}

// leaseLeft is how long this runner may still send.
func (m *member) leaseLeft() time.Duration {
	return time.Duration(m.leaseUntil.Load()) - time.Since(m.leaseBase)
}

// leaseValid reports whether this runner's lease is still good on its own
// monotonic clock. It is the engine's Options.Lease: called before every
// request, so it only reads the clock and one atomic.
func (m *member) leaseValid() bool {
	if int64(time.Since(m.leaseBase)) >= m.leaseUntil.Load() {
		return false
	}
	m.sent.Add(1)
	return true
}

// renewed records a successful renewal that was sent at sent (since
// leaseBase) and moves the fence timer to the new deadline.
func (m *member) renewed(sent time.Duration) {
	m.fenceMu.Lock()
	defer m.fenceMu.Unlock()
	if m.isFenced {
		return
	}
	if until := int64(sent + m.p.o.FenceAfter); until > m.leaseUntil.Load() {
		m.leaseUntil.Store(until)
	}
	m.fenceT.Reset(max(m.leaseLeft(), 0))
}

// keepLease renews this runner's lease by itself whenever the last renewal
// was sent more than a heartbeat and a half ago. The loop renews it with
// each heartbeat, but between heartbeats the loop may wait: for Redis's
// clock at the start and again on "prepare", for a segment to stop. On a
// machine whose CPU the load itself saturates, such waits took longer
// than the lease, and a worker whose Redis answered all along fenced
// itself. Only a successful renewal counts here; what another answer means
// (the run aborted, the worker removed or superseded) is the next
// heartbeat's to say, with the run's state in hand.
func (m *member) keepLease(ctx context.Context) {
	every := m.p.o.Heartbeat
	t := time.NewTicker(every / 2)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if m.sinceRenewal() < every*3/2 || m.isFencedNow() {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, every)
		sent := time.Since(m.leaseBase)
		n, err := aliveRenewScript.Run(cctx, m.p.rdb, m.renewKeys(), m.p.o.ID, m.shipGen.Load(), m.p.o.LeaseTTL.Milliseconds(), m.ttl).Int()
		cancel()
		if err == nil && n == 1 {
			m.renewed(sent)
		}
	}
}

// renewKeys are aliveRenewScript's keys for this runner.
func (m *member) renewKeys() []string {
	return []string{m.k.alive(m.p.o.ID), m.k.workers(), m.k.renewals(m.p.o.ID)}
}

// sinceRenewal is how long ago the last successful renewal was sent.
func (m *member) sinceRenewal() time.Duration {
	return m.p.o.FenceAfter - m.leaseLeft()
}

// stopKeeping ends keepLease and waits for it, so that no renewal lands
// after the loop deletes this runner's lease or leaves.
func (m *member) stopKeeping() {
	m.stopKeep()
	m.keeping.Wait()
}

func (m *member) heartbeat(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, m.p.o.Heartbeat)
	defer cancel()
	m.sampleCPU()
	if time.Since(m.clockAt) > clockRemeasure {
		if c, err := measureClock(cctx, m.p.rdb, m.p.o.WallClock); err == nil {
			m.clock, m.clockAt = c, time.Now()
		}
	}
	pipe := m.p.rdb.Pipeline()
	sent := time.Since(m.leaseBase)
	renew := aliveRenewScript.Eval(cctx, pipe, m.renewKeys(), m.p.o.ID, m.appliedGen, m.p.o.LeaseTTL.Milliseconds(), m.ttl)
	pipe.HSet(cctx, m.k.status(m.p.o.ID), m.statusFields())
	// NX: once the run has ended its keys live an hour; a late heartbeat
	// must not stretch that back to the run TTL.
	pipe.ExpireNX(cctx, m.k.status(m.p.o.ID), time.Duration(m.ttl)*time.Second)
	st := pipe.Get(cctx, m.k.state())
	co := pipe.Exists(cctx, m.k.coord())
	des := pipe.HGetAll(cctx, m.k.desired(m.p.o.ID))
	_, _ = pipe.Exec(cctx)
	if err := st.Err(); errors.Is(err, redis.Nil) {
		return fmt.Errorf("%w: run %s has no state key in redis (redis restarted without persistence, or the run expired)", ErrStateLost, m.run)
	} else if err != nil {
		return nil // transient; the fence timer decides when this becomes fatal
	}
	// An aborted run is the reason, whatever became of this runner's lease:
	// after a Redis restart the coordinator writes the run back as ABORTED
	// while the leases are gone, and "lease expired" would hide why.
	if st.Val() == StateAborted {
		return m.abortedErr(cctx)
	}
	switch n, err := renew.Int(); {
	case err != nil:
		return nil
	case n == 1:
		m.renewed(sent)
	case n == 0:
		return fmt.Errorf("%w: its lease expired before it renewed", ErrRemoved)
	default:
		return fmt.Errorf("%w: stale generation %d", ErrRemoved, m.appliedGen)
	}
	switch st.Val() {
	case StateDone:
		m.cur.Phase = phaseStop
		m.stopped = true
		return nil
	}
	if co.Val() == 0 {
		if m.coordGone.IsZero() {
			m.coordGone = time.Now()
		} else if time.Since(m.coordGone) > m.p.o.CoordLostAfter {
			err := fmt.Errorf("%w: lease lt:{%s}:coord missing for over %s", ErrCoordinatorLost, m.run, m.p.o.CoordLostAfter)
			m.markAbandoned(ctx, err)
			return err
		}
	} else {
		m.coordGone = time.Time{}
	}
	if d, err := parseDesired(des.Val()); err == nil && d.Gen > 0 {
		m.apply(ctx, d)
	}
	return nil
}

// causeStateLost is the meta field abort_cause of a run that the
// coordinator aborted because the coordination state was lost.
const causeStateLost = "state_lost"

// stateLostError is a coordinator's state-lost reason as a worker reads it
// back from Redis: its text, and [errors.Is] ErrStateLost.
type stateLostError struct{ why string }

func (e *stateLostError) Error() string {
	if e.why == "" {
		return ErrStateLost.Error()
	}
	return e.why
}

func (e *stateLostError) Is(target error) bool { return target == ErrStateLost }

// abortedErr is why this runner leaves an ABORTED run: [ErrAborted] with
// the coordinator's reason, and [ErrStateLost] too when that was the cause.
func (m *member) abortedErr(ctx context.Context) error {
	meta, err := m.p.rdb.HMGet(ctx, m.k.meta(), "abort_reason", "abort_cause").Result()
	if err != nil {
		return ErrAborted
	}
	why, _ := meta[0].(string)
	if cause, _ := meta[1].(string); cause == causeStateLost {
		return fmt.Errorf("%w: %w", ErrAborted, &stateLostError{why})
	}
	if why != "" {
		return fmt.Errorf("%w: %s", ErrAborted, why)
	}
	return ErrAborted
}

// markAbandoned records that the run's coordinator is gone: the run becomes
// ABORTED with the reason and its keys expire in an hour, so `cluster
// status` stops showing it as RUNNING. Any worker may do it; it is
// idempotent.
func (m *member) markAbandoned(ctx context.Context, why error) {
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	reason := "the coordinator was lost: its lease expired (noticed by " + m.p.o.ID + ")"
	if ok, err := abortRun(cctx, m.p.rdb, m.k, 0, "abort_reason", reason); err == nil && ok {
		expireRun(cctx, m.p.rdb, m.k)
		m.logf("marked the run ABORTED: %v", why)
	}
}

func (m *member) statusFields() map[string]any {
	cursor, _ := m.cmdCursor.Load().(string)
	return map[string]any{
		"phase": m.cur.Phase, "applied_gen": m.appliedGen, "cmd_cursor": cursor,
		"target_vus": 0, "active_vus": 0, "cpu_pct": strconv.FormatFloat(m.cpuPct, 'f', 1, 64),
		"clock_offset_ms": m.clock.offset.Milliseconds(), "rtt_us": m.clock.rtt.Microseconds(),
		"last_seq": m.ship.lastSeq(), "iters_dropped": m.ship.dropped(), "segments": segList(slices.Sorted(maps.Keys(m.segs))),
		// This heartbeat's instant on Redis's clock (for reports), and the
		// fence: this runner sends nothing once fence_ms has passed, on
		// its monotonic clock, since it sent its last acknowledged renewal.
		"hb_ms": m.clock.redisNow().UnixMilli(), "fence_ms": m.p.o.FenceAfter.Milliseconds(),
		// How long after it last saw a renewal the coordinator must wait
		// before this runner's share may move: its lease, which the
		// config keeps longer than its fence.
		"lease_ms": m.p.o.LeaseTTL.Milliseconds(),
		"sent":     m.sent.Load(),
	}
}

func segList(s []int) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func (m *member) sampleCPU() {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return
	}
	used := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	now := time.Now()
	if !m.cpuPrevAt.IsZero() {
		if wall := now.Sub(m.cpuPrevAt); wall > 0 {
			m.cpuPct = 100 * float64(used-m.cpuPrev) / float64(wall)
		}
	}
	m.cpuPrev, m.cpuPrevAt = used, now
}

// reconcile reads desired and applies it if it is newer.
func (m *member) reconcile(ctx context.Context) {
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	h, err := m.p.rdb.HGetAll(cctx, m.k.desired(m.p.o.ID)).Result()
	if err != nil {
		return
	}
	d, err := parseDesired(h)
	if err != nil {
		m.logf("ignore malformed desired state: %v", err)
		return
	}
	if d.Gen > 0 {
		m.apply(ctx, d)
	}
}

// apply converges on d unless it is stale: a lower term than seen, or a
// gen at or below applied_gen. Writing applied_gen to status is the ack.
func (m *member) apply(ctx context.Context, d desired) {
	if d.Term < m.maxTerm || d.Gen <= m.appliedGen {
		m.ignored.Add(1)
		return
	}
	if m.isFencedNow() {
		return
	}
	m.maxTerm = d.Term
	if len(d.Seq) > 0 {
		seq, err := segment.ParseSequence(d.Seq)
		if err != nil {
			m.logf("ignore desired gen %d: %v", d.Gen, err)
			m.ignored.Add(1)
			return
		}
		if m.seq != nil && !slices.Equal(m.seq.Bounds(), seq.Bounds()) {
			m.stopSegments(errors.New("segment sequence changed"))
			clear(m.ran)
		}
		m.seq = seq
	}
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	switch d.Phase {
	case phasePrepare:
		if c, err := measureClock(cctx, m.p.rdb, m.p.o.WallClock); err == nil {
			m.clock = c
		}
		// The clock may have taken the whole budget (a slow Redis, a
		// saturated machine): saying "prepared" gets its own, or the
		// run would wait for this worker until its barrier timeout.
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		_, _ = m.p.rdb.Pipelined(cctx, func(pipe redis.Pipeliner) error {
			pipe.HSet(cctx, m.k.ready(), m.p.o.ID, d.Gen)
			pipe.ExpireNX(cctx, m.k.ready(), time.Duration(m.ttl)*time.Second)
			m.event(cctx, pipe, "prepared", d.Gen, nil)
			return nil
		})
	case phaseRun:
		want := map[int]bool{}
		for _, i := range d.Segments {
			if m.seq != nil && i >= 0 && i < m.seq.Len() {
				want[i] = true
			}
		}
		for i, sr := range m.segs {
			if !want[i] {
				sr.cancel(errors.New("segment reassigned away"))
				<-sr.done
				delete(m.segs, i)
			}
		}
		for i := range want {
			if m.segs[i] == nil && !m.ran[i] {
				m.startSegment(i, d.StartAtMs, d.Prior[i])
				m.stopped = false // it reports "stopped" again when this one ends
			}
		}
	case phaseStop:
		m.stopSegments(errors.New("run stopped by the coordinator"))
		if !m.stopped && m.hadSegs {
			m.flushAndStopped(ctx, "stopped")
		}
		m.stopped = true
	}
	m.appliedGen = d.Gen
	m.shipGen.Store(d.Gen)
	m.cur = d
	m.p.rdb.HSet(cctx, m.k.status(m.p.o.ID), m.statusFields())
}

func (m *member) isFencedNow() bool {
	m.fenceMu.Lock()
	defer m.fenceMu.Unlock()
	return m.isFenced
}

func (m *member) startSegment(i int, startAtMs, prior int64) {
	sctx, cancel := context.WithCancelCause(m.loadCtx)
	// The run's start is converted once: a later re-measurement of the
	// clock (after Redis's clock stepped) must not move the plan of a
	// share this runner takes over.
	if m.startLocal.IsZero() || m.startMs != startAtMs {
		m.startMs, m.startLocal = startAtMs, m.clock.local(startAtMs)
	}
	startAt := m.startLocal
	off := time.Duration(0)
	if now := time.Now(); now.After(startAt) {
		off = now.Sub(startAt)
	}
	a := Assignment{
		Run: m.run, Spec: m.spec, Job: m.job, Step: m.step, Index: i, Range: m.seq.Segment(i), Sequence: m.seq,
		Owns: m.seq.OwnsFunc(i), ScaleVUs: m.seq.ScaleFunc(i),
		StartAt: startAt, Offset: off, Duration: m.duration, Sink: m.ship,
		Worker: m.p.o.ID, Lease: m.leaseValid, Prior: prior,
		Rows: NewRowClaims(m.p.rdb, m.run, i, m.p.o.ID, m.ttl), Segments: m.seq.Len(),
	}
	sr := &segRun{idx: i, cancel: cancel, done: make(chan struct{})}
	m.segs[i] = sr
	m.hadSegs = true
	m.logf("segment %d (%s) starts at plan offset %s", i, a.Range, off.Round(time.Millisecond))
	m.segWG.Add(1)
	go func() {
		defer m.segWG.Done()
		sr.err = m.p.o.Runner.RunSegment(sctx, a)
		cancel(nil)
		close(sr.done)
		select {
		case m.segDone <- sr:
		case <-m.quit:
		}
	}()
}

func (m *member) stopSegments(cause error) {
	for i, sr := range m.segs {
		sr.cancel(cause)
		<-sr.done
		delete(m.segs, i)
	}
}

// event XADDs one worker→coordinator event.
func (m *member) event(ctx context.Context, pipe redis.Pipeliner, typ string, gen int64, extra map[string]any) {
	v := map[string]any{"type": typ, "w": m.p.o.ID, "g": gen}
	maps.Copy(v, extra)
	pipe.XAdd(ctx, &redis.XAddArgs{Stream: m.k.events(), MaxLen: eventsCap, Approx: true, Values: v})
	pipe.ExpireNX(ctx, m.k.events(), time.Duration(m.ttl)*time.Second)
}

// segmentFailed tells the coordinator that segment i could not run (for
// example this runner's policy refused the target), so it fails the run
// with the reason instead of finishing short of the plan.
func (m *member) segmentFailed(ctx context.Context, i int, err error) {
	msg := err.Error()
	if len(msg) > maxErrLen {
		// Cut between words: a secret the message quotes (the job's
		// masker hides it in the step log) must not be cut into a
		// prefix no masker recognises.
		cut := strings.LastIndexAny(msg[:maxErrLen+1], " \t\n")
		if cut <= 0 {
			cut = maxErrLen
		}
		msg = msg[:cut] + " …"
	}
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	_, _ = m.p.rdb.Pipelined(cctx, func(pipe redis.Pipeliner) error {
		m.event(cctx, pipe, evSegmentFailed, m.appliedGen, map[string]any{"seg": i, "error": msg})
		return nil
	})
}

// flushAndStopped ships the final metrics, then emits typ (stopped/error).
func (m *member) flushAndStopped(ctx context.Context, typ string) {
	cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if err := m.ship.flush(cctx); err != nil {
		m.logf("final metrics flush: %v", err)
	}
	_, _ = m.p.rdb.Pipelined(cctx, func(pipe redis.Pipeliner) error {
		m.event(cctx, pipe, typ, m.appliedGen, nil)
		return nil
	})
	m.stopped = true
}

// doAbandon hands the segments back: stop load, flush metrics, XADD
// abandoned (the coordinator then reaps resources and reassigns), DEL alive.
func (m *member) doAbandon(ctx context.Context, why string) {
	m.stopKeeping()
	segs := slices.Sorted(maps.Keys(m.segs))
	if len(segs) == 0 {
		segs = m.cur.Segments
	}
	m.stopSegments(errors.New(why))
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := m.ship.flush(cctx); err != nil {
		m.logf("final metrics flush: %v", err)
	}
	_, err := m.p.rdb.Pipelined(cctx, func(pipe redis.Pipeliner) error {
		m.event(cctx, pipe, "abandoned", m.appliedGen, map[string]any{"segments": segList(segs), "reason": why})
		pipe.Del(cctx, m.k.alive(m.p.o.ID))
		return nil
	})
	if err != nil {
		m.logf("abandon: %v (the coordinator will notice the expired lease instead)", err)
	} else {
		m.logf("abandoned segments %v: %s", segs, why)
	}
}

func (m *member) delAlive(ctx context.Context) {
	m.stopKeeping()
	cctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	m.p.rdb.Del(cctx, m.k.alive(m.p.o.ID))
}

// readCommands is the notification path: a blocking XREAD on this worker's
// cmd stream and the run's bcast stream, resuming from its cursors after
// any error. Envelopes carrying a desired state are forwarded; others ask
// the loop to re-read desired.
func (m *member) readCommands(ctx context.Context, rc *redis.Client, out chan<- *desired) {
	cmdCur, bcCur := "0", "0"
	var retry readRetry
	for ctx.Err() == nil {
		res, err := rc.XRead(ctx, &redis.XReadArgs{
			Streams: []string{m.k.cmd(m.p.o.ID), m.k.bcast(), cmdCur, bcCur}, Block: 2 * time.Second, Count: 64,
		}).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			retry.wait(ctx) // back off a broken connection
			continue
		}
		retry.reset()
		for _, s := range res {
			for _, msg := range s.Messages {
				if s.Stream == m.k.bcast() {
					bcCur = msg.ID
				} else {
					cmdCur = msg.ID
					m.cmdCursor.Store(cmdCur)
				}
				var e envelope
				raw, _ := msg.Values["e"].(string)
				if json.Unmarshal([]byte(raw), &e) != nil {
					continue
				}
				var d *desired
				if e.Payload != nil {
					d = e.Payload
				}
				select {
				case out <- d:
				case <-ctx.Done():
					return
				}
			}
		}
	}
}

func (m *member) appliedGenForShip() int64 { return m.shipGen.Load() }

// maxLateFlush bounds how long a runner that left a run keeps trying to
// ship the metrics it could not send.
const maxLateFlush = 10 * time.Minute

// lateFlush runs after the loop has ended (the shipper's writer has
// exited). If the runner left holding metrics it could not ship (it was
// cut off from Redis and fenced itself), it retries every heartbeat for
// as long as the plan lasts (at most maxLateFlush): a worker that comes
// back while the run goes on still has the traffic it really sent counted.
func (m *member) lateFlush(ctx context.Context) {
	if m.ship == nil || !m.ship.unsent() {
		return
	}
	deadline := time.Now().Add(min(m.duration, maxLateFlush))
	t := time.NewTicker(m.p.o.Heartbeat)
	defer t.Stop()
	for {
		cctx, cancel := context.WithTimeout(ctx, m.p.o.Heartbeat)
		err := m.ship.send(cctx, true)
		cancel()
		if err == nil {
			m.logf("shipped the metrics it held while cut off from redis")
			return
		}
		if time.Now().After(deadline) {
			m.logf("gave up shipping the metrics it held: %v", err)
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
