package run

import (
	"context"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	runnerv1 "gitea.dev/actions-proto-go/runner/v1"

	"github.com/forgeload/forgeload/internal/pkg/forgetest"
)

// calledBy127 is a reusable workflow as Gitea 1.27 expands it: each of its
// jobs becomes a task, the second needing the first.
const calledBy127 = `name: build
on:
  workflow_call:
    inputs:
      target: {type: string, required: true}
      rate: {type: number, default: 50}
      dry: {type: boolean, default: true}
    secrets:
      API_KEY: {required: true}
    outputs:
      p99:
        value: ${{ jobs.perf.outputs.p99 }}
jobs:
  prep:
    runs-on: forgeload
    outputs:
      base: ${{ steps.p.outputs.base }}
    steps:
      - id: p
        run: echo "base=$(( ${{ inputs.rate }} + 1 ))" >> "$GITHUB_OUTPUT"
  perf:
    needs: prep
    runs-on: forgeload
    outputs:
      p99: ${{ steps.l.outputs.p99 }}
    steps:
      - run: echo "typed rate=${{ inputs.rate == 50 }} dry=${{ inputs.dry == false }} not-dry=${{ !inputs.dry }} key=${{ secrets.API_KEY }}"
      - id: l
        run: echo "p99=${{ needs.prep.outputs.base }}ms-${{ inputs.target }}" >> "$GITHUB_OUTPUT"
`

// TestReusableExpandedByForge: with Gitea 1.27, which expands a reusable
// workflow itself (go-gitea/gitea#37478), the runner gets each called job
// as a task of its own: an ordinary one-job workflow whose on: is
// workflow_call, its inputs in the event of its context, typed. forgeload
// runs each as any job, without expanding anything again (no "Called job"
// group), the second sees the first's outputs through needs, and the
// calling job's outputs, which the forge computes from them, reach the job
// that needs it.
func TestReusableExpandedByForge(t *testing.T) {
	t.Parallel()
	h := newHarness(t, forgetest.WithCallExpansion())
	if _, err := h.forge.AddRepo("o/app", map[string]string{".gitea/workflows/build.yml": calledBy127}); err != nil {
		t.Fatal(err)
	}
	call, err := h.forge.QueueCall(forgetest.Job{
		Payload: []byte("on: push\njobs:\n  call:\n    uses: ./.gitea/workflows/build.yml\n    with:\n      target: staging\n      dry: \"false\"\n    secrets:\n      API_KEY: ${{ secrets.KEY }}\n"),
		Secrets: map[string]string{"KEY": "k-123", "OTHER": "not-passed"},
	})
	if err != nil {
		t.Fatal(err)
	}
	tasks := call.Tasks()
	logs := map[string]string{}
	for _, id := range []string{"prep", "perf"} {
		v := h.runNext(tasks[id])
		if v.Result != runnerv1.Result_RESULT_SUCCESS {
			t.Fatalf("called job %s: %v; log:\n%s", id, v.Result, logText(v))
		}
		logs[id] = logText(v)
	}
	for _, l := range logs {
		if strings.Contains(l, "Called job") {
			t.Fatalf("forgeload expanded a called job again:\n%s", l)
		}
	}
	wantContains(t, "perf log", logs["perf"], "typed rate=true dry=true not-dry=true key=***")
	need, ok := call.Need()
	if !ok || need.GetResult() != runnerv1.Result_RESULT_SUCCESS || need.GetOutputs()["p99"] != "51ms-staging" {
		t.Fatalf("the calling job as its dependents see it: %v %v, want success with p99=51ms-staging", need, ok)
	}
	id := h.forge.QueueJob(forgetest.Job{RunsOn: []string{"forgeload"}, Payload: []byte("on: push\njobs:\n  report:\n    needs: call\n    runs-on: forgeload\n    steps:\n      - run: echo \"report ${{ needs.call.outputs.p99 }} ${{ needs.call.result }}\"\n"),
		Needs: map[string]*runnerv1.TaskNeed{"call": need}})
	v := h.runNext(id)
	if v.Result != runnerv1.Result_RESULT_SUCCESS {
		t.Fatalf("report: %v; log:\n%s", v.Result, logText(v))
	}
	wantContains(t, "report log", logText(v), "report 51ms-staging success")
}

// runNext fetches the next task, which must be want, and runs it to its
// end.
func (h *harness) runNext(want int64) forgetest.TaskView {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	resp, err := h.cl.FetchTask(ctx, connect.NewRequest(&runnerv1.FetchTaskRequest{}))
	if err != nil {
		h.t.Fatalf("FetchTask: %v", err)
	}
	task := resp.Msg.GetTask()
	if task.GetId() != want {
		h.t.Fatalf("FetchTask gave task %d, want %d", task.GetId(), want)
	}
	if err := h.runner(Options{}).Run(ctx, task); err != nil {
		h.t.Fatalf("Run: %v", err)
	}
	return h.forge.Task(want)
}
