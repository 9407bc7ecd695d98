package jobrun

import (
	"strings"
	"testing"

	"github.com/forgeload/forgeload/internal/pkg/workflow"
)

// jobOf parses a one-job workflow into a job, for its artifact names.
func jobOf(t *testing.T, src string) *job {
	t.Helper()
	wf, err := workflow.Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return &job{wf: wf}
}

// TestArtifactName: every job of a run, and every leg of a matrix, names
// its load step's artifact apart, with readable names where it can and a
// hash where characters had to be replaced or the name is long.
func TestArtifactName(t *testing.T) {
	t.Parallel()
	plain := jobOf(t, "on: push\njobs:\n  perf:\n    runs-on: x\n    steps:\n      - id: api\n        uses: forgeload/load@v1\n      - uses: forgeload/load@v1\n")
	if got := plain.artifactName(plain.wf.Job.Steps[0], 0); got != "forgeload-perf-api" {
		t.Errorf("artifact of step api of job perf = %q", got)
	}
	if got := plain.artifactName(plain.wf.Job.Steps[1], 1); got != "forgeload-perf-step-2" {
		t.Errorf("artifact of the second step, without an id = %q", got)
	}
	leg := func(os string) string {
		j := jobOf(t, "on: push\njobs:\n  perf:\n    runs-on: x\n    strategy:\n      matrix:\n        os: ['"+os+"']\n        go: ['1.22']\n    steps:\n      - id: api\n        uses: forgeload/load@v1\n")
		return j.artifactName(j.wf.Job.Steps[0], 0)
	}
	if got := leg("linux"); got != "forgeload-perf-api-1.22-linux" {
		t.Errorf("artifact of matrix leg (1.22, linux) = %q", got)
	}
	a, b := leg("linux/amd64"), leg("linux amd64")
	if a == b || !strings.HasPrefix(a, "forgeload-perf-api-1.22-linux-amd64-") {
		t.Errorf("legs linux/amd64 and 'linux amd64' = %q and %q, want two names, readable up to a hash", a, b)
	}
	long := jobOf(t, "on: push\njobs:\n  perf:\n    runs-on: x\n    steps:\n      - id: "+strings.Repeat("a", 200)+"\n        uses: forgeload/load@v1\n")
	if got := long.artifactName(long.wf.Job.Steps[0], 0); len(got) > maxArtifactName || unsafeArtifactChars.MatchString(got) {
		t.Errorf("artifact of a long step id = %q (%d characters), want at most %d safe ones", got, len(got), maxArtifactName)
	}
}

// TestParseBaselineAsk: baseline_runs defaults to 5 and must be a whole
// number from 1 to 50 beside a baseline:.
func TestParseBaselineAsk(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		with map[string]string
		runs int
		err  string
	}{
		{with: map[string]string{"baseline": "main"}, runs: 5},
		{with: map[string]string{"baseline": "main", "baseline_runs": " 10 "}, runs: 10},
		{with: map[string]string{"baseline": "main", "baseline_runs": "0"}, err: "baseline_runs: \"0\" is not a whole number from 1 to 50"},
		{with: map[string]string{"baseline": "main", "baseline_runs": "many"}, err: "e.g. baseline_runs: 5"},
		{with: map[string]string{"baseline_runs": "3"}, err: "baseline is not"},
	} {
		ask, err := parseBaselineAsk(tc.with)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("parseBaselineAsk(%v) = %v, want an error with %q", tc.with, err, tc.err)
			}
			continue
		}
		if err != nil || ask.runs != tc.runs || ask.branch != tc.with["baseline"] {
			t.Errorf("parseBaselineAsk(%v) = %+v, %v, want %d runs", tc.with, ask, err, tc.runs)
		}
	}
}

// TestPullNumber: the pull request comes from the event payload of a
// pull_request or pull_request_target event only.
func TestPullNumber(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		event string
		ev    map[string]any
		want  int64
	}{
		{"pull_request", map[string]any{"number": float64(7)}, 7},
		{"pull_request_target", map[string]any{"pull_request": map[string]any{"number": float64(9)}}, 9},
		{"push", map[string]any{"number": float64(7)}, 0},
		{"pull_request", map[string]any{"number": "7"}, 0},
		{"pull_request", map[string]any{"number": 7.5}, 0},
	} {
		j := &job{github: map[string]any{"event_name": tc.event, "event": tc.ev}}
		if got := j.pullNumber(); got != tc.want {
			t.Errorf("pull request of %s %v = %d, want %d", tc.event, tc.ev, got, tc.want)
		}
	}
}
