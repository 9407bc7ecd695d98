package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/forgeload/forgeload/internal/pkg/cluster/segment"
	"github.com/forgeload/forgeload/internal/pkg/cluster/snapshot"
)

// Defaults for [Run] and [CoordOptions].
const (
	DefaultJoinTimeout    = 60 * time.Second
	DefaultBarrierTimeout = 120 * time.Second
	DefaultStartLead      = 2 * time.Second
	DefaultSweepInterval  = time.Second
	DefaultStopTimeout    = 10 * time.Second
	DefaultSecondGrace    = 3 * time.Second
	DefaultMaxSegments    = 2
	// DefaultCoordLease is the coordinator's lease in Redis, renewed every
	// seventh of it. A coordinator that cannot renew it for this long fails
	// the run: by then its lease may have expired and the workers are
	// leaving by themselves.
	DefaultCoordLease = 7 * time.Second
	claimTTL          = 30 * time.Second
	// stepTimeout bounds each round of Redis calls in the run loop, so a
	// partition (silence, no reset) cannot hold the loop past its checks.
	stepTimeout = 2 * time.Second
	// finalReadTries bounds the tries of the final metrics read; with
	// readStreams' backoff they span some 3 s.
	finalReadTries = 5
)

// ErrRedisUnreachable: the coordinator could not reach Redis for longer
// than its lease; the run is over, whatever Redis does later.
var ErrRedisUnreachable = errors.New("coordination lost: redis unreachable")

// evSegmentFailed is the event a worker emits when its SegmentRunner
// returned an error; the coordinator fails the run with it. maxErrLen
// bounds the message.
const (
	evSegmentFailed = "segment_failed"
	maxErrLen       = 500
)

// Run is one distributed load test as the coordinator runs it.
type Run struct {
	// Spec is the load spec (opaque JSON) handed to every SegmentRunner.
	Spec []byte
	// Job and Step name the workflow job and the step the run belongs to
	// ("" for none), secrets already masked: every worker gets them with
	// its segments ([Assignment.Job]) to label its share's metrics. They
	// travel beside Spec in the run's meta (fields job and step), which
	// runners that predate them ignore.
	Job, Step string
	// Duration is the plan's timeline length including graceful stop.
	Duration time.Duration
	// Workers is the number of segments and of workers wanted (required, ≥ 1).
	Workers int
	// MinWorkers is the fewest workers the run starts with; default Workers.
	MinWorkers int
	// Spares is how many extra runners join without a segment, ready to take
	// over a lost one at once; default 0.
	Spares int
	// JoinTimeout bounds recruitment; default 60s.
	JoinTimeout time.Duration
	// OnWorkerLoss is the loss policy; default [LossReassign].
	OnWorkerLoss LossPolicy
	// Labels are required on every recruited runner.
	Labels []string
	// Weighted sizes segments by the workers' advertised capacity instead
	// of equally.
	Weighted bool
	// MaxSegments is how many segments one worker may hold after taking
	// over; default 2.
	MaxSegments int
	// EndsEarly says the run may be over before Duration (a closed-model
	// total: each segment sends its share and stops). The run then ends
	// as soon as every live worker that holds a segment has run it to its
	// end and shipped its last metrics, instead of at Duration.
	EndsEarly bool
	// Grace is the tail of Duration kept for requests still in flight when
	// the schedule ends (the load's graceful stop). Once Duration−Grace has
	// passed, the run ends as soon as every live worker that holds a
	// segment has stopped and shipped its last metrics, instead of waiting
	// out the rest of Grace.
	Grace time.Duration
}

// CoordOptions tunes [Coordinate]. Zero fields take the documented defaults.
type CoordOptions struct {
	// RunID names the run; default a new unique id.
	RunID string
	// Coordinator is this runner's id, recorded in the coordinator lease;
	// default "coordinator".
	Coordinator string
	// StartLead is the least time between the barrier and start_at; the
	// lead is max(StartLead, 5 × the largest worker RTT). Default 2s.
	StartLead time.Duration
	// BarrierTimeout bounds the wait for every worker to prepare; default 120s.
	BarrierTimeout time.Duration
	// SweepInterval is how often dead workers are looked for; default 1s
	// (config cluster.sweep_interval).
	SweepInterval time.Duration
	// StopTimeout bounds the wait for final metrics after the plan ends; default 10s.
	StopTimeout time.Duration
	// SecondGrace is how long a run second waits for late workers before it
	// is closed for live progress; default 3s. Late data still counts in totals.
	SecondGrace time.Duration
	// Observer receives cluster metrics; nil means none.
	Observer Observer
	// Logf receives progress lines (joins, start time, reassignments); nil discards.
	Logf func(format string, args ...any)
	// HeadroomCPU is the CPU percentage (100 = one core) at or above which
	// a live worker is not given a lost segment; default 70.
	HeadroomCPU float64
	// OnSecond receives each closed run second, merged across workers, for
	// live progress. It is called from Coordinate's goroutine.
	OnSecond func(*snapshot.Snapshot)
	// Lease is the coordinator lease (lt:{R}:coord), renewed every
	// seventh of it; default [DefaultCoordLease] (cluster.coordinator_lease).
	// When no renewal has succeeded for Lease, Coordinate fails with
	// [ErrRedisUnreachable]. Workers leave once it has been missing for
	// their CoordLostAfter.
	Lease time.Duration
}

// Outcome is the merged result of a distributed run.
type Outcome struct {
	RunID string
	// StartAt is start_at on Redis's clock.
	StartAt time.Time
	// Seconds holds one merged snapshot per run second, in order.
	Seconds []*snapshot.Snapshot
	// Total is the cumulative merge of every worker's every second.
	Total *snapshot.Snapshot
	// Workers has one row per worker that joined.
	Workers []WorkerRow
	// Reassignments counts segments moved to a new owner.
	Reassignments int
	// Degraded is true when some segment was left without an owner.
	Degraded bool
	// DuplicateMetrics counts metric entries dropped as duplicates.
	DuplicateMetrics int
	// Ended is the plan time at which the run ended: Run.Duration, or
	// for an EndsEarly run finished before it, when the coordinator saw
	// the last worker finish (within its read of the event, a fraction
	// of a second late at most on a quiet machine).
	Ended time.Duration
}

// WorkerRow is one worker's line in the summary.
type WorkerRow struct {
	ID, Host string
	// Segments lists every segment index the worker held.
	Segments []int
	// Samples is the number of latency samples it recorded; Rate is
	// Samples per second of plan.
	Samples int64
	Rate    float64
	// Dropped sums its snapshots' dropped arrivals.
	Dropped int64
	// CPUPct is its last reported process CPU (100 = one core).
	CPUPct float64
	// ClockOffset is its measured offset to Redis's clock.
	ClockOffset time.Duration
	// Lost is set when it died or abandoned before the end.
	Lost   bool
	Reason string
	// LastSecond is the last run second it shipped metrics for (-1: none).
	// For a lost worker, what it sent from LastSecond+1 until LostAt may
	// be missing from the result (a kill -9 loses at most about 2 s: the
	// second being recorded and the one being shipped); a worker that comes
	// back from a partition ships what it held, and it counts if it
	// arrives before the run ends.
	LastSecond int
	// LostAt is the plan time after which it can have sent nothing: its
	// last heartbeat plus its fence, or when it was found lost if earlier
	// (an abandon). LostShare is the fraction of the plan (sum of segment
	// lengths) it held then.
	LostAt    time.Duration
	LostShare float64
	// Total is the merge of everything it shipped.
	Total *snapshot.Snapshot
	// SentAtLeast is, for a lost worker, how many requests its last
	// status said it had sent (passed its lease check, right before each
	// send): that many went out or failed, even when its metrics never
	// came, but for a request cancelled between the check and the send
	// and, once a closed-model share is all sent, one last check per VU.
	SentAtLeast int64
}

type workerInfo struct {
	id       string
	host     string
	capacity int
	segs     map[int]bool
	everSegs map[int]bool
	lost     bool
	reason   string
	lostAtMs int64   // plan time when found lost
	lostFrac float64 // share of the plan it held then
	stopped  bool
	final    bool
	failed   bool // stopped on an error, its share unfinished

	// The lease as the coordinator judges it, on its own monotonic
	// clock: renewals is the worker's renewal count as last read, seenAt
	// when a read first returned it (after Redis had run that renewal, so
	// after the worker sent it), and leaseWait the worker's lease. The
	// worker stops by seenAt + its fence; its share may move once
	// leaseWait has passed since seenAt with no new renewal.
	renewals  string
	seenAt    time.Time
	leaseWait time.Duration
	fence     time.Duration
	// sentAtLeast: a lost worker's "sent" as its last status gave it.
	sentAtLeast int64
}

type coordinator struct {
	rdb     *redis.Client
	reader  *redis.Client
	retry   readRetry // paces readStreams after errors
	def     Run
	o       CoordOptions
	run     string
	k       runKeys
	term    int64
	ttl     time.Duration
	redisID string

	workers map[string]*workerInfo
	order   []string
	owners  map[int]string // seg → "wid:gen"
	seq     *segment.Sequence
	startAt int64
	// startLocal is startAt on this host's monotonic clock: the plan's
	// time, and so the run's end, is counted on it, never on Redis's.
	startLocal time.Time
	out        *Outcome
	mg         *merger
	claimed    []string
	evCursor   string
	mtCursor   string
	nextSec    int
	secSeen    map[int]time.Time
	leaseErr   chan error
	prior      map[int]int64 // seg → requests reported by its earlier owners
	// endedEarly: an EndsEarly run was finished before its Duration.
	endedEarly bool

	// Redis reachability, written by renewLease and the drive goroutine.
	base     time.Time    // monotonic origin of okAt
	okAt     atomic.Int64 // nanoseconds after base of the last successful call
	lastErr  atomic.Pointer[error]
	saidLost bool          // drive goroutine: the "cannot reach Redis" line was logged
	downFrom time.Duration // drive goroutine: okAt when that line was logged
}

// Coordinate runs r as one distributed test: it creates the run,
// recruits runners from the pool, splits the plan into segments, starts
// every worker at one start_at on Redis's clock, reaps and reassigns lost
// workers, merges their metrics and finalizes. It returns the merged
// outcome, or an error naming what failed (too few workers joined, Redis
// restarted or unreachable, a worker lost under on_worker_loss abort, ctx
// cancelled), in which case the run is marked ABORTED so every worker
// stops. When ctx was cancelled after the start, the outcome of what the
// workers shipped is returned with the error.
func Coordinate(ctx context.Context, rdb *redis.Client, r Run, o CoordOptions) (*Outcome, error) {
	if err := validateRun(&r); err != nil {
		return nil, err
	}
	if o.RunID == "" {
		o.RunID = newRunID()
	}
	if strings.ContainsAny(o.RunID, "{}") {
		return nil, fmt.Errorf("coordinate: run id %q must not contain braces", o.RunID)
	}
	if o.Coordinator == "" {
		o.Coordinator = "coordinator"
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.StartLead, DefaultStartLead)
	def(&o.BarrierTimeout, DefaultBarrierTimeout)
	def(&o.SweepInterval, DefaultSweepInterval)
	def(&o.StopTimeout, DefaultStopTimeout)
	def(&o.SecondGrace, DefaultSecondGrace)
	def(&o.Lease, DefaultCoordLease)
	if o.HeadroomCPU <= 0 {
		o.HeadroomCPU = 70
	}
	if o.Observer == nil {
		o.Observer = nopObserver{}
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	opt := cloneOptions(rdb)
	opt.PoolSize = 4
	c := &coordinator{
		rdb: redis.NewClient(opt), def: r, o: o, run: o.RunID, k: runKeys(o.RunID), term: 1,
		ttl:     r.Duration + defaultRunTTLPad*time.Second,
		workers: map[string]*workerInfo{}, owners: map[int]string{}, mg: newMerger(), prior: map[int]int64{},
		evCursor: "0", mtCursor: "0", secSeen: map[int]time.Time{}, leaseErr: make(chan error, 1),
		out: &Outcome{RunID: o.RunID}, base: time.Now(),
	}
	ropt := *opt
	ropt.PoolSize = 2
	c.reader = redis.NewClient(&ropt)
	defer c.rdb.Close()
	defer c.reader.Close()

	if err := c.create(ctx); err != nil {
		return nil, err
	}
	leaseCtx, stopLease := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); c.renewLease(leaseCtx) }()
	defer func() { stopLease(); wg.Wait() }()

	out, err := c.drive(ctx)
	if err != nil {
		err = c.stopCause(ctx, err)
		c.abort(ctx, err)
		if ctx.Err() != nil && c.startAt != 0 {
			return c.partial(ctx), err
		}
		return nil, err
	}
	return out, nil
}

// stopCause names why a run stopped by its context stopped: the
// context's cause (an abort_on_fail breach on the merged seconds, a cancel
// from the forge) rather than "context canceled". err is returned as it
// is when ctx is not done or was cancelled without a cause.
func (c *coordinator) stopCause(ctx context.Context, err error) error {
	cause := context.Cause(ctx)
	if ctx.Err() == nil || cause == nil || errors.Is(cause, ctx.Err()) {
		return err
	}
	return &stopError{run: c.run, cause: cause, ctxErr: ctx.Err()}
}

// stopError is a run stopped by its context, named by the context's
// cause; it unwraps to both the cause and the context's error.
type stopError struct {
	run           string
	cause, ctxErr error
}

func (e *stopError) Error() string   { return "run " + e.run + ": stopped: " + e.cause.Error() }
func (e *stopError) Unwrap() []error { return []error{e.cause, e.ctxErr} }

// partial is the outcome of a run cancelled after its start: it waits a
// little (at most partialWait) for the workers' final metrics, which they
// ship as they stop on the abort, and merges what it has.
func (c *coordinator) partial(ctx context.Context) *Outcome {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), partialWait)
	defer cancel()
	for dctx.Err() == nil {
		_, _ = c.readStreams(dctx, 200*time.Millisecond)
		final := true
		for _, w := range c.workers {
			if !w.lost && len(w.everSegs) > 0 && !w.final {
				final = false
			}
		}
		if final {
			break
		}
	}
	c.buildOutcome(dctx)
	return c.out
}

// partialWait bounds how long a cancelled run waits for its workers'
// final metrics. A worker's engine cancels its requests in flight within
// 0.5 s of the abort and waits at most 1 s more for them, so their metrics
// are in by then; the bound keeps a cancelled distributed step within about
// 2 s of the cancel, as a local one.
const partialWait = 1500 * time.Millisecond

func validateRun(p *Run) error {
	if p.Workers < 1 {
		return fmt.Errorf("coordinate: distributed.workers = %d, want at least 1", p.Workers)
	}
	if p.MinWorkers == 0 {
		p.MinWorkers = p.Workers
	}
	if p.MinWorkers < 1 || p.MinWorkers > p.Workers {
		return fmt.Errorf("coordinate: distributed.min_workers = %d, want 1..workers (%d)", p.MinWorkers, p.Workers)
	}
	if p.Duration <= 0 {
		return fmt.Errorf("coordinate: plan duration %s, want > 0; set duration in the load config", p.Duration)
	}
	if p.JoinTimeout <= 0 {
		p.JoinTimeout = DefaultJoinTimeout
	}
	if p.MaxSegments <= 0 {
		p.MaxSegments = DefaultMaxSegments
	}
	switch p.OnWorkerLoss {
	case "":
		p.OnWorkerLoss = LossReassign
	case LossReassign, LossContinue, LossAbort:
	default:
		return fmt.Errorf("coordinate: distributed.on_worker_loss = %q, want reassign, continue or abort", p.OnWorkerLoss)
	}
	if p.Spares < 0 {
		return fmt.Errorf("coordinate: spares = %d, want >= 0", p.Spares)
	}
	return nil
}

func newRunID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return strconv.FormatInt(time.Now().UnixMilli(), 36) + hex.EncodeToString(b[:])
}

func (c *coordinator) logf(format string, args ...any) {
	c.o.Logf("cluster run %s: "+format, append([]any{c.run}, args...)...)
}

func redisRunID(ctx context.Context, rdb redis.Cmdable) (string, error) {
	info, err := rdb.Info(ctx, "server").Result()
	if err != nil {
		return "", fmt.Errorf("read redis INFO server: %w", err)
	}
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "run_id:"); ok {
			return v, nil
		}
	}
	return "", errors.New("read redis INFO server: no run_id field")
}

func (c *coordinator) create(ctx context.Context) error {
	rid, err := redisRunID(ctx, c.rdb)
	if err != nil {
		return fmt.Errorf("create run %s: %w", c.run, err)
	}
	c.redisID = rid
	ttlSec := int64(c.ttl / time.Second)
	args := []any{ownerValue(c.o.Coordinator, c.term), c.o.Lease.Milliseconds(), ttlSec,
		"plan", string(c.def.Spec), "duration_ms", c.def.Duration.Milliseconds(),
		"expected_workers", c.def.Workers, "min_workers", c.def.MinWorkers,
		"redis_run_id", rid, "ttl", ttlSec, "coordinator", c.o.Coordinator,
		"on_worker_loss", string(c.def.OnWorkerLoss), "term", c.term,
	}
	if c.def.Job != "" {
		args = append(args, "job", c.def.Job)
	}
	if c.def.Step != "" {
		args = append(args, "step", c.def.Step)
	}
	if _, err := createRunScript.Run(ctx, c.rdb, []string{c.k.state(), c.k.coord(), c.k.gen(), c.k.meta()}, args...).Int64(); err != nil {
		return scriptErr("create run "+c.run, err)
	}
	return nil
}

func (c *coordinator) renewLease(ctx context.Context) {
	every := c.o.Lease / 7
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			cctx, cancel := context.WithTimeout(ctx, every)
			sent := time.Since(c.base)
			n, err := renewLeaseScript.Run(cctx, c.rdb, []string{c.k.coord()}, ownerValue(c.o.Coordinator, c.term), c.o.Lease.Milliseconds()).Int()
			cancel()
			if err != nil && ctx.Err() == nil {
				c.lastErr.Store(&err)
			} else if err == nil && n == 1 {
				c.reached(sent)
			}
			if err == nil && n == 0 {
				select {
				case c.leaseErr <- fmt.Errorf("%w: the coordinator lease lt:{%s}:coord is gone (redis restarted or the lease expired)", ErrStateLost, c.run):
				default:
				}
				return
			}
		}
	}
}

// reached records a successful Redis call sent at sent (after c.base).
func (c *coordinator) reached(sent time.Duration) {
	for {
		old := c.okAt.Load()
		if int64(sent) <= old || c.okAt.CompareAndSwap(old, int64(sent)) {
			return
		}
	}
}

// reachable fails with [ErrRedisUnreachable] once no call has reached
// Redis for the coordinator lease, and logs the first sign of trouble.
func (c *coordinator) reachable() error {
	since := time.Since(c.base) - time.Duration(c.okAt.Load())
	if since <= min(c.o.Lease/7+stepTimeout, c.o.Lease/2) {
		if c.saidLost {
			c.saidLost = false
			// The outage: from the last call that got through before it
			// to the first one after it.
			outage := time.Duration(c.okAt.Load()) - c.downFrom
			c.logf("reached Redis again after %s", outage.Round(100*time.Millisecond))
		}
		return nil
	}
	last := "no answer"
	if e := c.lastErr.Load(); e != nil {
		last = (*e).Error()
	}
	if since > c.o.Lease {
		return fmt.Errorf("%w: no call reached Redis for %s (last error: %s); the coordinator lease has expired, so every worker stops its share by itself", ErrRedisUnreachable, since.Round(100*time.Millisecond), last)
	}
	if !c.saidLost {
		c.saidLost = true
		c.downFrom = time.Duration(c.okAt.Load())
		c.logf("cannot reach Redis for %s (%s); the run fails if this lasts %s", since.Round(100*time.Millisecond), last, c.o.Lease)
	}
	return nil
}

func (c *coordinator) drive(ctx context.Context) (*Outcome, error) {
	if err := c.recruit(ctx); err != nil {
		return nil, err
	}
	if err := c.prepare(ctx); err != nil {
		return nil, err
	}
	if err := c.start(ctx); err != nil {
		return nil, err
	}
	if err := c.runLoop(ctx); err != nil {
		return nil, err
	}
	return c.finalize(ctx)
}

// recruit offers the run to idle runners and waits for joins.
func (c *coordinator) recruit(ctx context.Context) error {
	need := c.def.Workers + c.def.Spares
	deadline := time.Now().Add(c.def.JoinTimeout)
	offered := map[string]bool{}
	var available []string
	nextScan := time.Time{}
	for {
		if time.Now().After(nextScan) {
			var err error
			if available, err = c.offer(ctx, offered, need); err != nil {
				return err
			}
			nextScan = time.Now().Add(time.Second)
		}
		joined, err := c.rdb.HGetAll(ctx, c.k.workers()).Result()
		if err != nil {
			return fmt.Errorf("run %s: read joined workers: %w", c.run, err)
		}
		if len(joined) >= need || time.Now().After(deadline) {
			if len(joined) < c.def.MinWorkers {
				if len(available) == 0 {
					available = []string{"none"}
				}
				return fmt.Errorf("only %d of %d workers joined within %s (min_workers %d); available runners: %s",
					len(joined), c.def.Workers, fmtDur(c.def.JoinTimeout), c.def.MinWorkers, strings.Join(available, ", "))
			}
			for id, info := range joined {
				var wi struct {
					Host     string `json:"host"`
					Capacity int    `json:"capacity"`
				}
				_ = json.Unmarshal([]byte(info), &wi)
				c.workers[id] = &workerInfo{id: id, host: wi.Host, capacity: max(wi.Capacity, 1), segs: map[int]bool{}, everSegs: map[int]bool{}}
			}
			c.order = slices.SortedFunc(maps.Keys(c.workers), func(a, b string) int {
				if d := c.workers[b].capacity - c.workers[a].capacity; d != 0 {
					return d
				}
				return strings.Compare(a, b)
			})
			c.logf("%d workers joined: %s", len(c.order), strings.Join(c.order, ", "))
			c.o.Observer.SetWorkers(len(c.order))
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("run %s: recruiting workers: %w", c.run, ctx.Err())
		case <-time.After(100 * time.Millisecond): // poll joins
		}
	}
}

func fmtDur(d time.Duration) string {
	if d%time.Second == 0 {
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	}
	return d.String()
}

// offer claims and invites idle runners until need offers are out. It
// returns the ids of all present runners, for error messages.
func (c *coordinator) offer(ctx context.Context, offered map[string]bool, need int) ([]string, error) {
	ids, err := c.rdb.SMembers(ctx, runnersKey).Result()
	if err != nil {
		return nil, fmt.Errorf("run %s: list runners (%s): %w", c.run, runnersKey, err)
	}
	slices.Sort(ids)
	pipe := c.rdb.Pipeline()
	cmds := make([]*redis.MapStringStringCmd, len(ids))
	for i, id := range ids {
		cmds[i] = pipe.HGetAll(ctx, presenceKey(id))
	}
	_, _ = pipe.Exec(ctx)
	type cand struct {
		id  string
		cap int
		own bool
	}
	var cands []cand
	var present []string
	for i, id := range ids {
		h := cmds[i].Val()
		if len(h) == 0 {
			c.rdb.SRem(ctx, runnersKey, id) // prune a stale index entry
			continue
		}
		present = append(present, id)
		if offered[id] || !hasLabels(h["labels"], c.def.Labels) {
			continue
		}
		capacity, _ := strconv.Atoi(h["capacity"])
		busy := 0
		if h["busy_run"] != "" {
			busy = len(strings.Split(h["busy_run"], ","))
		}
		// The coordinator's own runner always takes part (it accepts its
		// own offer whatever its capacity); others need a free slot.
		own := id == c.o.Coordinator
		if !own && busy >= capacity {
			continue
		}
		cands = append(cands, cand{id, capacity, own})
	}
	slices.SortStableFunc(cands, func(a, b cand) int {
		if a.own != b.own {
			if a.own {
				return -1
			}
			return 1
		}
		return b.cap - a.cap
	})
	for _, cd := range cands {
		if len(offered) >= need {
			break
		}
		ok, err := c.rdb.SetNX(ctx, claimKey(cd.id), c.run, claimTTL).Result()
		if err != nil || !ok {
			continue
		}
		offered[cd.id] = true
		c.claimed = append(c.claimed, cd.id)
		_, _ = c.rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
			pipe.XAdd(ctx, &redis.XAddArgs{Stream: inboxKey(cd.id), MaxLen: streamCap, Approx: true,
				Values: map[string]any{"type": "join", "run": c.run, "coord": c.o.Coordinator, "term": c.term}})
			// An offer is stale long before this; the inbox of a runner
			// that left the pool disappears by itself.
			pipe.Expire(ctx, inboxKey(cd.id), doneTTLSeconds*time.Second)
			return nil
		})
	}
	return present, nil
}

func hasLabels(have string, want []string) bool {
	hs := strings.Split(have, ",")
	for _, w := range want {
		if !slices.Contains(hs, w) {
			return false
		}
	}
	return true
}

// prepare plans segments, tells every worker, and waits at the barrier.
func (c *coordinator) prepare(ctx context.Context) error {
	n := min(len(c.order), c.def.Workers)
	owners := c.order[:n]
	var err error
	if c.def.Weighted {
		w := make([]int, n)
		for i, id := range owners {
			w[i] = c.workers[id].capacity
		}
		c.seq, err = segment.Weighted(w)
	} else {
		c.seq, err = segment.Equal(n)
	}
	if err != nil {
		return fmt.Errorf("run %s: plan segments: %w", c.run, err)
	}
	gen, err := c.rdb.Incr(ctx, c.k.gen()).Result()
	if err != nil {
		return fmt.Errorf("run %s: bump generation: %w", c.run, err)
	}
	segHash := map[string]any{}
	for i, id := range owners {
		c.workers[id].segs[i] = true
		c.workers[id].everSegs[i] = true
		c.owners[i] = ownerValue(id, gen)
		segHash[strconv.Itoa(i)] = c.seq.Segment(i).String()
	}
	_, err = c.rdb.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
		pipe.HSet(ctx, c.k.seg(), segHash)
		pipe.ExpireNX(ctx, c.k.seg(), c.ttl)
		for i, ov := range c.owners {
			pipe.HSet(ctx, c.k.segOwner(), strconv.Itoa(i), ov)
		}
		pipe.ExpireNX(ctx, c.k.segOwner(), c.ttl)
		for _, id := range c.order {
			c.sendDesired(ctx, pipe, id, cmdPrepare, desired{Gen: gen, Term: c.term, Phase: phasePrepare, Segments: c.segsOf(id), Seq: c.seq.Bounds()})
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("run %s: write segment plan: %w", c.run, err)
	}
	for i := range n {
		c.logf("segment %d %s → %s", i, c.seq.Segment(i), owners[i])
	}
	// Barrier: every worker has prepared for gen.
	deadline := time.Now().Add(c.o.BarrierTimeout)
	for {
		ready, err := c.rdb.HGetAll(ctx, c.k.ready()).Result()
		if err != nil {
			return fmt.Errorf("run %s: read barrier: %w", c.run, err)
		}
		var missing []string
		for _, id := range c.order {
			if g, _ := strconv.ParseInt(ready[id], 10, 64); g < gen {
				missing = append(missing, id)
			}
		}
		if len(missing) == 0 {
			return nil
		}
		for _, id := range missing {
			if n, err := c.rdb.Exists(ctx, c.k.alive(id)).Result(); err == nil && n == 0 {
				return fmt.Errorf("run %s: worker %s left before it prepared (its lease expired); no segment was started, retry the job", c.run, id)
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("run %s: workers %s did not prepare within %s (barrier_timeout)", c.run, strings.Join(missing, ", "), c.o.BarrierTimeout)
		}
		if err := c.checkRedis(ctx); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("run %s: waiting at the barrier: %w", c.run, ctx.Err())
		case <-time.After(50 * time.Millisecond): // poll the barrier
		}
	}
}

func (c *coordinator) segsOf(id string) []int {
	return slices.Sorted(maps.Keys(c.workers[id].segs))
}

// sendDesired writes desired first, then the command (notification).
func (c *coordinator) sendDesired(ctx context.Context, pipe redis.Pipeliner, id, typ string, d desired) {
	pipe.Del(ctx, c.k.desired(id))
	pipe.HSet(ctx, c.k.desired(id), d.hash())
	pipe.Expire(ctx, c.k.desired(id), c.ttl)
	e, _ := json.Marshal(envelope{Type: typ, CmdID: newRunID(), Run: c.run, Term: d.Term, Gen: d.Gen, SentAtMs: time.Now().UnixMilli(), Payload: &d})
	pipe.XAdd(ctx, &redis.XAddArgs{Stream: c.k.cmd(id), MaxLen: streamCap, Approx: true, Values: map[string]any{"e": string(e)}})
	pipe.ExpireNX(ctx, c.k.cmd(id), c.ttl)
}

func (c *coordinator) bcast(ctx context.Context, pipe redis.Cmdable, typ string, gen int64) {
	e, _ := json.Marshal(envelope{Type: typ, CmdID: newRunID(), Run: c.run, Term: c.term, Gen: gen, SentAtMs: time.Now().UnixMilli()})
	pipe.XAdd(ctx, &redis.XAddArgs{Stream: c.k.bcast(), MaxLen: streamCap, Approx: true, Values: map[string]any{"e": string(e)}})
	pipe.ExpireNX(ctx, c.k.bcast(), c.ttl)
}

// start computes start_at on Redis's clock and releases everyone.
func (c *coordinator) start(ctx context.Context) error {
	pipe := c.rdb.Pipeline()
	st := make([]*redis.StringCmd, len(c.order))
	for i, id := range c.order {
		st[i] = pipe.HGet(ctx, c.k.status(id), "rtt_us")
	}
	_, _ = pipe.Exec(ctx)
	maxRTT := time.Duration(0)
	for _, s := range st {
		if us, err := strconv.ParseInt(s.Val(), 10, 64); err == nil {
			maxRTT = max(maxRTT, time.Duration(us)*time.Microsecond)
		}
	}
	cl, err := measureClock(ctx, c.rdb, nil)
	if err != nil {
		return fmt.Errorf("run %s: %w", c.run, err)
	}
	lead := max(c.o.StartLead, 5*maxRTT)
	c.startAt = cl.redisNow().Add(lead).UnixMilli()
	c.startLocal = cl.local(c.startAt)
	c.out.StartAt = time.UnixMilli(c.startAt)
	ok, err := casState(ctx, c.rdb, c.k, StateRunning, StatePreparing)
	if err != nil {
		return err
	}
	if !ok {
		return c.lostOr(ctx, fmt.Errorf("run %s: state is not PREPARING at start", c.run))
	}
	gen, err := c.rdb.Incr(ctx, c.k.gen()).Result()
	if err != nil {
		return fmt.Errorf("run %s: bump generation: %w", c.run, err)
	}
	_, err = c.rdb.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
		pipe.Set(ctx, c.k.startAt(), c.startAt, c.ttl)
		for _, id := range c.order {
			c.sendDesired(ctx, pipe, id, cmdStart, desired{Gen: gen, Term: c.term, Phase: phaseRun, Segments: c.segsOf(id), Seq: c.seq.Bounds(), StartAtMs: c.startAt})
		}
		c.bcast(ctx, pipe, cmdStart, gen)
		return nil
	})
	if err != nil {
		return fmt.Errorf("run %s: release workers: %w", c.run, err)
	}
	c.logf("start_at %s (Redis clock, lead %s)", c.out.StartAt.UTC().Format(time.RFC3339Nano), lead)
	return nil
}

// lostOr returns the state-lost error if Redis restarted, else err.
func (c *coordinator) lostOr(ctx context.Context, err error) error {
	if lerr := c.checkRedis(ctx); lerr != nil {
		return lerr
	}
	return err
}

// checkRedis fails when Redis restarted or the run's state vanished.
func (c *coordinator) checkRedis(ctx context.Context) error {
	rid, err := redisRunID(ctx, c.rdb)
	if err == nil && rid != c.redisID {
		return fmt.Errorf("%w: redis restarted (run_id changed)", ErrStateLost)
	}
	select {
	case err := <-c.leaseErr:
		return err
	default:
	}
	if err != nil {
		return nil // unreachable for now; a later sweep decides
	}
	n, err := c.rdb.Exists(ctx, c.k.state()).Result()
	if err == nil && n == 0 {
		return fmt.Errorf("%w: run state key %s is gone", ErrStateLost, c.k.state())
	}
	return nil
}

// planNowMs is the plan's current instant as Redis-clock ms (startAt plus
// the time since the start on this host's monotonic clock): a step or a
// freeze of Redis's clock cannot move it.
func (c *coordinator) planNowMs() int64 {
	if c.startLocal.IsZero() { // not started
		return time.Now().UnixMilli()
	}
	return c.startAt + time.Since(c.startLocal).Milliseconds()
}

// runLoop watches events and metrics, sweeps for dead workers, and returns
// once the plan has ended and every live segment owner has stopped.
func (c *coordinator) runLoop(ctx context.Context) error {
	endMs := c.startAt + c.def.Duration.Milliseconds()
	var stopDeadline time.Time
	nextSweep := time.Now()
	for {
		began := time.Now()
		done, err := c.runStep(ctx, endMs, &nextSweep, &stopDeadline)
		if err != nil || done {
			return err
		}
		if ctx.Err() != nil {
			return fmt.Errorf("run %s: %w", c.run, ctx.Err())
		}
		if err := c.judgeReach(ctx, began); err != nil {
			return fmt.Errorf("run %s: %w", c.run, err)
		}
	}
}

// judgeReach is [coordinator.reachable] after a step that began at began.
// A step far longer than its calls' bound means this coordinator itself
// did not run (its process or host froze), and its calls then failed on
// their own expired deadlines, not because Redis was away: it asks Redis
// once more before judging, so a frozen coordinator is not reported as
// "redis unreachable" (if its lease ran out meanwhile, the lease renewal
// says so).
func (c *coordinator) judgeReach(ctx context.Context, began time.Time) error {
	if gap := time.Since(began); gap > stepTimeout+c.o.Lease/7 {
		pctx, cancel := context.WithTimeout(ctx, stepTimeout)
		sent := time.Since(c.base)
		err := c.rdb.Ping(pctx).Err()
		cancel()
		if err == nil {
			c.reached(sent)
			c.logf("this coordinator did not run for %s (its process or host stalled); Redis answers", gap.Round(100*time.Millisecond))
		}
	}
	return c.reachable()
}

// runStep is one round of the run loop, its Redis calls bounded by
// stepTimeout: read events and metrics, and every SweepInterval check
// Redis, sweep for dead workers and close finished seconds. done is true
// once the plan has ended and every live segment owner has stopped (or
// StopTimeout has passed).
func (c *coordinator) runStep(ctx context.Context, endMs int64, nextSweep, stopDeadline *time.Time) (done bool, err error) {
	sctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	if _, err := c.readStreams(sctx, 200*time.Millisecond); err != nil {
		return false, err
	}
	// A plan that ends early is checked at once when its last worker
	// finishes, so the run's end is measured to within this read.
	finished := (c.def.EndsEarly || c.def.Grace > 0) && c.finished()
	if !(finished && c.def.EndsEarly) && !time.Now().After(*nextSweep) {
		return false, nil
	}
	*nextSweep = time.Now().Add(c.o.SweepInterval)
	if err := c.checkRedis(sctx); err != nil {
		return false, err
	}
	sent := time.Since(c.base)
	if terr := c.rdb.Ping(sctx).Err(); terr != nil {
		if ctx.Err() == nil {
			c.lastErr.Store(&terr)
		}
		return false, nil
	}
	c.reached(sent)
	now := c.planNowMs()
	ended := now >= endMs
	switch {
	case !finished || ended:
	case c.def.EndsEarly:
		ended = true
		c.endedEarly = true
		c.out.Ended = time.Duration(max(now-c.startAt, 0)) * time.Millisecond
		c.logf("every worker has finished its share of the total, %s after the start: ending the run before its duration", fmtDur(c.out.Ended))
	case now >= endMs-c.def.Grace.Milliseconds():
		// The schedule is over and every request in flight has ended:
		// what is left of the graceful stop has nothing to wait for.
		ended = true
		c.logf("every worker has stopped after the schedule's end: not waiting out the rest of the %s graceful stop", fmtDur(c.def.Grace))
	}
	if err := c.sweep(sctx, ended); err != nil {
		return false, err
	}
	c.closeSeconds(now)
	if ended {
		if stopDeadline.IsZero() {
			*stopDeadline = time.Now().Add(c.o.StopTimeout)
		}
		if c.allStopped() || time.Now().After(*stopDeadline) {
			return true, nil
		}
	}
	return false, nil
}

// finished reports whether every live worker that holds a segment has run
// it to its end and shipped its last metrics: it said "stopped" (not
// "error", which leaves its share to the sweep and a new owner). A worker
// not yet found lost still counts as running, so its segment is
// reassigned before the run can end.
func (c *coordinator) finished() bool {
	some := false
	for _, w := range c.workers {
		if w.lost || len(w.everSegs) == 0 {
			continue
		}
		if !w.stopped || !w.final || w.failed {
			return false
		}
		some = true
	}
	return some
}

func (c *coordinator) allStopped() bool {
	for _, w := range c.workers {
		if !w.lost && len(w.everSegs) > 0 && (!w.stopped || !w.final) {
			return false
		}
	}
	return true
}

// readStreams takes in what the workers wrote to the events and metrics
// streams since the last read. It reports whether Redis answered the read:
// after a failed one, what the workers last shipped is unknown, and no
// decision that rests on it (a worker lost, and its segment handed on with
// what it reported) may be taken. The error is that of handling an event.
func (c *coordinator) readStreams(ctx context.Context, block time.Duration) (read bool, err error) {
	res, err := c.reader.XRead(ctx, &redis.XReadArgs{
		Streams: []string{c.k.events(), c.k.metrics(), c.evCursor, c.mtCursor}, Block: block, Count: 256,
	}).Result()
	if errors.Is(err, redis.Nil) {
		c.retry.reset()
		return true, nil
	}
	if err != nil {
		if ctx.Err() == nil {
			c.retry.wait(ctx) // back off a broken connection
		}
		return false, nil
	}
	c.retry.reset()
	// Metrics first: a worker ships its last metrics before it says
	// "abandoned" or "stopped", and a lost worker's segment is handed on
	// with what it reported (handOn), so a closed-model total is not sent
	// twice.
	for _, s := range res {
		if s.Stream != c.k.metrics() {
			continue
		}
		for _, msg := range s.Messages {
			c.mtCursor = msg.ID
			if w, ok := c.mg.add(msg.Values); ok {
				if wi := c.workers[w]; wi != nil && msg.Values["f"] == "1" {
					wi.final = true
				}
			}
		}
	}
	for _, s := range res {
		if s.Stream != c.k.events() {
			continue
		}
		for _, msg := range s.Messages {
			c.evCursor = msg.ID
			if err := c.onEvent(ctx, msg.Values); err != nil {
				return true, err
			}
		}
	}
	return true, nil
}

func (c *coordinator) onEvent(ctx context.Context, v map[string]any) error {
	w, _ := v["w"].(string)
	wi := c.workers[w]
	if wi == nil {
		return nil
	}
	switch v["type"] {
	case "abandoned":
		reason, _ := v["reason"].(string)
		return c.lose(ctx, w, "abandoned: "+reason)
	case "stopped":
		wi.stopped = true
	case "error":
		wi.stopped, wi.failed = true, true
		c.logf("worker %s reported an error and stopped", w)
	case evSegmentFailed:
		seg, _ := v["seg"].(string)
		msg, _ := v["error"].(string)
		return fmt.Errorf("run %s: worker %s could not run segment %s: %s", c.run, w, seg, msg)
	}
	return nil
}

// sweep finds workers whose lease has run out on the coordinator's own
// monotonic clock: no new renewal seen for their lease. Redis's key expiry
// plays no part, so a step of Redis's clock neither moves a share early
// (forward) nor holds it (back).
func (c *coordinator) sweep(ctx context.Context, ended bool) error {
	pipe := c.rdb.Pipeline()
	rn := map[string]*redis.StringCmd{}
	st := map[string]*redis.SliceCmd{}
	for _, id := range c.order {
		if !c.workers[id].lost {
			rn[id] = pipe.Get(ctx, c.k.renewals(id))
			st[id] = pipe.HMGet(ctx, c.k.status(id), "lease_ms", "fence_ms")
		}
	}
	_, _ = pipe.Exec(ctx)
	for _, cmd := range rn {
		if err := cmd.Err(); err != nil && !errors.Is(err, redis.Nil) {
			return nil // cannot tell; the next sweep decides
		}
	}
	now := time.Now() // after the read: after Redis ran every renewal it returned
	var expired []string
	for _, id := range c.order {
		if rn[id] == nil {
			continue
		}
		wi := c.workers[id]
		wi.observe(rn[id].Val(), st[id].Val(), now)
		if now.Sub(wi.seenAt) >= wi.leaseWait && !(ended && wi.stopped) {
			expired = append(expired, id)
		}
	}
	if len(expired) == 0 {
		return nil
	}
	// Take in what the expired workers shipped since the last read
	// before handing their shares on with what they reported: without
	// it, a closed-model total would be sent twice in part.
	read, err := c.readStreams(ctx, -1)
	if err != nil {
		return err
	}
	if !read {
		return nil // cannot tell what it shipped; the next sweep decides
	}
	for _, id := range expired {
		if err := c.loseExpired(ctx, id); err != nil {
			return err
		}
	}
	return nil
}

// observe records a read of the worker's renewal count and lease timings.
func (wi *workerInfo) observe(renewals string, timings []any, now time.Time) {
	if wi.seenAt.IsZero() || renewals != wi.renewals {
		wi.renewals, wi.seenAt = renewals, now
	}
	wi.leaseWait, wi.fence = DefaultLeaseTTL, DefaultFenceAfter
	if ms, err := strconv.ParseInt(fmt.Sprint(timings[0]), 10, 64); err == nil && ms > 0 {
		wi.leaseWait = time.Duration(ms) * time.Millisecond
	}
	if ms, err := strconv.ParseInt(fmt.Sprint(timings[1]), 10, 64); err == nil && ms > 0 {
		wi.fence = time.Duration(ms) * time.Millisecond
	}
	// Whatever a worker reports, wait out its fence.
	wi.leaseWait = max(wi.leaseWait, wi.fence)
}

// noneLeft fails the run once every worker is lost: nothing sends its
// load any more, and waiting for its end would only hide why.
func (c *coordinator) noneLeft() error {
	var why []string
	for _, id := range c.order {
		w := c.workers[id]
		if !w.lost {
			return nil
		}
		why = append(why, id+": "+w.reason)
	}
	return fmt.Errorf("run %s: no worker left alive (%s), so nothing sends the load; a worker that self-fenced lost Redis for longer than its fence_after (a Redis or network stall), see the daemons' logs", c.run, strings.Join(why, "; "))
}

// whyExpired is the loss reason of a worker whose lease ran out.
const whyExpired = "lease expired"

// loseExpired calls a worker lost whose lease ran out, unless it renewed
// since the sweep read its count: the reap and that check are one script,
// so once it is reaped no renewal of it can succeed.
func (c *coordinator) loseExpired(ctx context.Context, id string) error {
	wi := c.workers[id]
	n, err := reapUnrenewedScript.Run(ctx, c.rdb, []string{c.k.workers(), c.k.alive(id), c.k.renewals(id)}, id, wi.renewals).Int()
	if err != nil {
		return nil // cannot tell; the next sweep decides
	}
	if n == 0 {
		return nil // it renewed: the next sweep sees the new count
	}
	return c.lose(ctx, id, whyExpired)
}

// lose handles a dead or abandoning worker according to the loss policy.
func (c *coordinator) lose(ctx context.Context, id, why string) error {
	wi := c.workers[id]
	if wi.lost {
		return nil
	}
	wi.lost, wi.reason = true, why
	c.setLostAt(wi, why == whyExpired)
	if n, err := c.rdb.HGet(ctx, c.k.status(id), "sent").Int64(); err == nil {
		wi.sentAtLeast = n
	}
	for s := range wi.segs {
		f, _ := c.seq.Segment(s).Len().Float64()
		wi.lostFrac += f
	}
	alive := 0
	for _, w := range c.workers {
		if !w.lost {
			alive++
		}
	}
	c.o.Observer.SetWorkers(alive)
	c.logf("worker %s lost (%s)", id, why)
	if err := c.noneLeft(); err != nil {
		return err
	}
	if c.def.OnWorkerLoss == LossAbort {
		return fmt.Errorf("run %s: worker %s lost (%s) and distributed.on_worker_loss is abort", c.run, id, why)
	}
	if err := c.reap(ctx, id); err != nil {
		return err
	}
	lostSegs := c.segsOf(id)
	c.handOn(id, lostSegs)
	wi.segs = map[int]bool{}
	if c.planNowMs() >= c.startAt+c.def.Duration.Milliseconds() {
		return nil // the plan is over; nothing to hand on
	}
	for _, s := range lostSegs {
		target := ""
		if c.def.OnWorkerLoss == LossReassign {
			target = c.pickTarget(ctx)
		}
		gen, err := reassignScript.Run(ctx, c.rdb, []string{c.k.segOwner(), c.k.gen()}, s, c.owners[s], target, int64(c.ttl/time.Second)).Int64()
		if err != nil {
			return scriptErr(fmt.Sprintf("reassign segment %d of run %s", s, c.run), err)
		}
		if gen == 0 {
			c.logf("segment %d: owner changed under us; not reassigning", s)
			continue
		}
		if target == "" {
			delete(c.owners, s)
			c.out.Degraded = true
			c.timeline(ctx, gen, "degraded: segment "+strconv.Itoa(s)+" unowned")
			c.logf("segment %d left unowned: run degraded", s)
			continue
		}
		c.owners[s] = ownerValue(target, gen)
		tw := c.workers[target]
		tw.segs[s] = true
		tw.everSegs[s] = true
		tw.stopped, tw.final, tw.failed = false, false, false
		_, err = c.rdb.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
			c.sendDesired(ctx, pipe, target, cmdAssign, desired{Gen: gen, Term: c.term, Phase: phaseRun, Segments: c.segsOf(target), Seq: c.seq.Bounds(), StartAtMs: c.startAt, Prior: c.priorOf(target)})
			return nil
		})
		if err != nil {
			return fmt.Errorf("run %s: assign segment %d to %s: %w", c.run, s, target, err)
		}
		c.out.Reassignments++
		c.o.Observer.SegmentReassigned()
		c.timeline(ctx, gen, "reassign: segment "+strconv.Itoa(s)+" "+id+" → "+target)
		c.logf("segment %d reassigned %s → %s (gen %d)", s, id, target, gen)
	}
	return nil
}

// setLostAt records the plan time after which lost worker wi can have
// sent nothing: now, or, for an expired lease, the end of the fence that
// began with the last renewal this coordinator saw (the reap made sure
// none came after it), both on this coordinator's monotonic clock.
func (c *coordinator) setLostAt(wi *workerInfo, expired bool) {
	wi.lostAtMs = c.planNowMs() - c.startAt
	if expired && !wi.seenAt.IsZero() && !c.startLocal.IsZero() {
		wi.lostAtMs = min(wi.lostAtMs, max(wi.seenAt.Add(wi.fence).Sub(c.startLocal).Milliseconds(), 0))
	}
}

// handOn adds what lost worker id reported to the prior count of the
// segments it held, split by segment length when it held several, so the
// next owner of a closed-model total sends only what is left.
func (c *coordinator) handOn(id string, segs []int) {
	if len(segs) == 0 {
		return
	}
	var shipped int64
	if pw := c.mg.perWorker[id]; pw != nil {
		shipped = pw.Requests
	}
	ever := c.workers[id].everSegs
	total := 0.0
	lens := map[int]float64{}
	for s := range ever {
		lens[s], _ = c.seq.Segment(s).Len().Float64()
		total += lens[s]
	}
	// This worker's own requests: what it shipped, or what its last
	// status said it had sent, if more (it died before shipping them).
	own := float64(max(shipped, c.workers[id].sentAtLeast))
	for _, s := range segs {
		if total > 0 {
			c.prior[s] += int64(own * lens[s] / total)
		}
	}
}

func (c *coordinator) priorOf(id string) map[int]int64 {
	out := map[int]int64{}
	for s := range c.workers[id].segs {
		if n := c.prior[s]; n > 0 {
			out[s] = n
		}
	}
	return out
}

// pickTarget: a spare first, then the live owner with the most headroom
// (cpu below HeadroomCPU and fewer than MaxSegments segments); "" when none.
func (c *coordinator) pickTarget(ctx context.Context) string {
	best, bestSegs, bestCPU := "", 0, 0.0
	for _, id := range c.order {
		w := c.workers[id]
		if w.lost {
			continue
		}
		if len(w.everSegs) == 0 && len(w.segs) == 0 {
			return id
		}
	}
	for _, id := range c.order {
		w := c.workers[id]
		if w.lost || len(w.segs) >= c.def.MaxSegments {
			continue
		}
		cpu, _ := c.rdb.HGet(ctx, c.k.status(id), "cpu_pct").Float64()
		if cpu >= c.o.HeadroomCPU {
			continue
		}
		if best == "" || len(w.segs) < bestSegs || (len(w.segs) == bestSegs && cpu < bestCPU) {
			best, bestSegs, bestCPU = id, len(w.segs), cpu
		}
	}
	return best
}

// reap removes a lost worker from the run: out of the workers hash, its
// alive lease gone, in one transaction.
func (c *coordinator) reap(ctx context.Context, id string) error {
	_, err := c.rdb.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
		pipe.HDel(ctx, c.k.workers(), id)
		pipe.Del(ctx, c.k.alive(id))
		return nil
	})
	if err != nil {
		return fmt.Errorf("reap worker %s of run %s: %w", id, c.run, err)
	}
	return nil
}

func (c *coordinator) timeline(ctx context.Context, gen int64, source string) {
	alive := 0
	for _, w := range c.workers {
		if !w.lost {
			alive++
		}
	}
	c.rdb.XAdd(ctx, &redis.XAddArgs{Stream: c.k.timeline(), MaxLen: streamCap, Approx: true,
		Values: map[string]any{"gen": gen, "workers": alive, "source": source}})
	c.rdb.ExpireNX(ctx, c.k.timeline(), c.ttl)
}

// closeSeconds hands finished seconds to OnSecond: a second closes when
// every live segment owner has shipped it, or SecondGrace after it ended.
func (c *coordinator) closeSeconds(nowMs int64) {
	for {
		sec := c.nextSec
		endMs := c.startAt + int64(sec+1)*1000
		if nowMs < endMs || int64(sec)*1000 >= c.def.Duration.Milliseconds() {
			return
		}
		all := true
		for _, w := range c.workers {
			if ls, ok := c.mg.lastSec[w.id]; !w.lost && len(w.segs) > 0 && !w.final && (!ok || ls < sec) {
				all = false
			}
		}
		if !all && nowMs < endMs+c.o.SecondGrace.Milliseconds() {
			return
		}
		if c.o.OnSecond != nil {
			s := c.mg.seconds[sec]
			if s == nil {
				s = snapshot.New(sec)
			}
			c.o.OnSecond(s.Clone())
		}
		c.nextSec++
	}
}

func (c *coordinator) finalize(ctx context.Context) (*Outcome, error) {
	// Drain what is left of the metrics stream. A read that fails is
	// tried again (readStreams backs off): totals built without the last
	// metrics would claim less than was sent.
	for batches, failed := 0, 0; batches < 100; batches++ {
		before := c.mtCursor
		read, err := c.readStreams(ctx, -1) // -1: no BLOCK
		if err != nil {
			return nil, err
		}
		if !read {
			if failed++; failed == finalReadTries {
				return nil, fmt.Errorf("%w: run %s: could not read the workers' last metrics in %d tries, so its totals would miss them", ErrRedisUnreachable, c.run, finalReadTries)
			}
			continue
		}
		failed = 0
		if c.mtCursor == before {
			break
		}
	}
	if _, err := casState(ctx, c.rdb, c.k, StateDone, StateRunning, StateStopping); err != nil {
		return nil, err
	}
	gen, _ := c.rdb.Incr(ctx, c.k.gen()).Result()
	c.bcast(ctx, c.rdb, cmdStop, gen)
	c.buildOutcome(ctx)
	sum, _ := json.Marshal(summaryOf(c.out))
	c.rdb.Set(ctx, c.k.summary(), sum, c.ttl)
	c.cleanup(ctx)
	c.logf("done: %d workers, %d reassignments, degraded=%v", len(c.order), c.out.Reassignments, c.out.Degraded)
	return c.out, nil
}

func (c *coordinator) buildOutcome(ctx context.Context) {
	secs := slices.Sorted(maps.Keys(c.mg.seconds))
	for _, s := range secs {
		c.out.Seconds = append(c.out.Seconds, c.mg.seconds[s])
	}
	c.out.Total = c.mg.total
	c.out.DuplicateMetrics = c.mg.dups
	if !c.endedEarly {
		c.out.Ended = c.def.Duration
	}
	planSec := max(c.out.Ended, time.Millisecond).Seconds()
	for _, id := range c.order {
		w := c.workers[id]
		row := WorkerRow{ID: id, Host: w.host, Segments: slices.Sorted(maps.Keys(w.everSegs)), Lost: w.lost, Reason: w.reason, Total: c.mg.perWorker[id], LastSecond: -1}
		if ls, ok := c.mg.lastSec[id]; ok {
			row.LastSecond = ls
		}
		if w.lost {
			row.LostAt, row.LostShare = time.Duration(w.lostAtMs)*time.Millisecond, w.lostFrac
			row.SentAtLeast = w.sentAtLeast
		}
		if row.Total == nil {
			row.Total = snapshot.New(-1)
		}
		row.Samples = row.Total.Samples()
		row.Rate = float64(row.Samples) / planSec
		row.Dropped = row.Total.Dropped
		st, _ := c.rdb.HGetAll(ctx, c.k.status(id)).Result()
		row.CPUPct, _ = strconv.ParseFloat(st["cpu_pct"], 64)
		off, _ := strconv.ParseInt(st["clock_offset_ms"], 10, 64)
		row.ClockOffset = time.Duration(off) * time.Millisecond
		c.out.Workers = append(c.out.Workers, row)
	}
}

type summaryJSON struct {
	Run           string                      `json:"run"`
	StartAtMs     int64                       `json:"start_at"`
	Counters      map[string]int64            `json:"counters"`
	Percentiles   map[string]map[string]int64 `json:"percentiles_us"`
	Reassignments int                         `json:"reassignments"`
	Degraded      bool                        `json:"degraded"`
	Workers       []string                    `json:"workers"`
}

func summaryOf(o *Outcome) summaryJSON {
	t := o.Total
	s := summaryJSON{Run: o.RunID, StartAtMs: o.StartAt.UnixMilli(), Percentiles: map[string]map[string]int64{},
		Counters:      map[string]int64{"requests": t.Requests, "errors": t.Errors, "dropped_iterations": t.Dropped},
		Reassignments: o.Reassignments, Degraded: o.Degraded}
	if t.Samples() > 0 {
		us := func(d time.Duration) int64 { return d.Microseconds() }
		s.Percentiles["latency"] = map[string]int64{"p50": us(t.Quantile(0.50)), "p90": us(t.Quantile(0.90)), "p95": us(t.Quantile(0.95)), "p99": us(t.Quantile(0.99)), "max": us(t.Latency.Max())}
	}
	for _, w := range o.Workers {
		s.Workers = append(s.Workers, w.ID)
	}
	return s
}

// cleanup shortens every run key's TTL to an hour and drops the claims.
func (c *coordinator) cleanup(ctx context.Context) {
	claims := make([]string, len(c.claimed))
	for i, id := range c.claimed {
		claims[i] = claimKey(id)
	}
	expireRun(ctx, c.rdb, c.k, append(claims, c.k.coord())...)
}

// expireRun gives every key of a finished run a TTL of an hour, so people
// can inspect it, and deletes del.
func expireRun(ctx context.Context, rdb *redis.Client, k runKeys, del ...string) {
	iter := rdb.Scan(ctx, 0, k.pattern(), 256).Iterator()
	pipe := rdb.Pipeline()
	for iter.Next(ctx) {
		if key := iter.Val(); !slices.Contains(del, key) {
			pipe.Expire(ctx, key, doneTTLSeconds*time.Second)
		}
	}
	if len(del) > 0 {
		pipe.Del(ctx, del...)
	}
	_, _ = pipe.Exec(ctx)
}

// abort marks the run ABORTED (if its state still exists) so every worker
// stops, and cleans up. It runs on a detached, bounded context.
func (c *coordinator) abort(ctx context.Context, cause error) {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Second)
	defer cancel()
	c.logf("aborting: %v", cause)
	// The state and the reason change together, so a worker that sees
	// ABORTED also reads why. After a Redis restart the run's keys are
	// gone: they are written back (an hour, like any finished run) so that
	// `cluster status` still shows the run and why it ended.
	fields := []string{"abort_reason", cause.Error(), "coordinator", c.o.Coordinator}
	if errors.Is(cause, ErrStateLost) {
		fields = append(fields, "abort_cause", causeStateLost)
	}
	_, _ = abortRun(dctx, c.rdb, c.k, doneTTLSeconds*time.Second, fields...)
	c.bcast(dctx, c.rdb, cmdAbort, 0)
	c.cleanup(dctx)
}
