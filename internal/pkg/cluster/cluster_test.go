package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/forgeload/forgeload/internal/pkg/cluster/snapshot"
)

type countObserver struct {
	workers    atomic.Int64
	reassigned atomic.Int64
}

func (o *countObserver) SetWorkers(n int)   { o.workers.Store(int64(n)) }
func (o *countObserver) SegmentReassigned() { o.reassigned.Add(1) }

// TestThreeWorkersExactTotal: three runners split one plan; every arrival
// index is sent exactly once and the merged metrics count them all.
func TestThreeWorkersExactTotal(t *testing.T) {
	gate.Long(t, 5)
	srv, rdb := startRedis(t)
	log := newArrivalLog()
	var pools []*testPool
	for _, id := range []string{"a", "b", "c"} {
		pools = append(pools, startPool(t, srv.Addr(), id, log.runner(id), nil))
	}
	waitRunners(t, rdb, 3)
	const rate, secs = 90, 2
	var live atomic.Int64
	obs := &countObserver{}
	// A worker that wakes after start_at starts at that plan offset and
	// skips what it missed; the lead leaves room for a loaded machine, so
	// that every arrival is sent and the count can be exact.
	out, err := Coordinate(context.Background(), rdb, Run{
		Spec: []byte(fmt.Sprintf(`{"rate":%d}`, rate)), Duration: secs * time.Second, Workers: 3, JoinTimeout: 5 * time.Second,
	}, CoordOptions{RunID: "exact", StartLead: time.Second, Logf: t.Logf, Observer: obs,
		OnSecond: func(*snapshot.Snapshot) { live.Add(1) }})
	if err != nil {
		t.Fatalf("Coordinate: %v", err)
	}
	const want = rate * secs
	if got := log.count(); got != want {
		t.Errorf("distinct arrivals = %d, want %d", got, want)
	}
	log.checkNoDoubleOwner(t)
	if got := out.Total.Requests; got != want {
		t.Errorf("merged requests = %d, want %d", got, want)
	}
	if got := out.Total.Samples(); got != want {
		t.Errorf("merged histogram count = %d, want %d", got, want)
	}
	if len(out.Workers) != 3 {
		t.Fatalf("worker rows = %d, want 3", len(out.Workers))
	}
	for _, w := range out.Workers {
		if w.Samples != want/3 {
			t.Errorf("worker %s samples = %d, want %d (exact equal split)", w.ID, w.Samples, want/3)
		}
	}
	// Start skew: every worker's local start instant is the same moment,
	// up to what its clock measurement could know. Each worker converts
	// start_at from Redis's clock with an offset measured over its fastest
	// TIME round trip, which is off by at most half that round trip; the
	// round trips are in each worker's status. On a quiet machine they are
	// well under a millisecond (and the bound about 10 ms); a machine at a
	// load average of 20 can stretch them to tens of milliseconds, which
	// moves the planned start by as much and is not a bug.
	rtt := map[string]time.Duration{}
	for _, id := range []string{"a", "b", "c"} {
		us, err := rdb.HGet(context.Background(), runKeys("exact").status(id), "rtt_us").Int64()
		if err != nil {
			t.Fatalf("rtt_us of %s: %v", id, err)
		}
		rtt[id] = time.Duration(us) * time.Microsecond
	}
	type start struct {
		id string
		at time.Time
	}
	var starts []start
	for _, id := range []string{"a", "b", "c"} {
		log.mu.Lock()
		for _, a := range log.starts[id] {
			starts = append(starts, start{id, a.StartAt})
		}
		log.mu.Unlock()
	}
	if len(starts) != 3 {
		t.Fatalf("got %d segment starts, want 3", len(starts))
	}
	skewBound := func(a, b string) time.Duration { return (rtt[a]+rtt[b])/2 + 2*time.Millisecond }
	for _, s := range starts[1:] {
		if d, most := s.at.Sub(starts[0].at).Abs(), skewBound(s.id, starts[0].id); d > most {
			t.Errorf("planned start skew %s between workers %s and %s, want ≤ %s (half their clock round trips %v, plus 2 ms)", d, s.id, starts[0].id, most, rtt)
		}
	}
	// Measured skew, as a target would see it: each worker's first request,
	// less its planned offset k/rate, lands within 50 ms of the others' (on
	// top of the planned skew's bound): its timers fire nearly on time at
	// least once in its arrivals. (The planned skew above is the exact
	// check; this one catches a worker that starts on the wrong instant,
	// with room for a loaded machine that wakes every timer late.)
	first := map[string]time.Time{}
	log.mu.Lock()
	for k, as := range log.byK {
		for _, a := range as {
			at := a.at.Add(-time.Duration(k) * time.Second / rate)
			if f, ok := first[a.w]; !ok || at.Before(f) {
				first[a.w] = at
			}
		}
	}
	log.mu.Unlock()
	var lo, hi time.Time
	var loID, hiID string
	for id, at := range first {
		if lo.IsZero() || at.Before(lo) {
			lo, loID = at, id
		}
		if at.After(hi) {
			hi, hiID = at, id
		}
	}
	if len(first) != 3 || hi.Sub(lo) > skewBound(loID, hiID)+50*time.Millisecond {
		t.Errorf("measured start skew %s over %d workers, want ≤ %s", hi.Sub(lo), len(first), skewBound(loID, hiID)+50*time.Millisecond)
	}
	if len(out.Seconds) != secs {
		t.Errorf("per-second series has %d seconds, want %d", len(out.Seconds), secs)
	}
	if live.Load() != secs {
		t.Errorf("OnSecond called %d times, want %d", live.Load(), secs)
	}
	if obs.workers.Load() != 3 {
		t.Errorf("observer workers = %d, want 3", obs.workers.Load())
	}
	st, err := Status(context.Background(), rdb)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Runs) != 1 || st.Runs[0].State != StateDone || len(st.Runs[0].Segments) != 3 {
		t.Fatalf("Status runs = %+v, want one DONE run with 3 segments", st.Runs)
	}
	if ttl := rdb.TTL(context.Background(), runKeys("exact").meta()).Val(); ttl <= 0 || ttl > time.Hour {
		t.Errorf("meta TTL after finalize = %s, want ≤ 1h", ttl)
	}
	// Once every worker has left (after its last heartbeat), its status
	// key still expires within the hour, and so does its inbox.
	waitFor(t, 10*time.Second, "every worker to leave the run", func() bool {
		for _, p := range pools {
			if len(p.p.Runs()) > 0 {
				return false
			}
		}
		return true
	})
	for _, id := range []string{"a", "b", "c"} {
		for _, key := range []string{runKeys("exact").status(id), inboxKey(id)} {
			if ttl := rdb.TTL(context.Background(), key).Val(); ttl <= 0 || ttl > time.Hour {
				t.Errorf("%s TTL after the run = %s, want ≤ 1h", key, ttl)
			}
		}
	}
}

// TestJoinTimeoutMessage: too few workers → a message naming the counts
// and the available runners.
func TestJoinTimeoutMessage(t *testing.T) {
	gate.Long(t, 3)
	srv, rdb := startRedis(t)
	log := newArrivalLog()
	startPool(t, srv.Addr(), "a", log.runner("a"), func(o *PoolOptions) { o.Labels = []string{"gpu"} })
	startPool(t, srv.Addr(), "b", log.runner("b"), nil)
	waitRunners(t, rdb, 2)
	_, err := Coordinate(context.Background(), rdb, Run{
		Spec: []byte(`{"rate":10}`), Duration: time.Second, Workers: 3, MinWorkers: 2, JoinTimeout: 2 * time.Second, Labels: []string{"gpu"},
	}, CoordOptions{Logf: t.Logf})
	want := "only 1 of 3 workers joined within 2s (min_workers 2); available runners: a, b"
	if err == nil || err.Error() != want {
		t.Fatalf("Coordinate error = %v, want %q", err, want)
	}
	if log.running.Load() != 0 {
		t.Fatal("load started although the run failed to recruit")
	}
}

// TestRedisRestartAbortsEveryone: Redis restarts without persistence
// mid-run; the coordinator and every worker stop with the reason.
func TestRedisRestartAbortsEveryone(t *testing.T) {
	gate.Short(t)
	srv, rdb := startRedis(t)
	log := newArrivalLog()
	pools := []*testPool{
		startPool(t, srv.Addr(), "a", log.runner("a"), nil),
		startPool(t, srv.Addr(), "b", log.runner("b"), nil),
	}
	waitRunners(t, rdb, 2)
	errc := make(chan error, 1)
	go func() {
		_, err := Coordinate(context.Background(), rdb, Run{Spec: []byte(`{"rate":20}`), Duration: 30 * time.Second, Workers: 2},
			CoordOptions{StartLead: 200 * time.Millisecond, Logf: t.Logf})
		errc <- err
	}()
	waitFor(t, 30*time.Second, "first arrivals", func() bool { return log.count() > 2 })
	srv.Restart()
	restarted := time.Now()
	select {
	case err := <-errc:
		if err == nil || !strings.Contains(err.Error(), "coordination state lost: redis restarted (run_id changed)") {
			t.Fatalf("Coordinate error = %v, want coordination state lost: redis restarted (run_id changed)", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("coordinator did not notice the Redis restart within 10s")
	}
	for _, p := range pools {
		select {
		case lv := <-p.leaves:
			if !errors.Is(lv.err, ErrStateLost) {
				t.Errorf("runner %s left with %v, want ErrStateLost", p.p.ID(), lv.err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("runner %s did not leave within 10s of the restart", p.p.ID())
		}
	}
	waitFor(t, 5*time.Second, "load to stop", func() bool { return log.running.Load() == 0 })
	t.Logf("everyone stopped %s after the restart", time.Since(restarted))
}
