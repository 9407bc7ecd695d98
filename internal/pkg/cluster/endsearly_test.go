package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/forgeload/forgeload/internal/pkg/cluster/segment"
	"github.com/forgeload/forgeload/internal/pkg/cluster/snapshot"
	"github.com/forgeload/forgeload/internal/pkg/load"
)

// shareTarget is a fake target for closed-model totals: each segment
// sends its share of total (less what earlier owners reported), counted
// here per worker and segment, ships it as one second and ends.
type shareTarget struct {
	total int
	mu    sync.Mutex
	sent  int
	runs  map[string][]Assignment // worker → the segments it started
}

func newShareTarget(total int) *shareTarget {
	return &shareTarget{total: total, runs: map[string][]Assignment{}}
}

// runner returns worker w's SegmentRunner. With hold set it sends partial
// of its share, ships that and then blocks until its context ends (a
// worker that is still running when it is lost).
func (s *shareTarget) runner(w string, hold bool, partial int) SegmentRunner {
	return segmentRunnerFunc(func(ctx context.Context, a Assignment) error {
		n := max(a.ScaleVUs(s.total)-int(a.Prior), 0)
		wait := time.NewTimer(time.Until(a.StartAt)) // the plan starts at StartAt
		defer wait.Stop()
		select {
		case <-wait.C:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
		s.mu.Lock()
		s.runs[w] = append(s.runs[w], a)
		s.mu.Unlock()
		if hold {
			n = min(n, partial)
		}
		s.mu.Lock()
		s.sent += n
		s.mu.Unlock()
		snap := snapshot.New(0)
		snap.Requests = int64(n)
		snap.Latency = load.NewHistogram()
		for range n {
			snap.Latency.Record(time.Millisecond)
		}
		a.Sink.Second(snap)
		if hold {
			<-ctx.Done()
			return context.Cause(ctx)
		}
		return nil
	})
}

func (s *shareTarget) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sent
}

func (s *shareTarget) starts(w string) []Assignment {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Assignment(nil), s.runs[w]...)
}

// sawEvent reports whether worker w has put an event of type typ on run's
// events stream.
func sawEvent(rdb *redis.Client, run, w, typ string) bool {
	msgs, err := rdb.XRange(context.Background(), runKeys(run).events(), "-", "+").Result()
	if err != nil {
		return false
	}
	for _, m := range msgs {
		if m.Values["w"] == w && m.Values["type"] == typ {
			return true
		}
	}
	return false
}

// TestClosedTotalEndsWhenEveryShareIsSent: a plan that ends early (a
// closed-model total) ends once every worker has sent its share, long
// before its 60 s duration, and not before the last worker is done; the
// workers together send exactly the total.
func TestClosedTotalEndsWhenEveryShareIsSent(t *testing.T) {
	gate.Short(t)
	srv, rdb := startRedis(t)
	const total = 11
	tg := newShareTarget(total)
	release := make(chan struct{})
	startPool(t, srv.Addr(), "a", tg.runner("a", false, 0), nil)
	slow := tg.runner("b", false, 0)
	startPool(t, srv.Addr(), "b", segmentRunnerFunc(func(ctx context.Context, a Assignment) error {
		select { // b finishes only when the test says so
		case <-release:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
		return slow.RunSegment(ctx, a)
	}), nil)
	waitRunners(t, rdb, 2)
	began := time.Now()
	res := coordinateAsync(t, rdb, Run{Spec: []byte(`{}`), Duration: 60 * time.Second, Workers: 2, JoinTimeout: 10 * time.Second, EndsEarly: true},
		CoordOptions{RunID: "early", StartLead: 300 * time.Millisecond, Logf: t.Logf})
	waitFor(t, 20*time.Second, "worker a to finish its share", func() bool { return sawEvent(rdb, "early", "a", "stopped") })
	select {
	case r := <-res:
		t.Fatalf("the run ended (err %v) while worker b had not sent its share", r.err)
	default:
	}
	close(release)
	var r coordResult
	select {
	case r = <-res:
	case <-time.After(40 * time.Second):
		t.Fatal("Coordinate did not return within 40 s of both shares being sent (the plan's duration is 60 s)")
	}
	took := time.Since(began)
	if r.err != nil {
		t.Fatalf("Coordinate: %v", r.err)
	}
	// A few seconds even on a loaded machine; the bound only has to tell
	// an early end from the 60 s duration.
	if took > 20*time.Second {
		t.Errorf("the run took %s, want it to end once both shares were sent, well before its 60 s duration", took)
	}
	if r.out.Ended <= 0 || r.out.Ended > 20*time.Second {
		t.Errorf("Outcome.Ended = %s, want when the last share was sent (well under the 60 s duration)", r.out.Ended)
	}
	if got := tg.count(); got != total {
		t.Errorf("the target saw %d requests, want exactly the total %d", got, total)
	}
	if got := r.out.Total.Requests; got != total {
		t.Errorf("merged requests = %d, want %d", got, total)
	}
}

// TestFinishedShareIsNotSentAgain: a worker that has sent its share and
// then takes over a lost worker's segment sends only what is left of that
// segment, never its own share a second time, and the run still ends
// early with exactly the total sent.
func TestFinishedShareIsNotSentAgain(t *testing.T) {
	gate.Short(t)
	srv, rdb := startRedis(t)
	const total, partial = 11, 2
	tg := newShareTarget(total)
	startPool(t, srv.Addr(), "a", tg.runner("a", false, 0), nil)
	pb := startPool(t, srv.Addr(), "b", tg.runner("b", true, partial), nil)
	waitRunners(t, rdb, 2)
	began := time.Now()
	res := coordinateAsync(t, rdb, Run{Spec: []byte(`{}`), Duration: 60 * time.Second, Workers: 2, JoinTimeout: 10 * time.Second, EndsEarly: true},
		CoordOptions{RunID: "again", StartLead: 300 * time.Millisecond, Logf: t.Logf, HeadroomCPU: 1e6})
	waitFor(t, 20*time.Second, "worker a to finish its share", func() bool { return sawEvent(rdb, "again", "a", "stopped") })
	waitFor(t, 20*time.Second, "worker b to start its share", func() bool { return len(tg.starts("b")) > 0 })
	// b's partial second reaches the coordinator when b hands its segment
	// back (its final flush), before its abandon event.
	pb.cancel()
	var r coordResult
	select {
	case r = <-res:
	case <-time.After(40 * time.Second):
		t.Fatal("Coordinate did not return within 40 s of worker b leaving (the plan's duration is 60 s)")
	}
	if r.err != nil {
		t.Fatalf("Coordinate: %v", r.err)
	}
	if took := time.Since(began); took > 20*time.Second {
		t.Errorf("the run took %s, want it to end once every share was sent, well before its 60 s duration", took)
	}
	bSeg := tg.starts("b")[0].Index
	var segs []string
	own := 0
	for _, a := range tg.starts("a") {
		segs = append(segs, fmt.Sprintf("%d (prior %d)", a.Index, a.Prior))
		if a.Index != bSeg {
			own++
		}
	}
	if own != 1 {
		t.Errorf("worker a started its own segment %d times, want once; it started %v", own, segs)
	}
	if len(segs) != 2 {
		t.Errorf("worker a started %v, want its own segment and b's segment %d", segs, bSeg)
	}
	if got := tg.count(); got != total {
		t.Errorf("the target saw %d requests, want exactly the total %d (a started %v)", got, total, segs)
	}
	if r.out.Reassignments != 1 {
		t.Errorf("reassignments = %d, want 1", r.out.Reassignments)
	}
}

// twoWorkerCoordinator is a running coordinator of run id, in memory, with
// workers a (segment 0 of 2) and b (segment 1), that reads the streams
// through reader and makes every other call through rdb.
func twoWorkerCoordinator(t *testing.T, rdb, reader *redis.Client, id string, def Run) *coordinator {
	t.Helper()
	seq, err := segment.Equal(2)
	if err != nil {
		t.Fatal(err)
	}
	worker := func(id string, seg int) *workerInfo {
		return &workerInfo{id: id, segs: map[int]bool{seg: true}, everSegs: map[int]bool{seg: true}}
	}
	return &coordinator{
		rdb: rdb, reader: reader, def: def, o: CoordOptions{Observer: &countObserver{}, Logf: t.Logf},
		run: id, k: runKeys(id), workers: map[string]*workerInfo{"a": worker("a", 0), "b": worker("b", 1)}, order: []string{"a", "b"},
		owners: map[int]string{0: "a:1", 1: "b:1"}, seq: seq, mg: newMerger(), prior: map[int]int64{}, evCursor: "0", mtCursor: "0",
	}
}

// shipRequests writes to k's metrics stream, as worker w ships them, a
// snapshot of second 0 with n requests.
func shipRequests(t *testing.T, rdb *redis.Client, k runKeys, w string, n int64) {
	t.Helper()
	snap := snapshot.New(0)
	snap.Requests = n
	body, err := snap.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if err := rdb.XAdd(context.Background(), &redis.XAddArgs{Stream: k.metrics(), Values: map[string]any{"w": w, "g": 1, "q": 1, "s": 0, "f": 0, "b": body}}).Err(); err != nil {
		t.Fatal(err)
	}
}

// TestLastMetricsCountBeforeAbandon: a worker ships its last metrics and
// then says "abandoned"; when the coordinator reads both in one batch, the
// metrics count first, so the segment is handed on with what the worker
// sent (its Prior) and a closed-model total is not sent twice.
func TestLastMetricsCountBeforeAbandon(t *testing.T) {
	gate.Short(t)
	_, rdb := startRedis(t)
	ctx := context.Background()
	c := twoWorkerCoordinator(t, rdb, rdb, "order", Run{Duration: time.Second})
	k := c.k
	// As the worker writes them: metrics first, then the event.
	shipRequests(t, rdb, k, "b", 5)
	if err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: k.events(), Values: map[string]any{"type": "abandoned", "w": "b", "g": 1, "reason": "test"}}).Err(); err != nil {
		t.Fatal(err)
	}
	if read, err := c.readStreams(ctx, -1); err != nil || !read { // -1: no BLOCK, both streams in one read
		t.Fatalf("read the streams: read %v, %v", read, err)
	}
	if !c.workers["b"].lost {
		t.Fatal("worker b was not found lost after its abandoned event")
	}
	if got := c.prior[1]; got != 5 {
		t.Errorf("segment 1 handed on with prior %d, want the 5 requests b shipped before abandoning", got)
	}
}

// TestNoLossDecidedOnAFailedRead: a worker's lease has expired and its
// last metrics wait in the stream, but the coordinator's read of the
// streams fails (its reader's connection is cut; its other calls still
// work). The sweep must not call the worker lost then: its segment would
// be handed on with less than it reported, and a closed-model total sent
// twice in part. Once the read works, the loss is decided with the count.
func TestNoLossDecidedOnAFailedRead(t *testing.T) {
	gate.Short(t)
	srv, rdb := startRedis(t)
	px := startProxy(t, srv.Addr())
	px.Cut()
	ctx := context.Background()
	c := twoWorkerCoordinator(t, rdb, newClient(t, px.Addr()), "cutread", Run{Duration: time.Minute, OnWorkerLoss: LossReassign})
	// a is alive (it renews before every sweep); b stopped renewing
	// after it shipped 5 requests, and its lease is half a second.
	sweep := func() error {
		if err := rdb.Incr(ctx, c.k.renewals("a")).Err(); err != nil {
			t.Fatal(err)
		}
		return c.sweep(ctx, false)
	}
	if err := rdb.HSet(ctx, c.k.status("b"), "lease_ms", 500, "fence_ms", 300).Err(); err != nil {
		t.Fatal(err)
	}
	shipRequests(t, rdb, c.k, "b", 5)
	if err := sweep(); err != nil {
		t.Fatal(err)
	}
	// b's lease passing on the coordinator's clock is the fault, not a
	// synchronisation.
	first := time.Now()
	waitFor(t, 5*time.Second, "b's lease to pass", func() bool { return time.Since(first) > 600*time.Millisecond })
	if err := sweep(); err != nil {
		t.Fatal(err)
	}
	if c.workers["b"].lost {
		t.Fatalf("worker b found lost by a sweep that could not read what it shipped; its segment went on with prior %d, want 5", c.prior[1])
	}
	px.Heal()
	waitFor(t, 20*time.Second, "a sweep to find b lost once the read works", func() bool {
		return sweep() == nil && c.workers["b"].lost
	})
	if got := c.prior[1]; got != 5 {
		t.Errorf("segment 1 handed on with prior %d, want the 5 requests b shipped", got)
	}
}

// TestFinalTotalsNeedTheLastRead: at the run's end the coordinator reads
// the workers' last metrics; when that read keeps failing, the run fails
// as unreachable rather than report totals without them.
func TestFinalTotalsNeedTheLastRead(t *testing.T) {
	gate.Short(t)
	srv, rdb := startRedis(t)
	px := startProxy(t, srv.Addr())
	px.Cut()
	// A reader that gives up fast: five failed reads, not five seconds' worth.
	reader := redis.NewClient(&redis.Options{Addr: px.Addr(), DialTimeout: 200 * time.Millisecond, ReadTimeout: 200 * time.Millisecond, MaxRetries: -1,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}})
	t.Cleanup(func() { _ = reader.Close() })
	c := twoWorkerCoordinator(t, rdb, reader, "cutfinal", Run{Duration: time.Second})
	c.out = &Outcome{RunID: c.run}
	shipRequests(t, rdb, c.k, "b", 5)
	out, err := c.finalize(context.Background())
	if !errors.Is(err, ErrRedisUnreachable) {
		t.Fatalf("finalize with the last metrics unreadable: outcome %+v, error %v; want ErrRedisUnreachable", out, err)
	}
}

// TestRunEndsWhenGracefulStopHasNothingToWaitFor: once the schedule is
// over and every worker has stopped, the run ends without waiting out the
// rest of its graceful stop (here 57 s of a 60 s plan), and never before
// the schedule's end, even when the workers stop sooner.
func TestRunEndsWhenGracefulStopHasNothingToWaitFor(t *testing.T) {
	gate.Long(t, 4)
	srv, rdb := startRedis(t)
	const schedule = 3 * time.Second
	quick := segmentRunnerFunc(func(ctx context.Context, a Assignment) error {
		wait := time.NewTimer(time.Until(a.StartAt))
		defer wait.Stop()
		select {
		case <-wait.C:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
		snap := snapshot.New(0)
		snap.Requests = 1
		snap.Latency = load.NewHistogram()
		snap.Latency.Record(time.Millisecond)
		a.Sink.Second(snap)
		return nil // stops at once: well before the schedule's end
	})
	startPool(t, srv.Addr(), "a", quick, nil)
	startPool(t, srv.Addr(), "b", quick, nil)
	waitRunners(t, rdb, 2)
	began := time.Now()
	res := coordinateAsync(t, rdb, Run{Spec: []byte(`{}`), Duration: 60 * time.Second, Grace: 60*time.Second - schedule, Workers: 2, JoinTimeout: 10 * time.Second},
		CoordOptions{RunID: "grace", StartLead: 300 * time.Millisecond, Logf: t.Logf})
	var r coordResult
	select {
	case r = <-res:
	case <-time.After(40 * time.Second):
		t.Fatal("Coordinate did not return within 40 s though both workers had stopped (the schedule is 3 s of a 60 s plan)")
	}
	took := time.Since(began)
	if r.err != nil {
		t.Fatalf("Coordinate: %v", r.err)
	}
	if took < schedule {
		t.Errorf("the run ended after %s, before its %s schedule was over", took, schedule)
	}
	// The bound only has to tell "at the schedule's end" from the 60 s plan.
	if took > 20*time.Second {
		t.Errorf("the run took %s, want it to end soon after the %s schedule, not to wait out the graceful stop", took, schedule)
	}
	if got := r.out.Total.Requests; got != 2 {
		t.Errorf("merged requests = %d, want 2", got)
	}
}
