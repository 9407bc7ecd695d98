package jobrun

import (
	"context"
	"strings"
	"testing"

	runnerv1 "gitea.dev/actions-proto-go/runner/v1"
)

// runPayload runs a one-job workflow payload with a memReporter.
func runPayload(t *testing.T, payload string) (runnerv1.Result, *memReporter) {
	t.Helper()
	cfg := Config{WorkDir: t.TempDir()}.WithDefaults()
	rep := newMemReporter()
	j := NewJob(&cfg, &runnerv1.Task{Id: 1, WorkflowPayload: []byte(payload)})
	res := j.Run(context.Background(), context.Background(), rep)
	j.Cleanup()
	return res, rep
}

// TestCheckStepsBeforeAnyRuns: what the runner cannot run is reported when
// the job starts, before any step runs, naming each such step, what it
// uses, why and what to do instead; the job fails with every other step
// skipped. Before, the first step ran and the job failed only on reaching
// the unsupported step, with the advice "replace this step".
func TestCheckStepsBeforeAnyRuns(t *testing.T) {
	t.Parallel()
	res, rep := runPayload(t, `
on: push
jobs:
  a:
    runs-on: x
    steps:
      - run: echo first-step-ran
      - uses: actions/setup-go@v5
        with:
          go-version: "1.26"
      - name: image
        uses: docker://alpine:3
      - uses: actions/checkout@v4
        with:
          sparse-checkout: src
      - uses: acme/thing
      - uses: ../elsewhere/action
`)
	if res != runnerv1.Result_RESULT_FAILURE {
		t.Fatalf("result %v, want FAILURE", res)
	}
	all := strings.Join(rep.rows[-1], "\n")
	for i := range 6 {
		all += "\n" + strings.Join(rep.rows[i], "\n")
	}
	if strings.Contains(all, "first-step-ran") {
		t.Fatalf("a step ran before the job was refused:\n%s", all)
	}
	job := strings.Join(rep.rows[-1], "\n")
	for _, want := range []string{
		`step 2 "Run actions/setup-go@v5" uses "actions/setup-go@v5": the task carries no default actions URL (Gitea's DEFAULT_ACTIONS_URL; a local run has none), so actions/setup-go has no forge to come from; write the action's full URL: uses: https://host/actions/setup-go@v5; check that actions/setup-go exists on the forge with the ref v5`,
		"it downloads Go from the internet, which a runner without access cannot; install Go on the runner host",
		`step 3 "image" uses "docker://alpine:3": docker:// steps need a Docker Engine, and this runner has none; run the job on a runner with Docker`,
		`step 4 "Run actions/checkout@v4" uses "actions/checkout@v4": actions/checkout: with.sparse-checkout: src is not supported`,
		`step 5 "Run acme/thing" uses "acme/thing": a uses: reference needs a version after @`,
		`step 6 "Run ../elsewhere/action" uses "../elsewhere/action": a local action must be a directory inside the workspace; write uses: ./path/to/action`,
		"this runner cannot run 5 step(s) of job a (listed above), so none of its steps ran",
	} {
		if !strings.Contains(job, want) {
			t.Errorf("job rows lack %q:\n%s", want, job)
		}
	}
	wantEnds := []runnerv1.Result{runnerv1.Result_RESULT_SKIPPED, runnerv1.Result_RESULT_FAILURE, runnerv1.Result_RESULT_FAILURE, runnerv1.Result_RESULT_FAILURE, runnerv1.Result_RESULT_FAILURE, runnerv1.Result_RESULT_FAILURE}
	for i, w := range wantEnds {
		if rep.ends[i] != w {
			t.Errorf("step %d ended %v, want %v", i, rep.ends[i], w)
		}
	}
	if got := strings.Join(rep.rows[2], "\n"); !strings.Contains(got, `"docker://alpine:3": docker:// steps need a Docker Engine`) {
		t.Errorf("the refused step's own rows do not say why:\n%s", got)
	}
}

// TestCheckStepsContinueOnError: a step the runner cannot run that
// continues on error is a warning when the job starts, and the job runs;
// a job skipped by its if: is not checked at all.
func TestCheckStepsContinueOnError(t *testing.T) {
	t.Parallel()
	res, rep := runPayload(t, `
on: push
jobs:
  a:
    runs-on: x
    steps:
      - run: echo first-step-ran
      - uses: actions/cache@v4
        continue-on-error: true
`)
	if res != runnerv1.Result_RESULT_SUCCESS {
		t.Fatalf("result %v, want SUCCESS; rows %v", res, rep.rows)
	}
	if job := strings.Join(rep.rows[-1], "\n"); !strings.Contains(job, `::warning::step 2 "Run actions/cache@v4" uses "actions/cache@v4"`) {
		t.Errorf("no warning for the step:\n%s", job)
	}
	if got := strings.Join(rep.rows[0], "\n"); !strings.Contains(got, "first-step-ran") {
		t.Errorf("step 1 did not run:\n%s", got)
	}
	res, _ = runPayload(t, `
on: push
jobs:
  a:
    runs-on: x
    if: false
    steps:
      - uses: actions/cache@v4
`)
	if res != runnerv1.Result_RESULT_SKIPPED {
		t.Errorf("a skipped job with an unsupported step: %v, want SKIPPED", res)
	}
}

// TestRefusalAdvice: the advice after a refused uses: says what runs here
// today. Before, a remote action that could not be fetched was told to
// become a composite action or be replaced (JavaScript and Docker actions
// run), actions/cache to be dropped (the runner serves its cache), and a
// step-level reusable workflow that reusable workflows do not run (a job
// runs them).
func TestRefusalAdvice(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		got  string
		want []string
	}{
		{remoteAdvice("acme/tool@v2"), []string{"check that acme/tool exists on the forge with the ref v2", "DEFAULT_ACTIONS_URL", "composite, JavaScript (runner.node) and Docker actions run here"}},
		{remoteAdvice("actions/cache@v4"), []string{"check that actions/cache exists", "actions/cache@v3 and @v4 run against this runner's cache server (cache.enabled"}},
		{remoteAdvice("actions/upload-artifact@v4"), []string{"actions/upload-artifact@v3 runs here (@v4 refuses every server but GitHub's)"}},
	} {
		for _, w := range tt.want {
			if !strings.Contains(tt.got, w) {
				t.Errorf("advice %q lacks %q", tt.got, w)
			}
		}
		for _, stale := range []string{"replace the step", "use a composite action", "drop this step (every job"} {
			if strings.Contains(tt.got, stale) {
				t.Errorf("advice %q still says %q", tt.got, stale)
			}
		}
	}
	why, instead := usesSupport("o/r/.gitea/workflows/ci.yml@v1")
	if !strings.Contains(why, "called by a job, not a step") || !strings.Contains(instead, "jobs.<id>.uses: o/r/.gitea/workflows/ci.yml@v1") || strings.Contains(why, "yet") {
		t.Errorf("a step-level reusable workflow: %q; %q", why, instead)
	}
}
