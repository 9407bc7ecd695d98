package report_test

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"
	runnerv1 "gitea.dev/actions-proto-go/runner/v1"

	"github.com/forgeload/forgeload/internal/pkg/client"
	"github.com/forgeload/forgeload/internal/pkg/forgetest"
	"github.com/forgeload/forgeload/internal/pkg/report"
)

// These tests run the Reporter through the real forge client against the
// fake forge: a real connect-go server on 127.0.0.1 with Gitea's semantics.

var _ report.Client = (*client.Client)(nil)

const payload = `on: push
jobs:
  perf:
    runs-on: forgeload
    steps:
      - run: echo one
      - run: echo two
`

// pickTask starts a fake forge, queues a two-step job with secrets, and
// fetches it as a registered runner.
func pickTask(t *testing.T, secrets map[string]string) (*forgetest.Forge, *client.Client, *runnerv1.Task) {
	t.Helper()
	f := forgetest.New(t)
	uuid, token := f.AddRunner("r1", []string{"forgeload"}, "cancelling")
	f.QueueJob(forgetest.Job{RunsOn: []string{"forgeload"}, Payload: []byte(payload), Secrets: secrets})
	c, err := client.New(client.Options{Address: f.URL(), UUID: uuid, Token: token, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("client.New = %v", err)
	}
	t.Cleanup(c.CloseIdleConnections)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	resp, err := c.FetchTask(ctx, connect.NewRequest(&runnerv1.FetchTaskRequest{}))
	if err != nil || resp.Msg.GetTask() == nil {
		t.Fatalf("FetchTask = %v, %v; want a task", resp, err)
	}
	return f, c, resp.Msg.GetTask()
}

func masksOf(task *runnerv1.Task) []string {
	var m []string
	for _, v := range task.GetSecrets() {
		m = append(m, v)
	}
	for _, k := range []string{"token", "gitea_runtime_token"} {
		if v := task.GetContext().GetFields()[k].GetStringValue(); v != "" {
			m = append(m, v)
		}
	}
	return m
}

func waitDone(t *testing.T, f *forgetest.Forge, id int64) forgetest.TaskView {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	v, err := f.WaitTask(ctx, id, func(v forgetest.TaskView) bool { return v.Done && v.Archived })
	if err != nil {
		t.Fatalf("task %d not done and archived: %+v: %v", id, v, err)
	}
	return v
}

func trimSentinel(log []string) []string {
	if n := len(log); n > 0 && log[n-1] == "" {
		return log[:n-1]
	}
	return log
}

// TestForgeSecretSplitAcrossWrites checks that secrets and tokens printed in
// pieces never reach the forge.
func TestForgeSecretSplitAcrossWrites(t *testing.T) {
	t.Parallel()
	const secret = "pa55w0rd-xyz"
	f, c, task := pickTask(t, map[string]string{"API_KEY": secret})
	r := report.New(c, task.GetId(), 2, report.Options{Masks: masksOf(task), LogInterval: 50 * time.Millisecond})
	r.Start(t.Context())
	r.StepStart(0)
	w := r.Writer(0)
	io.WriteString(w, "key="+secret[:4])
	time.Sleep(200 * time.Millisecond) // the half line waits in the line buffer, not on the forge
	io.WriteString(w, secret[4:]+" done\n")
	tok := task.GetContext().GetFields()["token"].GetStringValue()
	io.WriteString(w, "token="+tok[:7])
	io.WriteString(w, tok[7:]+"\n")
	r.StepEnd(0, runnerv1.Result_RESULT_SUCCESS)
	if err := r.Close(runnerv1.Result_RESULT_SUCCESS); err != nil {
		t.Fatalf("Close = %v", err)
	}
	v := waitDone(t, f, task.GetId())
	all := strings.Join(v.Log, "\n")
	if strings.Contains(all, secret) || strings.Contains(all, tok) {
		t.Fatalf("a secret reached the forge: %q", v.Log)
	}
	if want := []string{"key=*** done", "token=***"}; !slices.Equal(trimSentinel(v.Log), want) {
		t.Fatalf("forge log = %q, want %q", v.Log, want)
	}
}

// TestForgeCancel checks that a cancel in the forge cancels the job context
// within two intervals, and that the task ends CANCELLED with its logs.
func TestForgeCancel(t *testing.T) {
	t.Parallel()
	const interval = 500 * time.Millisecond
	f, c, task := pickTask(t, nil)
	r := report.New(c, task.GetId(), 2, report.Options{Interval: interval})
	ctx := r.Start(t.Context())
	r.StepStart(0)
	r.Logf(0, "load running")
	time.Sleep(2 * interval) // the task has been updated recently: cancelling
	f.Cancel(task.GetId())
	clicked := time.Now()
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("job context not cancelled 10s after the forge cancel")
	}
	if d := time.Since(clicked); d > 2*interval {
		t.Fatalf("job context cancelled %v after the forge cancel, want ≤ 2 intervals (%v)", d, 2*interval)
	}
	if got := r.ServerResult(); got != runnerv1.Result_RESULT_CANCELLED {
		t.Fatalf("ServerResult = %v, want CANCELLED", got)
	}
	r.Logf(0, "stopped")
	r.StepEnd(0, runnerv1.Result_RESULT_CANCELLED)
	if err := r.Close(runnerv1.Result_RESULT_SUCCESS); err != nil {
		t.Fatalf("Close = %v", err)
	}
	v := waitDone(t, f, task.GetId())
	if v.Result != runnerv1.Result_RESULT_CANCELLED {
		t.Fatalf("task result = %v, want CANCELLED", v.Result)
	}
	if got := trimSentinel(v.Log); !slices.Equal(got, []string{"load running", "stopped"}) {
		t.Fatalf("forge log = %q", got)
	}
	if v.Steps[1].Result != runnerv1.Result_RESULT_CANCELLED {
		t.Fatalf("step 1 = %+v, want CANCELLED (never ran)", v.Steps[1])
	}
}

// TestForgeSpill checks that with a tiny memory bound and the forge down,
// every row is kept on disk and delivered in order.
func TestForgeSpill(t *testing.T) {
	t.Parallel()
	f, c, task := pickTask(t, nil)
	r := report.New(c, task.GetId(), 2, report.Options{
		MemRows: 10, BatchRows: 50, SpillDir: t.TempDir(), LogInterval: 100 * time.Millisecond,
	})
	r.Start(t.Context())
	r.StepStart(0)
	w := r.Writer(0)
	f.Down()
	want := make([]string, 2000)
	for i := range want {
		want[i] = fmt.Sprintf("spilled row %d %s", i, strings.Repeat("x", i%50))
		io.WriteString(w, want[i]+"\n")
	}
	f.Up()
	r.StepEnd(0, runnerv1.Result_RESULT_SUCCESS)
	if err := r.Close(runnerv1.Result_RESULT_SUCCESS); err != nil {
		t.Fatalf("Close = %v", err)
	}
	v := waitDone(t, f, task.GetId())
	if got := trimSentinel(v.Log); !slices.Equal(got, want) {
		t.Fatalf("forge log has %d rows, want the %d produced, in order", len(got), len(want))
	}
	if v.Steps[0].LogLength != 2000 {
		t.Fatalf("step 0 log_length = %d, want 2000", v.Steps[0].LogLength)
	}
}

// TestForgeDownDuringClose checks that Close keeps retrying through an
// outage that starts before it and ends within CloseTimeout: the logs, then
// the final state, arrive.
func TestForgeDownDuringClose(t *testing.T) {
	t.Parallel()
	f, c, task := pickTask(t, nil)
	r := report.New(c, task.GetId(), 2, report.Options{CloseTimeout: 20 * time.Second})
	r.Start(t.Context())
	r.StepStart(0)
	r.Logf(0, "before the outage")
	f.Down()
	r.Logf(0, "during the outage")
	r.StepEnd(0, runnerv1.Result_RESULT_SUCCESS)
	up := make(chan struct{})
	go func() {
		defer close(up)
		time.Sleep(1500 * time.Millisecond) // the outage Close must ride out
		f.Up()
	}()
	start := time.Now()
	err := r.Close(runnerv1.Result_RESULT_FAILURE)
	<-up
	if err != nil {
		t.Fatalf("Close = %v, want nil once the forge is back", err)
	}
	if d := time.Since(start); d < time.Second {
		t.Fatalf("Close returned after %v, before the forge was back", d)
	}
	v := waitDone(t, f, task.GetId())
	if got := trimSentinel(v.Log); !slices.Equal(got, []string{"before the outage", "during the outage"}) {
		t.Fatalf("forge log = %q", got)
	}
	if v.Result != runnerv1.Result_RESULT_FAILURE || v.Steps[0].Result != runnerv1.Result_RESULT_SUCCESS {
		t.Fatalf("task = %v with step 0 %v, want FAILURE with step 0 SUCCESS", v.Result, v.Steps[0].Result)
	}
}

// panicOnce is the real client with one bug: its first UpdateLog panics,
// on the Reporter's log loop goroutine.
type panicOnce struct {
	*client.Client
	fired atomic.Bool
}

func (p *panicOnce) UpdateLog(ctx context.Context, req *connect.Request[runnerv1.UpdateLogRequest]) (*connect.Response[runnerv1.UpdateLogResponse], error) {
	if p.fired.CompareAndSwap(false, true) {
		panic("reporter bug")
	}
	return p.Client.UpdateLog(ctx, req)
}

// TestLoopPanicFailsTheJob: a panic in a Reporter loop goroutine is
// recovered (the test process lives on), cancels the job, and the job ends
// FAILURE in the forge with a message in its log and its rows delivered.
func TestLoopPanicFailsTheJob(t *testing.T) {
	t.Parallel()
	f, c, task := pickTask(t, nil)
	rep := report.New(&panicOnce{Client: c}, task.GetId(), 2, report.Options{Masks: masksOf(task)})
	jobCtx := rep.Start(t.Context())
	rep.StepStart(0)
	rep.Logf(0, "before the panic")
	select {
	case <-jobCtx.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the job context was not cancelled after the log loop panicked")
	}
	if err := rep.Close(runnerv1.Result_RESULT_SUCCESS); err != nil {
		t.Fatalf("Close = %v", err)
	}
	v := waitDone(t, f, task.GetId())
	log := strings.Join(v.Log, "\n")
	if v.Result != runnerv1.Result_RESULT_FAILURE || !strings.Contains(log, "before the panic") || !strings.Contains(log, "internal error reporting this job") {
		t.Fatalf("result %v, log:\n%s\nwant FAILURE with the row and the internal error", v.Result, log)
	}
}
