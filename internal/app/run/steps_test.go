package run

import (
	"testing"
	"time"

	runnerv1 "gitea.dev/actions-proto-go/runner/v1"

	"github.com/forgeload/forgeload/internal/pkg/container"
	"github.com/forgeload/forgeload/internal/pkg/jobrun"
)

// TestNewFixesJobDeps: New applies the documented defaults once, into what
// every job it makes is given.
func TestNewFixesJobDeps(t *testing.T) {
	t.Parallel()
	r := New(nil, Options{Config: jobrun.Config{Name: "r1", Envs: map[string]string{"A": "1"}, Instance: "https://forge", WorkDir: "/w", ProcessOwner: "uuid"}})
	d := r.o.Config
	if d.Name != "r1" || d.Envs["A"] != "1" || d.Instance != "https://forge" {
		t.Errorf("the config lost the options: %+v", d)
	}
	if d.Timeout != jobrun.DefaultTimeout || d.Logger == nil || r.o.ReportInterval != DefaultReportInterval {
		t.Errorf("job defaults: timeout %s, logger %v, report interval %s", d.Timeout, d.Logger, r.o.ReportInterval)
	}
	if d.TaskRoot != taskRoot("/w", "uuid") || d.TaskRoot == d.WorkDir {
		t.Errorf("task root %q, want the registration's own in %q", d.TaskRoot, d.WorkDir)
	}
	if d.PullPolicy != container.PullMissing || d.ServiceTimeout != jobrun.DefaultServiceTimeout {
		t.Errorf("container defaults: pull %q, service timeout %s", d.PullPolicy, d.ServiceTimeout)
	}
	if d.ProgressInterval != 5*time.Second {
		t.Errorf("load defaults: progress every %s", d.ProgressInterval)
	}
}

// TestEnvSeesEarlierKeys: the workflow's and the job's env: are resolved
// in order (workflow first, then the job's, each by key), every key seeing
// those before it; a step's env: sees them all.
func TestEnvSeesEarlierKeys(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	v := h.run(`
on: push
env:
  A: one
jobs:
  a:
    runs-on: x
    env:
      B: ${{ env.A }}-two
      C: ${{ env.B }}-three
    steps:
      - run: echo "got $D"
        env:
          D: ${{ env.C }}-four
`, Options{})
	if v.Result != runnerv1.Result_RESULT_SUCCESS {
		t.Fatalf("result %v; log:\n%s", v.Result, logText(v))
	}
	wantContains(t, "log", logText(v), "got one-two-three-four")
}
