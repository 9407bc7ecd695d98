package run

import (
	"context"
	"github.com/forgeload/forgeload/internal/pkg/jobrun"
	"strings"
	"testing"
	"time"

	runnerv1 "gitea.dev/actions-proto-go/runner/v1"

	"github.com/forgeload/forgeload/internal/pkg/forgetest"
	"github.com/forgeload/forgeload/internal/pkg/leftover"
)

func TestRunStepsOutputsAndEnvFiles(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	v := h.run(`
name: ci
on: push
env:
  GREETING: hello
jobs:
  build:
    runs-on: forgeload
    outputs:
      answer: ${{ steps.one.outputs.answer }}
      who: ${{ steps.two.outputs.who }}
    steps:
      - id: one
        run: |
          echo "step one says $GREETING"
          echo "answer=42" >> "$GITHUB_OUTPUT"
          echo "FROM_ONE=carried" >> "$GITHUB_ENV"
          printf 'multi<<EOF\nline1\nline2\nEOF\n' >> "$GITHUB_OUTPUT"
      - id: two
        name: Second ${{ steps.one.outputs.answer }}
        env:
          DOUBLE: ${{ steps.one.outputs.answer }}${{ steps.one.outputs.answer }}
        run: |
          echo "env from one: $FROM_ONE double=$DOUBLE"
          echo "who=$(whoami | tr -d '\n' | wc -c)" >> "$GITHUB_OUTPUT"
          echo "${{ steps.one.outputs.multi }}"
      - if: failure()
        run: echo never
`, Options{})
	if v.Result != runnerv1.Result_RESULT_SUCCESS {
		t.Fatalf("result = %v, want SUCCESS; log:\n%s", v.Result, logText(v))
	}
	one := strings.Join(stepLog(t, v, 0), "\n")
	wantContains(t, "step 0 log", one, "step one says hello")
	two := strings.Join(stepLog(t, v, 1), "\n")
	wantContains(t, "step 1 log", two, "env from one: carried double=4242")
	wantContains(t, "step 1 log", two, "line1")
	if v.Steps[2].Result != runnerv1.Result_RESULT_SKIPPED {
		t.Fatalf("step 2 (if: failure()) result = %v, want SKIPPED", v.Steps[2].Result)
	}
	if v.Outputs["answer"] != "42" {
		t.Fatalf("job output answer = %q, want 42 (outputs %v)", v.Outputs["answer"], v.Outputs)
	}
	// Step rows never overlap and appear in order.
	var last int64
	for i, s := range v.Steps[:2] {
		if s.LogIndex < last || s.LogLength == 0 {
			t.Fatalf("step %d: log_index %d, log_length %d after row %d", i, s.LogIndex, s.LogLength, last)
		}
		last = s.LogIndex + s.LogLength
	}
}

func TestRunFailureContinueAndAlways(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	v := h.run(`
on: push
jobs:
  j:
    runs-on: forgeload
    steps:
      - id: soft
        continue-on-error: true
        run: exit 3
      - run: echo "soft outcome=${{ steps.soft.outcome }} conclusion=${{ steps.soft.conclusion }}"
      - run: exit 7
      - run: echo "must not run"
      - if: always()
        run: echo "cleanup ran, status=${{ job.status }}"
`, Options{})
	if v.Result != runnerv1.Result_RESULT_FAILURE {
		t.Fatalf("result = %v, want FAILURE", v.Result)
	}
	want := []runnerv1.Result{
		runnerv1.Result_RESULT_FAILURE, runnerv1.Result_RESULT_SUCCESS, runnerv1.Result_RESULT_FAILURE,
		runnerv1.Result_RESULT_SKIPPED, runnerv1.Result_RESULT_SUCCESS,
	}
	for i, w := range want {
		if v.Steps[i].Result != w {
			t.Errorf("step %d result = %v, want %v", i, v.Steps[i].Result, w)
		}
	}
	log := logText(v)
	wantContains(t, "log", log, "soft outcome=failure conclusion=success")
	wantContains(t, "log", log, "Process completed with exit code 7.")
	wantContains(t, "log", log, "cleanup ran, status=failure")
	if strings.Contains(log, "must not run\n") || strings.Contains(strings.Join(stepLog(t, v, 3), "\n"), "must not run") {
		t.Fatalf("a step after a failure ran; log:\n%s", log)
	}
}

func TestRunBadInputFailsWithMessage(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	tests := []struct {
		name, payload, want string
	}{
		{"broken yaml", "jobs: [unclosed", "workflow"},
		{"two jobs", "on: push\njobs:\n  a:\n    runs-on: x\n    steps: [{run: echo}]\n  b:\n    runs-on: x\n    steps: [{run: echo}]\n", "exactly one"},
		{"unknown uses", "on: push\njobs:\n  a:\n    runs-on: x\n    steps:\n      - uses: docker://alpine:3\n", `uses "docker://alpine:3": docker:// steps need a Docker Engine, and this runner has none`},
		{"bad expression", "on: push\njobs:\n  a:\n    runs-on: x\n    steps:\n      - run: echo ${{ contain('a', 'b') }}\n", `unknown function`},
		{"services", "on: push\njobs:\n  a:\n    runs-on: x\n    services:\n      db:\n        image: postgres\n    steps:\n      - run: echo\n", "which need a Docker Engine, and this runner has none"},
	}
	for _, tt := range tests {
		v := h.run(tt.payload, Options{})
		if v.Result != runnerv1.Result_RESULT_FAILURE {
			t.Errorf("%s: result = %v, want FAILURE", tt.name, v.Result)
		}
		if log := logText(v); !strings.Contains(log, tt.want) {
			t.Errorf("%s: log does not contain %q:\n%s", tt.name, tt.want, log)
		}
	}
	// The same runner still runs a good job afterwards.
	v := h.run("on: push\njobs:\n  a:\n    runs-on: x\n    steps:\n      - run: echo fine\n", Options{})
	if v.Result != runnerv1.Result_RESULT_SUCCESS {
		t.Fatalf("good job after bad ones: %v\n%s", v.Result, logText(v))
	}
}

func TestRunMasksSecretsSplitAcrossWrites(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	v := h.run(`
on: push
jobs:
  a:
    runs-on: x
    steps:
      - run: |
          printf 'token is s3cr'
          sleep 0.2
          printf 'et-value!\n'
          echo "direct ${{ secrets.API_KEY }}"
          echo "::add-mask::runtime-hidden-42"
          echo "later runtime-hidden-42"
`, Options{}, func(j *forgetest.Job) { j.Secrets = map[string]string{"API_KEY": "s3cret-value"} })
	log := logText(v)
	for _, leak := range []string{"s3cret-value", "s3cr\n", "runtime-hidden-42"} {
		if strings.Contains(log, leak) {
			t.Fatalf("log leaks %q:\n%s", leak, log)
		}
	}
	wantContains(t, "log", log, "token is ***!")
	wantContains(t, "log", log, "later ***")
}

func TestRunCancelRunsAlwaysSteps(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	task := h.fetch(forgetest.Job{Payload: []byte(`
on: push
jobs:
  a:
    runs-on: x
    steps:
      - run: echo started; sleep 60
      - run: echo not this
      - if: always()
        run: echo "always after cancel, cancelled=${{ cancelled() }}"
`)})
	done := make(chan error, 1)
	go func() {
		done <- h.runner(Options{ReportInterval: 200 * time.Millisecond}).Run(context.Background(), task)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := h.forge.WaitTask(ctx, task.GetId(), func(v forgetest.TaskView) bool {
		return strings.Contains(logText(v), "started")
	}); err != nil {
		t.Fatalf("step never started: %v", err)
	}
	cancelAt := time.Now()
	h.forge.Cancel(task.GetId())
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("Run did not return after cancel")
	}
	if took := time.Since(cancelAt); took > 10*time.Second {
		t.Fatalf("cancel took %s", took)
	}
	v := h.forge.Task(task.GetId())
	if v.Result != runnerv1.Result_RESULT_CANCELLED {
		t.Fatalf("result = %v, want CANCELLED", v.Result)
	}
	wantContains(t, "log", logText(v), "always after cancel, cancelled=true")
	if strings.Contains(logText(v), "not this") {
		t.Fatalf("a normal step ran after cancel:\n%s", logText(v))
	}
}

// TestRunTimeouts: runner.timeout, the job's timeout-minutes and a step's
// timeout-minutes each stop a sleeping step and fail the job with their
// message; after a job timeout, if: always() steps still run.
func TestRunTimeouts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		payload string
		opts    Options
		want    []string
	}{
		{"runner.timeout", "on: push\njobs:\n  a:\n    runs-on: x\n    steps:\n      - run: sleep 30\n",
			Options{Config: jobrun.Config{Timeout: 500 * time.Millisecond}}, []string{"exceeded its time limit"}},
		{"job timeout-minutes", "on: push\njobs:\n  a:\n    runs-on: x\n    timeout-minutes: 0.01\n    steps:\n      - run: sleep 30\n      - if: always()\n        run: echo cleanup\n",
			Options{}, []string{"exceeded its time limit", "cleanup"}},
		{"step timeout-minutes", "on: push\njobs:\n  a:\n    runs-on: x\n    steps:\n      - run: sleep 30\n        timeout-minutes: 0.01\n      - run: echo next\n",
			Options{}, []string{"exceeded timeout-minutes"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := newHarness(t).run(tt.payload, tt.opts)
			if v.Result != runnerv1.Result_RESULT_FAILURE {
				t.Fatalf("result = %v, want FAILURE", v.Result)
			}
			for _, w := range tt.want {
				wantContains(t, "log", logText(v), w)
			}
		})
	}
}

// panicPublisher panics with value when a job uploads a summary: a panic
// in the daemon's own code, in the middle of a job.
type panicPublisher struct {
	Publisher
	value string
}

func (p panicPublisher) UploadSummary(context.Context, string, int, []byte) error { panic(p.value) }

// summaryJob is a job whose step writes a job summary.
const summaryJob = "on: push\njobs:\n  a:\n    runs-on: x\n    steps:\n      - run: echo '## perf summary' >> \"$GITHUB_STEP_SUMMARY\"\n"

// TestRunPanicFailsOnlyThatJob: a panic in a job fails that job, with a
// message in its log, and the runner runs the next one.
func TestRunPanicFailsOnlyThatJob(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	r := h.runner(Options{Config: jobrun.Config{Capabilities: "job-summary"}})
	r.o.Publisher = panicPublisher{h.cl, "boom"}
	task := h.fetch(forgetest.Job{Payload: []byte(summaryJob)})
	if err := r.Run(context.Background(), task); err != nil {
		t.Fatalf("Run: %v", err)
	}
	v := h.forge.Task(task.GetId())
	if v.Result != runnerv1.Result_RESULT_FAILURE {
		t.Fatalf("result = %v, want FAILURE", v.Result)
	}
	wantContains(t, "log", logText(v), "a panic: boom")
	// The runner still runs the next job.
	v = h.run("on: push\njobs:\n  a:\n    runs-on: x\n    steps:\n      - run: echo ok\n", Options{})
	if v.Result != runnerv1.Result_RESULT_SUCCESS {
		t.Fatalf("next job = %v", v.Result)
	}
}

func TestRunUploadsStepSummary(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	task := h.fetch(forgetest.Job{Payload: []byte("on: push\njobs:\n  a:\n    runs-on: x\n    steps:\n      - run: echo '## perf summary' >> \"$GITHUB_STEP_SUMMARY\"\n")})
	if err := h.runner(Options{Config: jobrun.Config{Capabilities: "job-summary"}}).Run(context.Background(), task); err != nil {
		t.Fatalf("Run: %v", err)
	}
	v := h.forge.Task(task.GetId())
	if v.Result != runnerv1.Result_RESULT_SUCCESS {
		t.Fatalf("result %v:\n%s", v.Result, logText(v))
	}
	got := h.forge.Summaries()[task.GetId()]
	if !strings.Contains(got, "## perf summary") {
		t.Fatalf("uploaded summary = %q, want the step's markdown; log:\n%s", got, logText(v))
	}
}

// A runner without a Publisher (forgeload exec's) runs the same job and
// uploads nothing: the summary stays in the log.
func TestRunWithoutPublisherUploadsNoSummary(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	task := h.fetch(forgetest.Job{Payload: []byte("on: push\njobs:\n  a:\n    runs-on: x\n    steps:\n      - run: echo '## perf summary' >> \"$GITHUB_STEP_SUMMARY\"\n")})
	r := h.runner(Options{Config: jobrun.Config{Capabilities: "job-summary"}})
	r.o.Publisher = nil
	if err := r.Run(context.Background(), task); err != nil {
		t.Fatalf("Run: %v", err)
	}
	v := h.forge.Task(task.GetId())
	if v.Result != runnerv1.Result_RESULT_SUCCESS {
		t.Fatalf("result %v:\n%s", v.Result, logText(v))
	}
	if got, ok := h.forge.Summaries()[task.GetId()]; ok {
		t.Fatalf("uploaded summary = %q, want none without a Publisher", got)
	}
}

// TestReportIntervalGovernsLogs: runner.report_interval sets how often log
// rows go out, not only the heartbeat (logs used to go every second
// whatever it said); runner.final_report_timeout reaches the reporter's
// close timeout.
func TestReportIntervalGovernsLogs(t *testing.T) {
	t.Parallel()
	r := New(nil, Options{ReportInterval: 5 * time.Second, CloseTimeout: 3 * time.Second})
	o := r.reportOptions(nil, nil, nil)
	if o.Interval != 5*time.Second || o.LogInterval != 5*time.Second {
		t.Errorf("report options with report_interval 5s: Interval %s, LogInterval %s; want 5s for both", o.Interval, o.LogInterval)
	}
	if o.CloseTimeout != 3*time.Second {
		t.Errorf("report options with final_report_timeout 3s: CloseTimeout %s, want 3s", o.CloseTimeout)
	}
}

// TestRunMatrixLegHeader: a matrix leg's log header names the leg as the
// forge shows it ("feat (1)", the payload's name:), not only the job id.
func TestRunMatrixLegHeader(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	v := h.run(`
on: push
jobs:
  feat:
    name: feat (1)
    runs-on: forgeload
    strategy:
      matrix:
        n: [1]
    steps:
      - run: echo leg ${{ matrix.n }}
`, Options{})
	if v.Result != runnerv1.Result_RESULT_SUCCESS {
		t.Fatalf("result = %v; log:\n%s", v.Result, logText(v))
	}
	wantContains(t, "job log", logText(v), `running job "feat (1)"`)
}

// TestRunJobErrorSaysWhichLine: a job-level error cites a line of the
// single-job payload the forge sent, not of the repository file; the log
// must say so, and name the field to look for.
func TestRunJobErrorSaysWhichLine(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	v := h.run(`
on: push
jobs:
  a:
    runs-on: forgeload
    steps: not-a-list
`, Options{})
	if v.Result != runnerv1.Result_RESULT_FAILURE {
		t.Fatalf("result = %v; log:\n%s", v.Result, logText(v))
	}
	log := logText(v)
	wantContains(t, "job log", log, "workflow line 6")
	wantContains(t, "job log", log, "not of the workflow file in the repository")
}

// In the daemon, every host step's process carries the runner's leftover
// marker, whatever the job's env says, so that the next daemon can stop
// what a killed one left running; forgeload exec (no owner) adds none.
func TestRunMarksStepProcesses(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	payload := `
on: push
jobs:
  a:
    runs-on: forgeload
    env:
      FORGELOAD_STEP_OWNER: from-the-job
    steps:
      - run: echo "FORGELOAD_STEP_OWNER=forged" >> "$GITHUB_ENV"
      - env:
          FORGELOAD_STEP_OWNER: from-the-step
        run: echo "marked with <$FORGELOAD_STEP_OWNER>"
`
	v := h.run(payload, Options{Config: jobrun.Config{ProcessOwner: "runner-uuid"}})
	if v.Result != runnerv1.Result_RESULT_SUCCESS {
		t.Fatalf("result = %v; log:\n%s", v.Result, logText(v))
	}
	wantContains(t, "step 1 log", strings.Join(stepLog(t, v, 1), "\n"), "marked with <"+strings.TrimPrefix(leftover.Marker("runner-uuid"), leftover.Key+"=")+">")

	v = h.run(payload, Options{})
	wantContains(t, "step 1 log without an owner", strings.Join(stepLog(t, v, 1), "\n"), "marked with <from-the-step>")
}
