package cmd

import (
	"fmt"
	"strings"
	"testing"
	"time"

	runnerv1 "gitea.dev/actions-proto-go/runner/v1"

	"github.com/forgeload/forgeload/internal/pkg/forgetest"
	"github.com/forgeload/forgeload/internal/pkg/nettest"
)

// TestE2ELoadStepWaitsAndSizesAreBounded runs, through the real daemon and
// the fake forge: a load step with graceful_shutdown 1h and timeout 10m
// against a target that never answers, cancelled in the forge in the drain
// after its plan's end (it ends CANCELLED within about 2 s of the cancel
// being seen; before, it ran until its requests timed out), then one asking
// for more graceful shutdown than load.max_graceful_shutdown and one with
// 10,000 endpoints (each refused, naming the key), then a job that shows
// the daemon still serves, with its memory bounded.
func TestE2ELoadStepWaitsAndSizesAreBounded(t *testing.T) {
	parallel(t)
	silent := nettest.SilentTarget(t)
	tg := newTarget(t)
	f := forgetest.New(t, forgetest.WithRegistrationToken("reg-token"))
	n := newNode(t, "load:\n  max_graceful_shutdown: 2h\n  progress_interval: 1s\n")
	registered(t, f, n, "e2e-waits")
	d := n.startDaemon()
	queue := func(with string) int64 {
		return f.QueueJob(forgetest.Job{RunsOn: []string{"forgeload"}, Payload: []byte("on: push\njobs:\n  a:\n    runs-on: forgeload\n    steps:\n      - uses: forgeload/load@v1\n        with:\n" + with)})
	}

	id := queue("          target: " + silent + "\n          rate: 20\n          concurrency: 4\n          duration: 1s\n          graceful_shutdown: 1h\n          timeout: 10m\n")
	// The progress line of plan second 2 is logged in the drain after the
	// 1 s plan: the state under test.
	waitFor(t, "the load step's drain", 30*time.Second, func() bool { return strings.Contains(strings.Join(f.Task(id).Log, "\n"), "[   2s] ") })
	cancelAt := time.Now()
	f.Cancel(id)
	v := waitDone(t, f, id, d)
	// One report interval (1 s) to see the cancel, half a second to cancel
	// the requests in flight, and room for a loaded 2-core machine.
	if lag := time.Since(cancelAt); lag > 6*time.Second || v.Result != runnerv1.Result_RESULT_CANCELLED {
		t.Fatalf("cancelled in the drain: %v after %s, want CANCELLED within about 2 s:\n%s", v.Result, lag, strings.Join(v.Log, "\n"))
	}

	var eps strings.Builder
	for i := range 10_000 {
		fmt.Fprintf(&eps, "{name: e%d, path: /e%d},", i, i)
	}
	for _, c := range []struct{ with, want string }{
		{"          target: " + tg.URL + "/\n          total: 1\n          graceful_shutdown: 3h\n", "graceful_shutdown 3h0m0s is above this runner's limit of 2h0m0s (load.max_graceful_shutdown in the runner config)"},
		{"          target: " + tg.URL + "/\n          total: 1\n          endpoints: '[" + strings.TrimSuffix(eps.String(), ",") + "]'\n", "10000 endpoints are above this runner's limit of 1000 (load.max_endpoints in the runner config)"},
	} {
		v := waitDone(t, f, queue(c.with), d)
		if log := strings.Join(v.Log, "\n"); v.Result != runnerv1.Result_RESULT_FAILURE || !strings.Contains(log, c.want) {
			t.Fatalf("result %v, log lacks %q:\n%s", v.Result, c.want, log)
		}
	}
	if got := tg.n.Load(); got != 0 {
		t.Errorf("the refused jobs sent %d requests, want none", got)
	}
	id = f.QueueJob(forgetest.Job{RunsOn: []string{"forgeload"}, Payload: []byte("on: push\njobs:\n  a:\n    runs-on: forgeload\n    steps:\n      - run: echo still serving\n")})
	stillServing(t, d, waitDone(t, f, id, d))
	if rss := peakRSS(t, d); rss > 400<<20 {
		t.Fatalf("the daemon's peak memory is %d MiB, want it bounded (< 400 MiB)", rss>>20)
	}
}
