package report

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"connectrpc.com/connect"
	runnerv1 "gitea.dev/actions-proto-go/runner/v1"
	"google.golang.org/protobuf/types/known/timestamppb"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// recordingForge wraps fakeForge and renders every request it gets as text,
// one stream per method (the two loops' calls at the same instant may come in
// either order; each stream is deterministic).
type recordingForge struct {
	*fakeForge
	mu          sync.Mutex
	logs, tasks []string
}

func (r *recordingForge) UpdateLog(ctx context.Context, req *connect.Request[runnerv1.UpdateLogRequest]) (*connect.Response[runnerv1.UpdateLogResponse], error) {
	resp, err := r.fakeForge.UpdateLog(ctx, req)
	m := req.Msg
	var b strings.Builder
	fmt.Fprintf(&b, "%s UpdateLog task=%d index=%d no_more=%v", stamp(timestamppb.Now()), m.TaskId, m.Index, m.NoMore)
	for _, row := range m.Rows {
		fmt.Fprintf(&b, "\n  row %s %q", stamp(row.Time), row.Content)
	}
	fmt.Fprintf(&b, "\n  -> ack=%d err=%v", resp.Msg.GetAckIndex(), err)
	r.mu.Lock()
	r.logs = append(r.logs, b.String())
	r.mu.Unlock()
	return resp, err
}

func (r *recordingForge) UpdateTask(ctx context.Context, req *connect.Request[runnerv1.UpdateTaskRequest]) (*connect.Response[runnerv1.UpdateTaskResponse], error) {
	resp, err := r.fakeForge.UpdateTask(ctx, req)
	st := req.Msg.State
	var b strings.Builder
	fmt.Fprintf(&b, "%s UpdateTask id=%d result=%s started=%s stopped=%s", stamp(timestamppb.Now()), st.Id, st.Result, stamp(st.StartedAt), stamp(st.StoppedAt))
	for _, s := range st.Steps {
		fmt.Fprintf(&b, "\n  step %d %s started=%s stopped=%s log=%d+%d", s.Id, s.Result, stamp(s.StartedAt), stamp(s.StoppedAt), s.LogIndex, s.LogLength)
	}
	keys := make([]string, 0, len(req.Msg.Outputs))
	for k := range req.Msg.Outputs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "\n  output %s=%q", k, req.Msg.Outputs[k])
	}
	fmt.Fprintf(&b, "\n  -> result=%s sent_outputs=%v err=%v", resp.Msg.GetState().GetResult(), resp.Msg.GetSentOutputs(), err)
	r.mu.Lock()
	r.tasks = append(r.tasks, b.String())
	r.mu.Unlock()
	return resp, err
}

// stamp renders a timestamp as seconds since the synctest epoch.
func stamp(ts *timestamppb.Timestamp) string {
	if ts == nil {
		return "-"
	}
	epoch := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	return fmt.Sprintf("%.3fs", ts.AsTime().Sub(epoch).Seconds())
}

// TestGoldenSession pins the exact requests of a small task: what a Gitea
// server sees from forgeload. Run with -update to rewrite the golden file
// after an intended change, and review the diff.
func TestGoldenSession(t *testing.T) {
	t.Parallel()
	var got string
	synctest.Test(t, func(t *testing.T) {
		f := &recordingForge{fakeForge: newFakeForge()}
		r := New(f, 42, 2, Options{Masks: []string{"tok-abcdef"}})
		step := func(fn func()) {
			fn()
			synctest.Wait()
		}
		step(func() { r.Start(t.Context()) })
		step(func() { r.Logf(-1, "forgeload running job perf") })
		step(func() { time.Sleep(300 * time.Millisecond) })
		step(func() { r.StepStart(0) })
		w := r.Writer(0)
		step(func() { fmt.Fprint(w, "token tok-ab") })
		step(func() { fmt.Fprint(w, "cdef\nrps 100\n") })
		step(func() { time.Sleep(1500 * time.Millisecond) })
		step(func() { r.StepEnd(0, success) })
		step(func() { r.SetOutputs(map[string]string{"p99_ms": "12.5"}) })
		step(func() { r.StepStart(1) })
		step(func() { r.Logf(1, "threshold failed") })
		step(func() { time.Sleep(200 * time.Millisecond) })
		step(func() {
			if err := r.Close(failure); err != nil {
				t.Errorf("Close = %v", err)
			}
		})
		got = "# UpdateLog requests\n" + strings.Join(f.logs, "\n") +
			"\n# UpdateTask requests\n" + strings.Join(f.tasks, "\n") + "\n"
	})
	path := filepath.Join("testdata", "session.golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file (run go test -update to create it): %v", err)
	}
	if got != string(want) {
		g, w := strings.Split(got, "\n"), strings.Split(string(want), "\n")
		i := firstDiff(g, w)
		t.Fatalf("requests differ from %s at line %d:\ngot:  %q\nwant: %q\n(run go test -run TestGoldenSession -update after an intended change and review the diff)",
			path, i+1, lineAt(g, i), lineAt(w, i))
	}
}

func lineAt(ls []string, i int) string {
	if i < len(ls) {
		return ls[i]
	}
	return "<end>"
}
