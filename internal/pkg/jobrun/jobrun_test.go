package jobrun

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	runnerv1 "gitea.dev/actions-proto-go/runner/v1"
)

// memReporter is a Reporter that keeps every row by step, in memory: the
// executor needs no forge to run a job.
type memReporter struct {
	ctx   context.Context
	mu    sync.Mutex
	rows  map[int][]string
	ends  map[int]runnerv1.Result
	masks []string
}

func newMemReporter() *memReporter {
	return &memReporter{ctx: context.Background(), rows: map[int][]string{}, ends: map[int]runnerv1.Result{}}
}

func (r *memReporter) Context() context.Context { return r.ctx }
func (r *memReporter) StepStart(int)            {}
func (r *memReporter) StepEnd(step int, res runnerv1.Result) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ends[step] = res
}
func (r *memReporter) Logf(step int, format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rows[step] = append(r.rows[step], r.mask(fmt.Sprintf(format, args...)))
}
func (r *memReporter) Writer(step int) io.Writer { return rowWriter{r, step} }
func (r *memReporter) AddMask(v string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.masks = append(r.masks, v)
}
func (r *memReporter) AddJobMask(v string) error { r.AddMask(v); return nil }
func (r *memReporter) Mask(s string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.mask(s)
}
func (r *memReporter) mask(s string) string {
	for _, m := range r.masks {
		s = strings.ReplaceAll(s, m, "***")
	}
	return s
}
func (r *memReporter) SetOutputs(map[string]string) {}

type rowWriter struct {
	r    *memReporter
	step int
}

func (w rowWriter) Write(p []byte) (int, error) {
	for _, l := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		w.r.Logf(w.step, "%s", l)
	}
	return len(p), nil
}

// TestJobRunsWithAnyReporter: the executor runs a job as a library, for
// any sink of its Reporter interface: each step's rows reach that step
// (a run: step's output and a workflow command's mask included), each
// step's result is reported, and an unsupported uses: fails its step only.
func TestJobRunsWithAnyReporter(t *testing.T) {
	t.Parallel()
	cfg := Config{WorkDir: t.TempDir()}.WithDefaults()
	task := &runnerv1.Task{Id: 7, WorkflowPayload: []byte(`
on: push
jobs:
  a:
    runs-on: x
    steps:
      - run: echo "::add-mask::hush"; echo "one hush"
      - uses: docker://alpine:3
        continue-on-error: true
      - run: echo two
`)}
	rep := newMemReporter()
	j := NewJob(&cfg, task)
	if j.StepCount() != 3 {
		t.Fatalf("StepCount %d, want 3", j.StepCount())
	}
	res := j.Run(context.Background(), context.Background(), rep)
	j.Cleanup()
	if res != runnerv1.Result_RESULT_SUCCESS {
		t.Fatalf("result %v, want SUCCESS; rows %v", res, rep.rows)
	}
	want := []runnerv1.Result{runnerv1.Result_RESULT_SUCCESS, runnerv1.Result_RESULT_FAILURE, runnerv1.Result_RESULT_SUCCESS}
	for i, w := range want {
		if rep.ends[i] != w {
			t.Errorf("step %d ended %v, want %v", i, rep.ends[i], w)
		}
	}
	if got := strings.Join(rep.rows[0], "\n"); !strings.Contains(got, "\none ***") || strings.Contains(got, "\none hush") {
		t.Errorf("step 0 rows:\n%s\nwant the output with the masked value", got)
	}
	if got := strings.Join(rep.rows[1], "\n"); !strings.Contains(got, `docker:// steps need a Docker Engine, and this runner has none`) {
		t.Errorf("step 1 rows:\n%s", got)
	}
	if got := strings.Join(rep.rows[2], "\n"); !strings.Contains(got, "two") {
		t.Errorf("step 2 rows:\n%s", got)
	}
}
