package loadrun

import (
	"context"
	"errors"
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
	"github.com/forgeload/forgeload/internal/pkg/policy"
	"github.com/forgeload/forgeload/internal/pkg/redistest"
)

// redisCluster coordinates through a real Redis as runner w1.
type redisCluster struct{ rdb *redis.Client }

func (c redisCluster) Coordinate(ctx context.Context, p cluster.Run, o cluster.CoordOptions, _ func(string) string) (*cluster.Outcome, error) {
	o.Coordinator, o.StartLead = "w1", 300*time.Millisecond
	return cluster.Coordinate(ctx, c.rdb, p, o)
}

// endedRunner tells when each segment it runs has returned.
type endedRunner struct {
	SegmentRunner
	ended chan string
}

func (r *endedRunner) RunSegment(ctx context.Context, a cluster.Assignment) error {
	defer func() { r.ended <- a.Worker }()
	return r.SegmentRunner.RunSegment(ctx, a)
}

// TestDistributedAbortOnFail: every request of a two-host run through a
// real Redis is a 500; the coordinator judges the abort_on_fail threshold
// on the merged seconds and stops both hosts long before the 30 s plan
// ends, and the verdict says aborted.
func TestDistributedAbortOnFail(t *testing.T) {
	t.Parallel()
	var seen atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.Add(1)
		w.WriteHeader(http.StatusInternalServerError)
	}))
	defer srv.Close()
	rs := redistest.Start(t)
	client := func() *redis.Client {
		c := redis.NewClient(&redis.Options{Addr: rs.Addr(), DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second,
			MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}})
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	pol, err := policy.New(context.Background(), policy.Options{Deny: []string{"127.0.0.2/32"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 2)
	runner := &endedRunner{SegmentRunner: SegmentRunner{Policy: pol}, ended: make(chan string, 4)}
	for _, id := range []string{"w1", "w2"} {
		p, err := cluster.NewPool(client(), cluster.PoolOptions{ID: id, Runner: runner, Capacity: 1, Logf: t.Logf})
		if err != nil {
			t.Fatal(err)
		}
		go func() { done <- p.Run(ctx) }()
	}
	t.Cleanup(func() {
		cancel()
		for range 2 {
			<-done
		}
	})
	cfg := validated(t, "abort.yaml", `
target: `+srv.URL+`
rate: 40
duration: 30s
distributed:
  workers: 2
  join_timeout: 20s
thresholds:
  - expr: http_req_failed:rate < 1%
    abort_on_fail: true
    delay: 1s
`, nil)
	d, err := Coordinate(ctx, cfg, CoordSettings{Cluster: redisCluster{client()}, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	var ab *build.Abort
	if !errors.As(d.Aborted, &ab) || d.Cancelled {
		t.Fatalf("Aborted = %v, Cancelled = %v: want an *build.Abort and not cancelled", d.Aborted, d.Cancelled)
	}
	// Both hosts' segments end; a host that kept sending would run to
	// the end of its 30 s share.
	for range 2 {
		select {
		case <-runner.ended:
		case <-time.After(15 * time.Second):
			t.Fatal("a host's segment still runs 15 s after the abort")
		}
	}
	planned := int64(40 * 30)
	if d.Result.Requests > planned/4 || seen.Load() > planned/4 {
		t.Errorf("the run sent %d requests (the target saw %d) of %d planned: it was not stopped early", d.Result.Requests, seen.Load(), planned)
	}
	v := outcome.New(outcome.Input{Result: d.Result, Thresholds: d.Thresholds, Stopped: d.Aborted}).Verdict
	if v.Kind != outcome.Fail || !strings.HasPrefix(v.Reasons[0], "aborted: http_req_failed:rate < 1% (0.01) at ") {
		t.Errorf("verdict = %v %q, want a failure saying aborted", v.Kind, v.Reasons)
	}
}
