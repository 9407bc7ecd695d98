package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// Defaults for [PoolOptions].
const (
	DefaultHeartbeat      = time.Second
	DefaultLeaseTTL       = 5 * time.Second
	DefaultFenceAfter     = 3500 * time.Millisecond
	DefaultCoordLostAfter = 2 * time.Second
)

// PoolOptions configures a [Pool]. Zero fields take the documented defaults.
type PoolOptions struct {
	// ID is this runner's id in the pool (required), e.g. the runner name.
	ID string
	// Host is shown in status output; default os.Hostname().
	Host string
	// Labels must include every label a run asks for; see [Run.Labels].
	Labels []string
	// Capacity is how many runs this runner serves at once; default 1. A
	// run this runner coordinates itself is always accepted (the
	// coordinator runs a segment of its own test) but counts as busy.
	Capacity int
	// OwnRunsOnly makes this runner serve only the runs it coordinates
	// (cluster.max_segments: 0): it advertises capacity 0, so coordinators
	// never recruit it, and declines offers from other coordinators.
	OwnRunsOnly bool
	// MaxVUs is advertised for ranking; 0 means unknown.
	MaxVUs int
	// Version is advertised in the presence hash.
	Version string
	// Runner runs the segments this runner accepts (required).
	Runner SegmentRunner
	// Logf receives one line per notable event; nil discards them. Lines
	// never contain credentials.
	Logf func(format string, args ...any)
	// OnLeave is called once each time this runner leaves a run, with nil
	// for a clean end and otherwise why (errors.Is against [ErrSelfFenced],
	// [ErrStateLost], [ErrAborted], [ErrRemoved], [ErrCoordinatorLost]).
	OnLeave func(run string, err error)
	// Heartbeat is the presence and liveness renewal period; default 1s
	// (config cluster.heartbeat). It must stay below FenceAfter.
	Heartbeat time.Duration
	// LeaseTTL is the presence and alive lease; default 5s (cluster.lease).
	LeaseTTL time.Duration
	// FenceAfter is how long without a successful renewal before this
	// runner stops its own load; default 3.5s (cluster.fence_after). It
	// must stay below LeaseTTL.
	FenceAfter time.Duration
	// CoordLostAfter is how long the coordinator lease may be missing
	// before this runner stops and leaves; default 2s
	// (cluster.coordinator_lost_after). The lease itself
	// (7s, [DefaultCoordLease]) expires only after the coordinator stopped
	// renewing it, so a dead coordinator's workers stop within the lease,
	// plus this, plus one heartbeat: 10 s with the defaults.
	CoordLostAfter time.Duration
	// WallClock reads this host's wall clock; default time.Now. The runner
	// reads it only to report its clock offset to Redis (and to take
	// Redis's clock to be its own if it could not measure it): the start,
	// the end and the fence count on the monotonic clock, so a wall clock
	// that is off or steps moves none of them. Tests set a clock that is
	// off or steps (TestWorkerWallClockOffsetMovesNothing).
	WallClock func() time.Time

	// skipAbandon makes shutdown behave like kill -9 (tests only).
	skipAbandon bool
	// joined, if set, runs once the runner has announced itself and before
	// it reads its inbox (tests only).
	joined func()
}

// Errors a runner leaves a run with (see [PoolOptions.OnLeave]).
var (
	// ErrSelfFenced: the runner could not renew its lease in time and stopped its own load.
	ErrSelfFenced = errors.New("self-fenced: lease not renewed in time, load stopped")
	// ErrStateLost: the run's keys vanished or Redis restarted.
	ErrStateLost = errors.New("coordination state lost")
	// ErrAborted: the coordinator aborted the run.
	ErrAborted = errors.New("run aborted")
	// ErrRemoved: the coordinator reaped this runner (its lease had expired).
	ErrRemoved = errors.New("removed from the run by the coordinator")
	// ErrCoordinatorLost: the coordinator lease was missing for too long.
	ErrCoordinatorLost = errors.New("coordinator lost")
)

// Pool is a daemon's membership in the cluster pool: it keeps a presence
// lease in lt:runner:<id>, listens on its inbox for join offers, accepts
// those within its capacity and runs the segments it is given through its
// [SegmentRunner]. Create it with [NewPool] and call [Pool.Run] once.
type Pool struct {
	rdb *redis.Client // ours: a copy of the caller's options with context timeouts on
	o   PoolOptions

	mu      sync.Mutex
	members map[string]*member
	wg      sync.WaitGroup
}

// NewPool validates o and returns a pool member that uses rdb's connection
// options. rdb itself is not used after NewPool returns, and is not closed.
func NewPool(rdb *redis.Client, o PoolOptions) (*Pool, error) {
	if o.ID == "" || strings.ContainsAny(o.ID, "{}: \t\n") {
		return nil, fmt.Errorf("cluster pool: runner id %q is empty or contains one of `{}:` or whitespace; set cluster.name to a plain name", o.ID)
	}
	if o.Runner == nil {
		return nil, errors.New("cluster pool: no SegmentRunner; the daemon must pass one")
	}
	if o.Host == "" {
		o.Host, _ = os.Hostname()
	}
	if o.Capacity <= 0 {
		o.Capacity = 1
	}
	if o.Heartbeat <= 0 {
		o.Heartbeat = DefaultHeartbeat
	}
	if o.LeaseTTL <= 0 {
		o.LeaseTTL = DefaultLeaseTTL
	}
	if o.FenceAfter <= 0 {
		o.FenceAfter = DefaultFenceAfter
	}
	if o.CoordLostAfter <= 0 {
		o.CoordLostAfter = DefaultCoordLostAfter
	}
	if o.FenceAfter >= o.LeaseTTL {
		return nil, fmt.Errorf("cluster pool: fence_after %s must be below the lease TTL %s, or two hosts could drive one segment", o.FenceAfter, o.LeaseTTL)
	}
	if o.Heartbeat >= o.FenceAfter {
		return nil, fmt.Errorf("cluster pool: heartbeat %s must be below fence_after %s (a third of it at most), or a healthy worker stops its own load", o.Heartbeat, o.FenceAfter)
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	return &Pool{rdb: redis.NewClient(cloneOptions(rdb)), o: o, members: map[string]*member{}}, nil
}

// ID returns the runner id.
func (p *Pool) ID() string { return p.o.ID }

// Runs returns the ids of the runs this runner is serving now.
func (p *Pool) Runs() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]string, 0, len(p.members))
	for r := range p.members {
		out = append(out, r)
	}
	slices.Sort(out)
	return out
}

// Run announces the runner, accepts offers and serves runs until ctx is
// cancelled. Then it abandons every run it serves (stops the load, flushes
// metrics, tells the coordinator so it reassigns at once), withdraws the
// presence and returns nil. Until Redis first answers, it retries (see
// [Pool.join]); it returns an error only if ctx ends before that.
func (p *Pool) Run(ctx context.Context) error {
	defer p.rdb.Close()
	announced, err := p.join(ctx)
	if err != nil {
		return err
	}
	if p.o.joined != nil {
		p.o.joined()
	}
	// Offers made before we announced ourselves are stale; every offer made
	// after it is read. The cursor is Redis's own time inside the announcing
	// transaction, not a local reading taken after it: a coordinator may
	// find this runner and offer it a run the moment that transaction is
	// done, before this goroutine runs again.
	cursor := strconv.FormatInt(announced.UnixMilli()-1, 10) + "-0"
	p.o.Logf("cluster: runner %s joined the pool (capacity %d)", p.o.ID, p.advertisedCapacity())

	offers := make(chan map[string]any)
	readCtx, stopRead := context.WithCancel(ctx)
	reader := p.readerClient()
	var readWG sync.WaitGroup
	readWG.Add(1)
	go func() {
		defer readWG.Done()
		p.readInbox(readCtx, reader, cursor, offers)
	}()

	t := time.NewTicker(p.o.Heartbeat)
	for done := false; !done; {
		select {
		case <-ctx.Done():
			done = true
		case <-t.C:
			if _, err := p.announce(ctx); err != nil && ctx.Err() == nil {
				p.o.Logf("cluster: runner %s: renew presence: %v", p.o.ID, err)
			}
		case off := <-offers:
			p.accept(ctx, off)
		}
	}
	t.Stop()
	stopRead()
	_ = reader.Close()
	readWG.Wait()

	p.mu.Lock()
	for _, m := range p.members {
		m.shutdown(!p.o.skipAbandon)
	}
	p.mu.Unlock()
	p.wg.Wait()

	if !p.o.skipAbandon {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		_, _ = p.rdb.Pipelined(dctx, func(pipe redis.Pipeliner) error {
			pipe.Del(dctx, presenceKey(p.o.ID))
			pipe.SRem(dctx, runnersKey, p.o.ID)
			return nil
		})
	}
	return nil
}

// join announces this runner and returns Redis's time when it did. A
// Redis that is slow or away for a moment when the daemon starts must not
// leave the runner outside the pool for the rest of its life, so a failure
// is logged and retried with back-off (at most [readRetryMax] apart) until
// it works; it returns an error only when ctx ends first.
func (p *Pool) join(ctx context.Context) (time.Time, error) {
	var retry readRetry
	for {
		at, err := p.announce(ctx)
		if err == nil {
			return at, nil
		}
		err = fmt.Errorf("announce presence: %w", err)
		if ctx.Err() != nil {
			return time.Time{}, fmt.Errorf("cluster pool %s: stopped before joining: %w", p.o.ID, err)
		}
		p.o.Logf("cluster: runner %s cannot join the pool yet, retrying: %v", p.o.ID, err)
		retry.wait(ctx)
	}
}

func (p *Pool) readerClient() *redis.Client {
	opt := cloneOptions(p.rdb)
	opt.PoolSize = 2
	opt.MinIdleConns = 0
	return redis.NewClient(opt)
}

// announce writes this runner's presence (with a lease of LeaseTTL) and
// returns Redis's time in the same transaction.
func (p *Pool) announce(ctx context.Context) (time.Time, error) {
	p.mu.Lock()
	busy := make([]string, 0, len(p.members))
	for r := range p.members {
		busy = append(busy, r)
	}
	p.mu.Unlock()
	slices.Sort(busy)
	cctx, cancel := context.WithTimeout(ctx, p.o.Heartbeat)
	defer cancel()
	var now *redis.TimeCmd
	_, err := p.rdb.TxPipelined(cctx, func(pipe redis.Pipeliner) error {
		pipe.HSet(cctx, presenceKey(p.o.ID), map[string]any{
			"host": p.o.Host, "labels": strings.Join(p.o.Labels, ","), "cpus": runtime.NumCPU(),
			"max_vus": p.o.MaxVUs, "capacity": p.advertisedCapacity(), "busy_run": strings.Join(busy, ","),
			"version": p.o.Version,
		})
		pipe.PExpire(cctx, presenceKey(p.o.ID), p.o.LeaseTTL)
		pipe.SAdd(cctx, runnersKey, p.o.ID)
		now = pipe.Time(cctx)
		return nil
	})
	if err != nil {
		return time.Time{}, err
	}
	return now.Val(), nil
}

func (p *Pool) readInbox(ctx context.Context, rc *redis.Client, cursor string, out chan<- map[string]any) {
	var retry readRetry
	for ctx.Err() == nil {
		res, err := rc.XRead(ctx, &redis.XReadArgs{Streams: []string{inboxKey(p.o.ID), cursor}, Block: 2 * time.Second, Count: 16}).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			retry.wait(ctx) // back off a broken connection
			continue
		}
		retry.reset()
		for _, s := range res {
			for _, m := range s.Messages {
				cursor = m.ID
				select {
				case out <- m.Values:
				case <-ctx.Done():
					return
				}
			}
		}
	}
}

func (p *Pool) advertisedCapacity() int {
	if p.o.OwnRunsOnly {
		return 0
	}
	return p.o.Capacity
}

// accept handles one join offer: fields run, coord, term. An offer from
// this runner's own coordinator is accepted whatever the capacity.
func (p *Pool) accept(ctx context.Context, off map[string]any) {
	run, _ := off["run"].(string)
	if run == "" || strings.ContainsAny(run, "{}") {
		return
	}
	own := off["coord"] == p.o.ID
	p.mu.Lock()
	_, dup := p.members[run]
	full := !own && (p.o.OwnRunsOnly || len(p.members) >= p.o.Capacity)
	p.mu.Unlock()
	if dup || full {
		p.o.Logf("cluster: runner %s declined run %s (busy: %d of %d)", p.o.ID, run, len(p.Runs()), p.o.Capacity)
		return
	}
	k := runKeys(run)
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	meta, err := p.rdb.HGetAll(cctx, k.meta()).Result()
	if err != nil || len(meta) == 0 {
		return
	}
	ttl, _ := strconv.Atoi(meta["ttl"])
	dur, _ := strconv.ParseInt(meta["duration_ms"], 10, 64)
	info := fmt.Sprintf(`{"host":%q,"capacity":%d,"max_vus":%d}`, p.o.Host, p.o.Capacity, p.o.MaxVUs)
	ok, err := joinScript.Run(cctx, p.rdb, []string{k.state(), k.workers(), k.alive(p.o.ID), k.events(), k.seg()},
		p.o.ID, info, p.o.LeaseTTL.Milliseconds(), ttl).Int()
	if err != nil || ok != 1 {
		return
	}
	m := newMember(p, run, []byte(meta["plan"]), time.Duration(dur)*time.Millisecond, ttl)
	m.job, m.step = cutName(meta["job"]), cutName(meta["step"])
	p.mu.Lock()
	p.members[run] = m
	p.mu.Unlock()
	p.o.Logf("cluster: runner %s joined run %s", p.o.ID, run)
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		err := m.loop(ctx)
		p.mu.Lock()
		delete(p.members, run)
		p.mu.Unlock()
		if err != nil {
			p.o.Logf("cluster: runner %s left run %s: %v", p.o.ID, run, err)
		} else {
			p.o.Logf("cluster: runner %s finished run %s", p.o.ID, run)
		}
		if p.o.OnLeave != nil {
			p.o.OnLeave(run, err)
		}
		if err != nil {
			m.lateFlush(ctx)
		}
	}()
}

// cloneOptions copies rdb's connection options for a client of our own:
// context deadlines are honoured (so a partition cannot hang a heartbeat
// past its deadline) and cloud maintenance notifications are off.
func cloneOptions(rdb *redis.Client) *redis.Options {
	opt := *rdb.Options()
	opt.ContextTimeoutEnabled = true
	opt.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	return &opt
}
