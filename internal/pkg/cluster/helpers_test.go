package cluster

import (
	"context"
	"encoding/json"
	"flag"
	"math"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/forgeload/forgeload/internal/pkg/cluster/snapshot"
	"github.com/forgeload/forgeload/internal/pkg/load"
	"github.com/forgeload/forgeload/internal/pkg/redistest"
	"github.com/forgeload/forgeload/internal/pkg/testmain"
)

// clusterParallel is how many tests run at once unless -test.parallel says
// otherwise. They wait on leases, sweeps and a real Redis in real time and
// hardly compute (some 3 CPU seconds for the whole package), so at 6 the
// package spent 14 s mostly waiting while it held one of go test's two
// slots (on CI machines), and nothing else could build or run in it. At 16
// every long test runs at once and the package takes as long as its
// longest test, 11 s. What starves heartbeats is the machine's load, not
// these tests: on a machine at a load average of 26, leases expired at 8
// that no test meant to expire; beside three CPU-bound processes on two
// cores, 16 pass.
const clusterParallel = 16

// gate runs the package's tests, the longest first (see testmain.Gate):
// each calls gate.Short or gate.Long (with about how many seconds it takes
// alone) where it would call t.Parallel.
var gate *testmain.Gate

func TestMain(m *testing.M) {
	testmain.NoRaceExitSleep()
	redistest.ServeProxyIfAsked() // startProxy's relay process
	flag.Parse()
	gate = testmain.NewGate(clusterParallel, clusterParallel, 1)
	os.Exit(m.Run())
}

func newClient(t *testing.T, addr string) *redis.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second, MaxRetries: 1,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

func waitFor(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", within, what)
		}
		time.Sleep(20 * time.Millisecond) // polling with a deadline
	}
}

// arrival is one arrival the fake runner sent.
type arrival struct {
	w   string
	seg int
	at  time.Time
}

// arrivalLog is a fake target shared by every worker of a test: it records
// which worker sent each global arrival index, and when.
type arrivalLog struct {
	mu      sync.Mutex
	byK     map[uint64][]arrival
	stops   map[string]time.Time // worker → when its context was cancelled
	starts  map[string][]Assignment
	running atomic.Int64
}

func newArrivalLog() *arrivalLog {
	return &arrivalLog{byK: map[uint64][]arrival{}, stops: map[string]time.Time{}, starts: map[string][]Assignment{}}
}

type fakeSpec struct {
	Rate int `json:"rate"`
}

// runner returns a SegmentRunner for worker w: arrivals k = 0,1,… at
// StartAt + k/rate, sending only those Owns(k) accepts, and shipping one
// snapshot per run second.
func (l *arrivalLog) runner(w string) SegmentRunner {
	return segmentRunnerFunc(func(ctx context.Context, a Assignment) error {
		l.running.Add(1)
		defer l.running.Add(-1)
		l.mu.Lock()
		l.starts[w] = append(l.starts[w], a)
		l.mu.Unlock()
		var spec fakeSpec
		if err := json.Unmarshal(a.Spec, &spec); err != nil || spec.Rate <= 0 {
			return err
		}
		interval := time.Second / time.Duration(spec.Rate)
		total := uint64(int64(a.Duration) / int64(interval))
		k := uint64(math.Ceil(float64(a.Offset) / float64(interval)))
		cur := (*snapshot.Snapshot)(nil)
		emit := func() {
			if cur != nil {
				a.Sink.Second(cur)
				cur = nil
			}
		}
		defer emit()
		timer := time.NewTimer(time.Hour)
		defer timer.Stop()
		for ; k < total; k++ {
			if !a.Owns(k) {
				continue
			}
			at := a.StartAt.Add(time.Duration(k) * interval)
			timer.Reset(time.Until(at))
			select {
			case <-ctx.Done():
				l.mu.Lock()
				l.stops[w] = time.Now()
				l.mu.Unlock()
				return context.Cause(ctx)
			case <-timer.C:
			}
			if ctx.Err() != nil {
				continue
			}
			l.mu.Lock()
			l.byK[k] = append(l.byK[k], arrival{w: w, seg: a.Index, at: time.Now()})
			l.mu.Unlock()
			sec := int(time.Duration(k) * interval / time.Second)
			if cur != nil && cur.Second != sec {
				emit()
			}
			if cur == nil {
				cur = snapshot.New(sec)
			}
			cur.Requests++
			if cur.Latency == nil {
				cur.Latency = load.NewHistogram()
			}
			cur.Latency.Record(time.Millisecond + time.Duration(k%50)*time.Microsecond)
		}
		return nil
	})
}

// checkNoDoubleOwner asserts that no index was sent twice and that, per
// segment, the arrival intervals of different workers never overlap.
func (l *arrivalLog) checkNoDoubleOwner(t *testing.T) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	type span struct{ first, last time.Time }
	spans := map[int]map[string]*span{}
	for k, as := range l.byK {
		if len(as) > 1 {
			t.Errorf("arrival %d sent %d times (by %v and %v)", k, len(as), as[0].w, as[1].w)
		}
		for _, a := range as {
			if spans[a.seg] == nil {
				spans[a.seg] = map[string]*span{}
			}
			s := spans[a.seg][a.w]
			if s == nil {
				spans[a.seg][a.w] = &span{a.at, a.at}
				continue
			}
			if a.at.Before(s.first) {
				s.first = a.at
			}
			if a.at.After(s.last) {
				s.last = a.at
			}
		}
	}
	for seg, ws := range spans {
		var list []*span
		var names []string
		for w, s := range ws {
			list = append(list, s)
			names = append(names, w)
		}
		for i := range list {
			for j := range list {
				if i != j && list[i].first.Before(list[j].first) && list[i].last.After(list[j].first) {
					t.Errorf("segment %d driven by %s and %s at once", seg, names[i], names[j])
				}
			}
		}
	}
}

func (l *arrivalLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.byK)
}

func (l *arrivalLog) firstBy(w string, seg int, after time.Time) (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var best time.Time
	for _, as := range l.byK {
		for _, a := range as {
			if a.w == w && a.seg == seg && a.at.After(after) && (best.IsZero() || a.at.Before(best)) {
				best = a.at
			}
		}
	}
	return best, !best.IsZero()
}

func (l *arrivalLog) segOf(w string) []int {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []int
	for _, a := range l.starts[w] {
		if !slices.Contains(out, a.Index) {
			out = append(out, a.Index)
		}
	}
	return out
}

type leave struct {
	run string
	err error
}

// testPool is one in-process daemon.
type testPool struct {
	p      *Pool
	cancel context.CancelFunc
	done   chan error
	leaves chan leave
}

func startPool(t *testing.T, addr, id string, r SegmentRunner, mod func(*PoolOptions)) *testPool {
	t.Helper()
	tp := &testPool{done: make(chan error, 1), leaves: make(chan leave, 8)}
	o := PoolOptions{ID: id, Runner: r, Capacity: 1, Logf: t.Logf, OnLeave: func(run string, err error) { tp.leaves <- leave{run, err} }}
	if mod != nil {
		mod(&o)
	}
	p, err := NewPool(newClient(t, addr), o)
	if err != nil {
		t.Fatal(err)
	}
	tp.p = p
	ctx, cancel := context.WithCancel(context.Background())
	tp.cancel = cancel
	go func() { tp.done <- p.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-tp.done:
		case <-time.After(10 * time.Second):
			t.Errorf("pool %s did not stop within 10s", id)
		}
	})
	return tp
}

func waitRunners(t *testing.T, rdb *redis.Client, n int) {
	t.Helper()
	waitFor(t, 30*time.Second, "runners to announce", func() bool {
		st, err := Status(context.Background(), rdb)
		return err == nil && len(st.Runners) >= n
	})
}

func startRedis(t *testing.T) (*redistest.Server, *redis.Client) {
	t.Helper()
	srv := redistest.Start(t)
	return srv, newClient(t, srv.Addr())
}

// startProxy relays to target from a process of its own: a relay in this
// race-built process, beside a dozen parallel tests on a loaded machine,
// held a worker's Redis calls past its lease with no fault applied (the
// partitioned-worker test then never saw its worker send).
func startProxy(t *testing.T, target string) *redistest.Proxy {
	return redistest.StartProxyProcess(t, target)
}

// quick halves a pool's timings (heartbeat 0.5 s, lease 2.5 s, fence
// 1.75 s), for tests that wait on a lease, a fence or a heartbeat without
// checking the defaults' times: the end-to-end tests check those
// (TestE2EClusterKillWorker 7 s, TestE2EClusterPartitionedWorkerFences
// 3.5 s). Half, not less: on a two-core machine at a load average of 20
// and more, stalls of a second happen, and a fence shorter than them
// stops healthy workers.
func quick(o *PoolOptions) {
	o.Heartbeat, o.LeaseTTL, o.FenceAfter = DefaultHeartbeat/2, DefaultLeaseTTL/2, DefaultFenceAfter/2
}

// quickSweep is the coordinator's sweep interval beside quick pools.
const quickSweep = DefaultSweepInterval / 2

// segmentRunnerFunc adapts a function to [SegmentRunner].
type segmentRunnerFunc func(ctx context.Context, a Assignment) error

func (f segmentRunnerFunc) RunSegment(ctx context.Context, a Assignment) error { return f(ctx, a) }
