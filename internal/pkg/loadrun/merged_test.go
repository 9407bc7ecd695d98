package loadrun

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/forgeload/forgeload/internal/pkg/cluster"
	"github.com/forgeload/forgeload/internal/pkg/load/build"
	"github.com/forgeload/forgeload/internal/pkg/load/outcome"
	"github.com/forgeload/forgeload/internal/pkg/load/outcome/summary"
	"github.com/forgeload/forgeload/internal/pkg/policy"
	"github.com/forgeload/forgeload/internal/pkg/redistest"
)

// redisClient is a client of the Redis at addr, closed when the test ends.
func redisClient(t *testing.T, addr string) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// startPools runs one cluster pool per entry of addrs (its id and the
// address it reaches Redis at), each running segments with this package's
// SegmentRunner under a policy that allows loopback targets, until the
// test ends; o, if set, adjusts each pool's options. It returns once every
// pool has announced itself on rdb.
func startPools(t *testing.T, rdb *redis.Client, addrs map[string]string, o func(*cluster.PoolOptions)) {
	t.Helper()
	pol, err := policy.New(context.Background(), policy.Options{Deny: []string{"127.0.0.2/32"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, len(addrs))
	for id, addr := range addrs {
		po := cluster.PoolOptions{ID: id, Runner: &SegmentRunner{Policy: pol}, Capacity: 1, Logf: t.Logf}
		if o != nil {
			o(&po)
		}
		p, err := cluster.NewPool(redisClient(t, addr), po)
		if err != nil {
			t.Fatal(err)
		}
		go func() { done <- p.Run(ctx) }()
	}
	t.Cleanup(func() {
		cancel()
		for range addrs {
			<-done
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := cluster.Status(ctx, rdb)
		if err == nil && len(st.Runners) == len(addrs) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the %d pools did not announce themselves within 30 s: %v", len(addrs), err)
		}
		time.Sleep(50 * time.Millisecond) // polling interval
	}
}

// TestDistributedResultJudgedAsOneHost: a two-host open-model run through a
// real Redis against a loopback target that answers every third request
// with an error body, 100 ms late, with one worker per host (half the
// rate each can serve). The merged result has the hosts' check counts,
// equal to what the target answered, so checks:rate is judged on them; and
// the arrivals the hosts never sent come with their reason, so the run is
// INVALID by the single-host rules, naming it. Before, the wire snapshot
// carried neither: no check counts (checks:rate was refused in a
// distributed run) and drop totals without reasons.
func TestDistributedResultJudgedAsOneHost(t *testing.T) {
	t.Parallel()
	var served, errBodies atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := served.Add(1)
		time.Sleep(100 * time.Millisecond) // a slow target: the hosts' one worker each falls behind
		if n%3 == 0 {
			errBodies.Add(1)
			_, _ = w.Write([]byte(`{"error": "boom"}`))
			return
		}
		_, _ = w.Write([]byte(`{"ok": true}`))
	}))
	defer srv.Close()
	rs := redistest.Start(t)
	rdb := redisClient(t, rs.Addr())
	startPools(t, rdb, map[string]string{"w1": rs.Addr(), "w2": rs.Addr()}, nil)
	cfg := validated(t, "judged.yaml", `
target: `+srv.URL+`
rate: 40
duration: 2s
concurrency: 1
max_concurrency: 1
graceful_shutdown: 200ms
checks:
  - body_not_contains: error
distributed: {workers: 2, join_timeout: 20s}
thresholds:
  - checks:rate > 99%
`, nil)
	d, err := Coordinate(t.Context(), cfg, CoordSettings{Cluster: redisCluster{rdb}, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	res := d.Result
	if len(res.Checks) != 1 {
		t.Fatalf("merged checks %+v, want the one check's counts", res.Checks)
	}
	c := res.Checks[0]
	// A request cancelled in flight as the run stopped got no response,
	// so no check ran on it; the target may have counted it.
	canceled := res.Classes["canceled"]
	if n := c.Passed + c.Failed; n != res.Requests-canceled || n > served.Load() || n+canceled < served.Load() ||
		c.Failed > errBodies.Load() || c.Failed+canceled < errBodies.Load() {
		t.Errorf("merged check %+v over %d requests (%d cancelled in flight); the target answered %d, %d with an error body",
			c, res.Requests, canceled, served.Load(), errBodies.Load())
	}
	t.Logf("invalid %+v; checks %+v", res.Invalid, res.Checks)
	ths := build.Evaluate(d.Thresholds, res)
	if len(ths) != 1 || ths[0].Passed || ths[0].Skipped {
		t.Errorf("thresholds %+v, want checks:rate > 99%% judged and failing on the merged counts", ths)
	}
	var by int64
	for _, n := range res.DroppedBy {
		by += n
	}
	if res.Dropped == 0 || by != res.Dropped || res.DroppedBy["stop"] == 0 {
		t.Errorf("merged dropped %d, by reason %v: want drops, each with its reason (stop among them)", res.Dropped, res.DroppedBy)
	}
	if len(res.Invalid) == 0 || !strings.Contains(res.Invalid[0].Detail, "stop: ") {
		t.Errorf("invalid = %+v, want INVALID naming the drops' reason", res.Invalid)
	}
	// Every failure's message crossed the wire from its host: the merged
	// summary lists the check's, and listed and other add up to the errors.
	sum := summary.Of(res, nil)
	listed := sum.ErrorMessagesOther
	for _, m := range sum.ErrorMessages {
		listed += m.Count
	}
	if len(sum.ErrorMessages) == 0 || listed != res.Errors || !strings.Contains(fmt.Sprint(sum.ErrorMessages), "error") {
		t.Errorf("merged error messages %+v (other %d) count %d failures of %d errors; want the check's message and all of them",
			sum.ErrorMessages, sum.ErrorMessagesOther, listed, res.Errors)
	}
	// Each merged second keeps its endpoint's row, for the report's
	// per-endpoint series.
	for _, sec := range res.Seconds {
		if sec.Requests > 0 && (len(sec.Endpoints) != 1 || sec.Endpoints[0].Requests != sec.Requests || sec.Endpoints[0].Hist.Count() != sec.Hist.Count()) {
			t.Errorf("merged second %d: %d requests, endpoint rows %+v; want one row with them all", sec.Second, sec.Requests, sec.Endpoints)
		}
	}
}

// TestClosedTotalAfterDeathNeverUnderCounts: a closed-model total of 1,200
// over two pools through a real Redis; w2 reaches Redis through a relay
// that is cut mid-run, so it fences itself and its last metrics never
// arrive, and its share moves to w1. The merged result counts w2's
// requests as the more of what it shipped and what its last heartbeat
// said it had sent, so it never reports fewer requests than the loopback
// target got by then, and the summary states the bound of what w2 may
// have sent after that heartbeat: the target's count lies between the two.
// Before, the merged requests counted only the metrics that arrived, and
// the summary had no bound.
func TestClosedTotalAfterDeathNeverUnderCounts(t *testing.T) {
	t.Parallel()
	var served, fromW2 atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		if strings.HasPrefix(r.Header.Get(SegmentHeader), "w2/") {
			fromW2.Add(1)
		}
		time.Sleep(10 * time.Millisecond) // paces each user at about 100 req/s
	}))
	defer srv.Close()
	rs := redistest.Start(t)
	px := redistest.StartProxy(t, rs.Addr())
	rdb := redisClient(t, rs.Addr())
	startPools(t, rdb, map[string]string{"w1": rs.Addr(), "w2": px.Addr()}, func(o *cluster.PoolOptions) {
		o.Heartbeat, o.LeaseTTL, o.FenceAfter = cluster.DefaultHeartbeat/2, cluster.DefaultLeaseTTL/2, cluster.DefaultFenceAfter/2
	})
	cfg := validated(t, "closed.yaml", `
target: `+srv.URL+`
concurrency: 2
total: 1200
duration: 30s
distributed: {workers: 2, join_timeout: 20s}
`, nil)
	type result struct {
		d   *Distributed
		err error
	}
	done := make(chan result, 1)
	go func() {
		d, err := Coordinate(t.Context(), cfg, CoordSettings{Cluster: redisCluster{rdb}, Logf: t.Logf})
		done <- result{d, err}
	}()
	deadline := time.Now().Add(30 * time.Second)
	for fromW2.Load() < 150 {
		if time.Now().After(deadline) {
			t.Fatalf("w2 sent %d requests in 30 s, want 150 before the cut", fromW2.Load())
		}
		time.Sleep(5 * time.Millisecond) // polling interval
	}
	px.Cut()
	var r result
	select {
	case r = <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("the run did not end within 60 s of the cut")
	}
	px.Heal()
	if r.err != nil {
		t.Fatal(r.err)
	}
	res := r.d.Result
	lost := false
	for _, w := range r.d.Outcome.Workers {
		lost = lost || w.ID == "w2" && w.Lost
	}
	if !lost {
		t.Fatalf("w2 was not lost: %+v", r.d.Outcome.Workers)
	}
	u := res.Unreported
	if u == nil {
		t.Fatalf("no unreported traffic stated for lost w2; merged requests %d, the target got %d", res.Requests, served.Load())
	}
	got := served.Load()
	t.Logf("merged requests %d (%d counted from w2's last heartbeat, up to %d more), target %d, from w2 %d", res.Requests, u.Counted, u.Bound, got, fromW2.Load())
	if res.Requests > got || got > res.Requests+u.Bound {
		t.Errorf("merged requests %d and bound %d: the target's %d does not lie between %d and %d", res.Requests, u.Bound, got, res.Requests, res.Requests+u.Bound)
	}
	var b strings.Builder
	if err := outcome.New(outcome.Input{Result: res, Thresholds: r.d.Thresholds}).WriteText(&b); err != nil {
		t.Fatal(err)
	}
	t.Logf("summary:\n%s", b.String())
	if !strings.Contains(b.String(), "Unreported (lost hosts)") || !strings.Contains(b.String(), "w2: ") {
		t.Errorf("summary does not state w2's unreported traffic:\n%s", b.String())
	}
}
