package run

import (
	"context"
	"fmt"
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

// recordWriter keeps every Write as it came.
type recordWriter struct{ writes []string }

func (r *recordWriter) Write(p []byte) (int, error) {
	r.writes = append(r.writes, string(p))
	return len(p), nil
}

// TestLineWriterLongLines: a long text line reaches out in pieces without
// a newline (out cuts it), while a workflow command longer than
// maxCommandLine is dropped with an error, and an ::add-mask:: that long
// fails the step.
func TestLineWriterLongLines(t *testing.T) {
	t.Parallel()
	out := &recordWriter{}
	cmds := newCommands(&recordSink{}, false)
	w := newLineWriter(out, cmds)
	text := strings.Repeat("x", 3*maxTextHold)
	for i := 0; i < len(text); i += 32 << 10 {
		w.Write([]byte(text[i : i+32<<10]))
	}
	w.Write([]byte("end\nnext\n"))
	got := strings.Join(out.writes, "")
	if got != text+"end\nnext\n" {
		t.Fatalf("out got %d bytes, want the line and the next", len(got))
	}
	for _, p := range out.writes[:len(out.writes)-2] {
		if strings.Contains(p, "\n") {
			t.Fatalf("a piece of the long line ended a row early")
		}
	}

	out.writes = nil
	secret := strings.Repeat("s", maxCommandLine)
	w.Write([]byte("::add-mask::" + secret[:maxCommandLine/2]))
	w.Write([]byte(secret[maxCommandLine/2:] + "\nafter\n"))
	got = strings.Join(out.writes, "")
	if strings.Contains(got, "sss") || !strings.Contains(got, "::error::::add-mask:: refused") || !strings.HasSuffix(got, "after\n") {
		t.Fatalf("out = %.200q", got)
	}
	if cmds.MaskErr() == nil {
		t.Fatal("an over-long ::add-mask:: did not fail the step")
	}
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
	r := h.runner(Options{Logger: logrus.NewEntry(l)})
	r.deps.load.run = func(_ context.Context, j *job, _ *loadStep, _ int) (runnerv1.Result, map[string]string) {
		panic("bad value " + j.task.GetSecrets()["API_KEY"])
	}
	task := h.fetch(forgetest.Job{
		Secrets: map[string]string{"API_KEY": "pan1c-s3cret"},
		Payload: []byte("on: push\njobs:\n  a:\n    runs-on: x\n    steps:\n      - uses: forgeload/load@v1\n"),
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
`, Options{Capabilities: "job-summary"}, func(j *forgetest.Job) { j.Secrets = map[string]string{"EP": "ep<s3cret|name"} })
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
