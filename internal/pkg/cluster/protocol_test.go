package cluster

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/forgeload/forgeload/internal/pkg/cluster/segment"
	"github.com/forgeload/forgeload/internal/pkg/cluster/snapshot"
	"github.com/forgeload/forgeload/internal/pkg/load"
)

// startedLog is a SegmentRunner that records which segments started and
// runs each until cancelled.
type startedLog struct {
	mu      sync.Mutex
	started []int
}

func (s *startedLog) RunSegment(ctx context.Context, a Assignment) error {
	s.mu.Lock()
	s.started = append(s.started, a.Index)
	s.mu.Unlock()
	<-ctx.Done()
	return nil
}

func (s *startedLog) list() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int(nil), s.started...)
}

func createTestRun(t *testing.T, rdb *redis.Client, run string) {
	t.Helper()
	k := runKeys(run)
	err := createRunScript.Run(context.Background(), rdb, []string{k.state(), k.coord(), k.gen(), k.meta()},
		"c:1", 60000, 3600, "plan", `{}`, "duration_ms", 60000, "ttl", 3600).Err()
	if err != nil {
		t.Fatal(err)
	}
}

// sendJoinOffer puts a join offer for run on worker w's inbox, as a
// coordinator does, and returns the entry's id.
func sendJoinOffer(ctx context.Context, rdb *redis.Client, w, run string) string {
	return rdb.XAdd(ctx, &redis.XAddArgs{Stream: inboxKey(w), Values: map[string]any{"type": "join", "run": run}}).Val()
}

// waitJoined waits until worker w is one of run's workers.
func waitJoined(t *testing.T, rdb *redis.Client, w, run string, within time.Duration) {
	t.Helper()
	waitFor(t, within, w+" to join "+run, func() bool { return rdb.HExists(context.Background(), runKeys(run).workers(), w).Val() })
}

// offerJoin offers run to worker w and waits until w has joined it.
func offerJoin(t *testing.T, rdb *redis.Client, w, run string) {
	t.Helper()
	sendJoinOffer(context.Background(), rdb, w, run)
	waitJoined(t, rdb, w, run, 30*time.Second)
}

// TestApplyIgnoresStaleCommands: duplicated, reordered and older-term
// commands are ignored and applied_gen only grows.
func TestApplyIgnoresStaleCommands(t *testing.T) {
	gate.Short(t)
	_, rdb := startRedis(t)
	ctx := context.Background()
	createTestRun(t, rdb, "P1")
	k := runKeys("P1")
	rdb.HSet(ctx, k.workers(), "w1", "{}")
	rl := &startedLog{}
	p, err := NewPool(rdb, PoolOptions{ID: "w1", Runner: rl, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.rdb.Close() })
	m := newMember(p, "P1", []byte(`{}`), time.Minute, 3600)
	m.loadCtx, m.cancelLoad = context.WithCancelCause(ctx)
	m.ship = newShipper(m)
	m.fenceT = time.AfterFunc(time.Hour, func() {})
	t.Cleanup(func() { m.fenceT.Stop(); m.cancelLoad(nil); close(m.quit); m.segWG.Wait() })
	seq, _ := segment.Equal(2)
	startAt := time.Now().Add(time.Minute).UnixMilli()
	steps := []struct {
		d           desired
		wantApplied int64
		wantIgnored int64
	}{
		{desired{Gen: 3, Term: 1, Phase: phasePrepare, Segments: []int{0}, Seq: seq.Bounds()}, 3, 0},
		{desired{Gen: 3, Term: 1, Phase: phasePrepare, Segments: []int{0}, Seq: seq.Bounds()}, 3, 1}, // duplicate
		{desired{Gen: 5, Term: 1, Phase: phaseRun, Segments: []int{0}, Seq: seq.Bounds(), StartAtMs: startAt}, 5, 1},
		{desired{Gen: 4, Term: 1, Phase: phaseRun, Segments: []int{1}, Seq: seq.Bounds(), StartAtMs: startAt}, 5, 2}, // reordered: 4 after 5
		{desired{Gen: 9, Term: 0, Phase: phaseStop, Seq: seq.Bounds()}, 5, 3},                                        // older term
		{desired{Gen: 6, Term: 1, Phase: phaseRun, Segments: []int{1}, Seq: seq.Bounds(), StartAtMs: startAt}, 6, 3},
	}
	for i, st := range steps {
		m.apply(ctx, st.d)
		if m.appliedGen != st.wantApplied || m.ignored.Load() != st.wantIgnored {
			t.Fatalf("step %d (gen %d term %d): applied_gen %d ignored %d, want %d and %d", i, st.d.Gen, st.d.Term, m.appliedGen, m.ignored.Load(), st.wantApplied, st.wantIgnored)
		}
	}
	if got := rdb.HGet(ctx, k.ready(), "w1").Val(); got != "3" {
		t.Errorf("ready[w1] = %q, want 3 (prepared once)", got)
	}
	if got := rdb.HGet(ctx, k.status("w1"), "applied_gen").Val(); got != "6" {
		t.Errorf("status.applied_gen = %q, want 6 (the ack)", got)
	}
	waitFor(t, 10*time.Second, "segment 1 to start", func() bool { return len(rl.list()) >= 2 })
	if got := rl.list(); len(got) != 2 || got[0] != 0 || got[1] != 1 {
		t.Errorf("segments started = %v, want [0 1] (gen 4 never started segment 1 early)", got)
	}
	if _, ok := m.segs[0]; ok || m.segs[1] == nil {
		t.Errorf("running segments = %v, want only 1", m.segs)
	}
}

// TestConvergesFromDesired: a worker that missed three commands (they were
// never put on its stream) converges from the desired hash alone.
func TestConvergesFromDesired(t *testing.T) {
	gate.Short(t)
	srv, rdb := startRedis(t)
	ctx := context.Background()
	rl := &startedLog{}
	startPool(t, srv.Addr(), "w1", rl, nil)
	waitRunners(t, rdb, 1)
	createTestRun(t, rdb, "P2")
	k := runKeys("P2")
	offerJoin(t, rdb, "w1", "P2")
	seq, _ := segment.Equal(1)
	// gens 2, 3 and 4 were "sent" while w1 was away; only desired gen 5 is there.
	d := desired{Gen: 5, Term: 1, Phase: phaseRun, Segments: []int{0}, Seq: seq.Bounds(), StartAtMs: time.Now().UnixMilli()}
	rdb.HSet(ctx, k.desired("w1"), d.hash())
	waitFor(t, 10*time.Second, "applied_gen 5 in status", func() bool {
		return rdb.HGet(ctx, k.status("w1"), "applied_gen").Val() == "5"
	})
	// The segment's runner starts in a goroutine of its own, which a busy
	// machine may run after the status is written.
	waitFor(t, 10*time.Second, "segment 0 to start", func() bool { return len(rl.list()) > 0 })
	if got := rl.list(); len(got) != 1 || got[0] != 0 {
		t.Fatalf("segments started = %v, want [0]", got)
	}
	waitFor(t, 10*time.Second, "status to show w1 busy with P2", func() bool {
		st, err := Status(ctx, rdb)
		return err == nil && len(st.Runners) == 1 && len(st.Runners[0].BusyRuns) == 1 && st.Runners[0].BusyRuns[0] == "P2" && st.Runners[0].Capacity == 1
	})
	if n, _ := rdb.XLen(ctx, k.cmd("w1")).Result(); n != 0 {
		t.Fatalf("cmd stream has %d entries; the test must not send commands", n)
	}
}

// TestMetricsDedup: an entry XADDed twice with the same (w, q) counts once.
func TestMetricsDedup(t *testing.T) {
	gate.Short(t)
	_, rdb := startRedis(t)
	ctx := context.Background()
	k := runKeys("P3")
	snap := snapshot.New(0)
	snap.Requests = 7
	snap.Latency = load.NewHistogram()
	snap.Latency.Record(1500 * time.Microsecond)
	body, _ := snap.MarshalBinary()
	for range 2 { // a retried XADD after a timeout
		rdb.XAdd(ctx, &redis.XAddArgs{Stream: k.metrics(), Values: map[string]any{"w": "w1", "g": 1, "q": 1, "s": 0, "f": 0, "b": body}})
	}
	rdb.XAdd(ctx, &redis.XAddArgs{Stream: k.metrics(), Values: map[string]any{"w": "w2", "g": 1, "q": 1, "s": 0, "f": 0, "b": body}})
	msgs, err := rdb.XRange(ctx, k.metrics(), "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	mg := newMerger()
	for _, msg := range msgs {
		mg.add(msg.Values)
	}
	if got := mg.total.Requests; got != 14 {
		t.Errorf("merged arrivals = %d, want 14 (w1 once + w2 once)", got)
	}
	if got := mg.total.Samples(); got != 2 {
		t.Errorf("merged latency count = %d, want 2", got)
	}
	if mg.dups != 1 {
		t.Errorf("duplicates dropped = %d, want 1", mg.dups)
	}
	if got := mg.seconds[0].Requests; got != 14 {
		t.Errorf("second 0 arrivals = %d, want 14", got)
	}
}

func FuzzParseDesired(f *testing.F) {
	f.Add("5", "1", "run", `{"own":[0],"seq":["0","1"]}`, "123")
	f.Add("x", "", "", "{", "")
	f.Fuzz(func(t *testing.T, gen, term, phase, segs, startAt string) {
		d, err := parseDesired(map[string]string{"gen": gen, "term": term, "phase": phase, "segments": segs, "start_at": startAt})
		if err != nil {
			return
		}
		back, err := parseDesired(stringMap(d.hash()))
		if err != nil {
			t.Fatalf("re-parse of %+v: %v", d, err)
		}
		if back.Gen != d.Gen || back.Term != d.Term || back.Phase != d.Phase || back.StartAtMs != d.StartAtMs {
			t.Fatalf("round trip changed %+v into %+v", d, back)
		}
	})
}

func stringMap(m map[string]any) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = fmt.Sprint(v)
	}
	return out
}

// TestCoordinatorLostWorkerLeaves: with the coordinator lease gone for
// longer than CoordLostAfter, a worker stops and leaves (no zombie load).
func TestCoordinatorLostWorkerLeaves(t *testing.T) {
	gate.Long(t, 3)
	srv, rdb := startRedis(t)
	ctx := context.Background()
	rl := &startedLog{}
	tp := startPool(t, srv.Addr(), "w1", rl, func(o *PoolOptions) { o.CoordLostAfter = 500 * time.Millisecond })
	waitRunners(t, rdb, 1)
	createTestRun(t, rdb, "P4")
	k := runKeys("P4")
	offerJoin(t, rdb, "w1", "P4")
	rdb.Del(ctx, k.coord())
	select {
	case lv := <-tp.leaves:
		if !errors.Is(lv.err, ErrCoordinatorLost) {
			t.Fatalf("left with %v, want ErrCoordinatorLost", lv.err)
		}
	case <-time.After(15 * time.Second): // 0.5 s CoordLostAfter plus a heartbeat, with room for a loaded machine
		t.Fatal("worker did not leave a run whose coordinator vanished")
	}
	if rdb.Exists(ctx, k.alive("w1")).Val() != 0 {
		t.Error("alive key still set after leaving")
	}
}

// TestWorkerReadsRestartFromTheAbort: Redis restarts and the coordinator
// writes the run back as ABORTED before the worker's next heartbeat, so
// the worker finds the run but not its own lease. It leaves with the
// coordinator's reason, as ErrStateLost, not as "lease expired".
func TestWorkerReadsRestartFromTheAbort(t *testing.T) {
	gate.Short(t)
	srv, rdb := startRedis(t)
	ctx := context.Background()
	tp := startPool(t, srv.Addr(), "w1", &startedLog{}, nil)
	waitRunners(t, rdb, 1)
	createTestRun(t, rdb, "P7")
	k := runKeys("P7")
	offerJoin(t, rdb, "w1", "P7")
	// One transaction, so no heartbeat falls between the restart's empty
	// Redis and the coordinator's abort.
	const why = "coordination state lost: redis restarted (run_id changed)"
	if _, err := rdb.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
		pipe.FlushAll(ctx)
		abortRunScript.Eval(ctx, pipe, []string{k.state(), k.meta()}, 3600, "abort_reason", why, "abort_cause", causeStateLost)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	select {
	case lv := <-tp.leaves:
		if !errors.Is(lv.err, ErrStateLost) || !errors.Is(lv.err, ErrAborted) || !strings.Contains(lv.err.Error(), why) {
			t.Fatalf("left with %v, want ErrAborted and ErrStateLost with %q", lv.err, why)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("worker did not leave a run aborted after a Redis restart")
	}
}

// TestOfferRightAfterAnnounceIsRead: a coordinator may offer a run to a
// runner the moment its presence is in Redis, before the runner's pool
// goroutine runs again; that offer must not be taken for a stale one.
func TestOfferRightAfterAnnounceIsRead(t *testing.T) {
	gate.Short(t)
	srv, rdb := startRedis(t)
	ctx := context.Background()
	createTestRun(t, rdb, "P8")
	startPool(t, srv.Addr(), "w1", &startedLog{}, func(o *PoolOptions) {
		o.joined = func() {
			id := sendJoinOffer(ctx, rdb, "w1", "P8")
			offered, _ := strconv.ParseInt(strings.SplitN(id, "-", 2)[0], 10, 64)
			// The pool goes on only once Redis's clock is past the
			// offer, as it is when its goroutine is slow to be scheduled.
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
				if now, err := rdb.Time(ctx).Result(); err == nil && now.UnixMilli() > offered+2 {
					return
				}
			}
		}
	})
	waitJoined(t, rdb, "w1", "P8", 10*time.Second)
}

// TestShipperMergesWhileRedisIsAway: Second never blocks; with no writer
// running, snapshots of one second merge into a single pending entry.
func TestShipperMergesWhileRedisIsAway(t *testing.T) {
	gate.Short(t)
	_, rdb := startRedis(t)
	p, err := NewPool(rdb, PoolOptions{ID: "w1", Runner: &startedLog{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.rdb.Close() })
	m := newMember(p, "P5", nil, time.Minute, 3600)
	s := newShipper(m)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 1000 {
			snap := snapshot.New(i % 2)
			snap.Requests, snap.Dropped = 1, 1
			snap.Latency = load.NewHistogram()
			snap.Latency.Record(time.Duration(100+i) * time.Microsecond)
			s.Second(snap)
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Second blocked with no writer draining")
	}
	if len(s.pending) != 2 || s.pending[0].Requests != 500 || s.pending[1].Samples() != 500 {
		t.Fatalf("pending = %d seconds (requests[0]=%d), want 2 seconds of 500 merged snapshots", len(s.pending), s.pending[0].Requests)
	}
	if s.dropped() != 1000 {
		t.Errorf("dropped = %d, want 1000", s.dropped())
	}
	// Now ship: two entries with q 1 and 2, then a final marker.
	if err := s.send(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	msgs, _ := rdb.XRange(context.Background(), runKeys("P5").metrics(), "-", "+").Result()
	if len(msgs) != 3 || msgs[2].Values["f"] != "1" || msgs[0].Values["q"] != "1" {
		t.Fatalf("stream = %v, want 2 seconds and a final marker with q 1..3", msgs)
	}
}
