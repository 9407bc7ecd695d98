package run

import (
	"context"
	"strings"
	"testing"
	"time"

	runnerv1 "gitea.dev/actions-proto-go/runner/v1"

	"github.com/forgeload/forgeload/internal/pkg/jobrun"
	"github.com/forgeload/forgeload/internal/pkg/policy"
)

// TestLoadStepPairedRegression: a load step with baseline_target whose
// candidate answers in 250 ms against the baseline's 125 ms fails the step
// with the paired regression, and logs both sides. The service times are
// long enough that a loaded machine's scheduling delay (added to both
// sides: up to 700 ms was seen with a load average of 15 on two cores)
// does not hide the 2x ratio; 30 workers from the start, so that the
// pool need not grow on a starved CPU (where it rightly does not).
func TestLoadStepPairedRegression(t *testing.T) {
	t.Parallel()
	cand := newCountingServer(t, "", 250*time.Millisecond)
	base := newCountingServer(t, "", 125*time.Millisecond)
	h := newHarness(t)
	v := h.run(`
on: push
jobs:
  perf:
    runs-on: forgeload
    steps:
      - id: ab
        uses: forgeload/load@v1
        with:
          target: `+cand.URL+`/
          baseline_target: `+base.URL+`
          baseline_limits: "[p50=25, p99=25]"
          rate: 30
          duration: 6s
          concurrency: 30
          validity: warn
`, Options{})
	// validity warns: a generator starved on a loaded test box makes the run
	// INVALID (rightly), and this test is about the paired verdict.
	if v.Result != runnerv1.Result_RESULT_FAILURE {
		t.Fatalf("result %v, want FAILURE; log:\n%s", v.Result, logText(v))
	}
	for _, w := range []string{"regressed against the baseline target", "Paired A/B run: REGRESSION", "baseline:GET /", "=25%"} {
		wantContains(t, "log", logText(v), w)
	}
	if strings.Contains(logText(v), "no thresholds") {
		t.Errorf("a paired run, judged by its verdict, is warned that it has no thresholds:\n%s", logText(v))
	}
	if c, b := cand.n.Load(), base.n.Load(); c == 0 || c-b > 1 || b-c > 1 {
		t.Errorf("candidate saw %d requests, baseline %d: want them alternating", c, b)
	}
}

// TestLoadStepDeniedBaselineTarget: a baseline_target the runner's target
// policy denies fails the step before either target sees a request.
func TestLoadStepDeniedBaselineTarget(t *testing.T) {
	t.Parallel()
	cand := newCountingServer(t, "", 0)
	denied := newCountingServer(t, "127.0.0.2:0", 0)
	h := newHarness(t)
	pol, err := policy.New(context.Background(), policy.Options{Deny: []string{"127.0.0.2/32"}})
	if err != nil {
		t.Fatal(err)
	}
	v := h.run("on: push\njobs:\n  perf:\n    runs-on: forgeload\n    steps:\n      - uses: forgeload/load@v1\n        with:\n          target: "+cand.URL+"/\n          baseline_target: "+denied.URL+"\n          rate: 10\n          duration: 1s\n",
		Options{Config: jobrun.Config{Policy: pol}})
	if v.Result != runnerv1.Result_RESULT_FAILURE {
		t.Fatalf("result %v, want FAILURE", v.Result)
	}
	wantContains(t, "log", logText(v), `is denied by load.deny_targets rule "127.0.0.2/32"`)
	if c, d := cand.n.Load(), denied.n.Load(); c != 0 || d != 0 {
		t.Fatalf("requests: candidate %d, denied baseline %d; want none", c, d)
	}
}
