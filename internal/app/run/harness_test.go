package run

import (
	"context"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	runnerv1 "gitea.dev/actions-proto-go/runner/v1"
	"github.com/sirupsen/logrus"

	"github.com/forgeload/forgeload/internal/pkg/client"
	"github.com/forgeload/forgeload/internal/pkg/forgetest"
)

// harness is one fake forge, one registered runner and its client.
type harness struct {
	t     *testing.T
	forge *forgetest.Forge
	cl    *client.Client
}

func newHarness(t *testing.T, opts ...forgetest.Option) *harness {
	t.Helper()
	f := forgetest.New(t, opts...)
	uuid, token := f.AddRunner("test-runner", []string{"forgeload"}, "cancelling")
	cl, err := client.New(client.Options{Address: f.URL(), UUID: uuid, Token: token, Version: "test"})
	if err != nil {
		t.Fatalf("client.New: %v", err)
	}
	return &harness{t: t, forge: f, cl: cl}
}

// fetch queues payload as a job and fetches it as this runner would.
func (h *harness) fetch(j forgetest.Job) *runnerv1.Task {
	h.t.Helper()
	if j.RunsOn == nil {
		j.RunsOn = []string{"forgeload"}
	}
	id := h.forge.QueueJob(j)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := h.cl.FetchTask(ctx, connect.NewRequest(&runnerv1.FetchTaskRequest{}))
	if err != nil {
		h.t.Fatalf("FetchTask: %v", err)
	}
	task := resp.Msg.GetTask()
	if task == nil || task.GetId() != id {
		h.t.Fatalf("FetchTask gave %v, want task %d", task, id)
	}
	return task
}

func (h *harness) runner(o Options) *Runner {
	if o.WorkDir == "" {
		o.WorkDir = h.t.TempDir()
	}
	if o.Name == "" {
		o.Name = "test-runner"
	}
	if o.Logger == nil {
		l := logrus.New()
		l.SetOutput(testWriter{h.t})
		o.Logger = logrus.NewEntry(l)
	}
	o.Instance = h.forge.URL()
	o.Cancelling = true
	if o.Publisher == nil {
		o.Publisher = h.cl
	}
	return New(h.cl, o)
}

// run runs payload as one task to its end and returns the forge's view.
func (h *harness) run(payload string, o Options, mod ...func(*forgetest.Job)) forgetest.TaskView {
	h.t.Helper()
	j := forgetest.Job{Payload: []byte(payload)}
	for _, m := range mod {
		m(&j)
	}
	task := h.fetch(j)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := h.runner(o).Run(ctx, task); err != nil {
		h.t.Fatalf("Run: %v", err)
	}
	v := h.forge.Task(task.GetId())
	if !v.Done || !v.Archived {
		h.t.Fatalf("task %d after Run: done=%v archived=%v, want both", task.GetId(), v.Done, v.Archived)
	}
	return v
}

// runCancelledAt runs task, cancels it from the forge once its log shows
// marker, and returns the forge's view when Run has returned. It fails the
// test if marker never comes or Run does not return after the cancel.
func (h *harness) runCancelledAt(task *runnerv1.Task, o Options, marker string) forgetest.TaskView {
	h.t.Helper()
	done := make(chan error, 1)
	go func() { done <- h.runner(o).Run(context.Background(), task) }()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	v, err := h.forge.WaitTask(ctx, task.GetId(), func(v forgetest.TaskView) bool {
		return v.Done || strings.Contains(logText(v), marker)
	})
	if err != nil || !strings.Contains(logText(v), marker) {
		h.forge.Cancel(task.GetId())
		<-done
		h.t.Fatalf("the log never showed %q: %v; log:\n%s", marker, err, logText(v))
	}
	h.forge.Cancel(task.GetId())
	select {
	case err := <-done:
		if err != nil {
			h.t.Fatalf("Run: %v", err)
		}
	case <-ctx.Done():
		h.t.Fatal("Run did not return after cancel")
	}
	return h.forge.Task(task.GetId())
}

// logText is the whole task log, one row a line.
func logText(v forgetest.TaskView) string { return strings.Join(v.Log, "\n") }

// stepLog is the rows of step i, by its log_index/log_length.
func stepLog(t *testing.T, v forgetest.TaskView, i int) []string {
	t.Helper()
	if i >= len(v.Steps) {
		t.Fatalf("step %d: the forge has %d steps", i, len(v.Steps))
	}
	s := v.Steps[i]
	end := s.LogIndex + s.LogLength
	if s.LogIndex < 0 || end > int64(len(v.Log)) {
		t.Fatalf("step %d: log_index %d + log_length %d outside the %d-row log", i, s.LogIndex, s.LogLength, len(v.Log))
	}
	return v.Log[s.LogIndex:end]
}

func wantContains(t *testing.T, what, got, want string) {
	t.Helper()
	if !strings.Contains(got, want) {
		t.Fatalf("%s does not contain %q; got:\n%s", what, want, got)
	}
}

// testWriter sends the runner's daemon-side log to the test log, so a
// failure shows what the runner said.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
