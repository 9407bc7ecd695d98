package run

import (
	"context"
	"fmt"
	"github.com/forgeload/forgeload/internal/pkg/jobrun"
	"strings"
	"testing"
	"time"

	runnerv1 "gitea.dev/actions-proto-go/runner/v1"
	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/forgeload/forgeload/internal/pkg/forgetest"
	"github.com/forgeload/forgeload/internal/pkg/report"
)

// TestRunAddMaskCap: a step that asks for more masks than a job may add
// fails, with an error row saying the value is not masked, and the values
// added before the cap stay masked.
func TestRunAddMaskCap(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	v := h.run(fmt.Sprintf(`
on: push
jobs:
  a:
    runs-on: x
    steps:
      - run: |
          for i in $(seq 1 %d); do echo "::add-mask::value-$i"; done
          echo "::add-mask::beyond-the-cap"
          echo "first value-17 last beyond-the-cap"
`, report.MaxJobMasks), Options{})
	log := logText(v)
	if v.Result != runnerv1.Result_RESULT_FAILURE {
		t.Fatalf("result %v, want FAILURE:\n%s", v.Result, log)
	}
	wantContains(t, "log", log, "::add-mask:: refused")
	wantContains(t, "log", log, "NOT masked")
	wantContains(t, "log", log, "first *** last beyond-the-cap")
}

// TestRunStepOutputDrain: a background child that keeps a step's output
// open does not hold the step past its silence bound, and all the output
// the step wrote before it exited is kept.
func TestRunStepOutputDrain(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	start := time.Now()
	v := h.run(`
on: push
jobs:
  a:
    runs-on: x
    steps:
      - run: |
          sleep 60 &
          seq 1 20000
      - run: echo next step
`, Options{})
	if took := time.Since(start); took > 30*time.Second {
		t.Fatalf("the job took %s: the background child held the step", took)
	}
	log := logText(v)
	if v.Result != runnerv1.Result_RESULT_SUCCESS {
		t.Fatalf("result %v:\n%.2000s", v.Result, log)
	}
	rows := stepLog(t, v, 0)
	if len(rows) != 20001 || rows[20000] != "20000" {
		t.Fatalf("step 0 has %d rows, want the echo and 20000 numbers", len(rows))
	}
	wantContains(t, "log", log, "next step")
}

// TestRunPanicMessageMasked: a panic whose message holds a secret is
// masked in the job log and in the daemon's own log.
func TestRunPanicMessageMasked(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	l, daemonLog := logtest.NewNullLogger()
	r := h.runner(Options{Config: jobrun.Config{Logger: logrus.NewEntry(l)}})
	r.o.Capabilities = "job-summary"
	r.o.Publisher = panicPublisher{h.cl, "bad value pan1c-s3cret"}
	task := h.fetch(forgetest.Job{
		Secrets: map[string]string{"API_KEY": "pan1c-s3cret"},
		Payload: []byte(summaryJob),
	})
	if err := r.Run(context.Background(), task); err != nil {
		t.Fatalf("Run: %v", err)
	}
	wantContains(t, "job log", logText(h.forge.Task(task.GetId())), "a panic: bad value ***")
	var got []string
	for _, e := range daemonLog.AllEntries() {
		got = append(got, e.Message)
	}
	if all := strings.Join(got, "\n"); !strings.Contains(all, "bad value ***") || strings.Contains(all, "pan1c-s3cret") {
		t.Fatalf("daemon log:\n%s", all)
	}
}

// TestLoadStepSummaryMasked: the load step's Markdown summary, where an
// endpoint name holding a secret is escaped for a table cell, reaches the
// forge masked.
func TestLoadStepSummaryMasked(t *testing.T) {
	t.Parallel()
	target := newCountingServer(t, "", 0)
	h := newHarness(t)
	v := h.run(`
on: push
jobs:
  perf:
    runs-on: forgeload
    steps:
      - run: |
          cat > perf.yaml <<EOF
          target: `+target.URL+`
          rate: 20
          duration: 1s
          endpoints:
            - {name: "$EP", path: /a}
            - {name: other, path: /b}
          EOF
        env:
          EP: ${{ secrets.EP }}
      - uses: forgeload/load@v1
        with:
          config: perf.yaml
`, Options{Config: jobrun.Config{Capabilities: "job-summary"}}, func(j *forgetest.Job) { j.Secrets = map[string]string{"EP": "ep<s3cret|name"} })
	if v.Result != runnerv1.Result_RESULT_SUCCESS {
		t.Fatalf("result %v:\n%s", v.Result, logText(v))
	}
	var sum string
	for _, s := range h.forge.Summaries() { // this forge ran one task
		sum += s
	}
	if !strings.Contains(sum, "***") || strings.Contains(sum, "s3cret") {
		t.Fatalf("job summary:\n%s", sum)
	}
}

// TestLoadStepErrorMessagesMasked: a load step's error messages, which
// quote what failed (here a check's needle, a secret), reach the log and
// the job summary masked, listed with their count.
func TestLoadStepErrorMessagesMasked(t *testing.T) {
	t.Parallel()
	target := newCountingServer(t, "", 0)
	h := newHarness(t)
	v := h.run(`
on: push
jobs:
  perf:
    runs-on: forgeload
    steps:
      - run: |
          cat > perf.yaml <<EOF
          target: `+target.URL+`
          rate: 20
          duration: 1s
          validity: warn
          checks:
            - body_contains: "$NEEDLE"
          EOF
        env:
          NEEDLE: ${{ secrets.NEEDLE }}
      - uses: forgeload/load@v1
        with:
          config: perf.yaml
`, Options{Config: jobrun.Config{Capabilities: "job-summary"}}, func(j *forgetest.Job) { j.Secrets = map[string]string{"NEEDLE": "n33dle-s3cret"} })
	log := logText(v)
	var sum string
	for _, s := range h.forge.Summaries() { // this forge ran one task
		sum += s
	}
	for name, out := range map[string]string{"log": log, "job summary": sum} {
		i := strings.Index(out, "Error messages (the 1 most frequent")
		if i < 0 || strings.Contains(out, "n33dle") || !strings.Contains(out[i:], `check failed: checks[0] body contains "***"`) {
			t.Errorf("the %s lists no masked error message, or shows the secret:\n%s", name, out)
		}
	}
}
