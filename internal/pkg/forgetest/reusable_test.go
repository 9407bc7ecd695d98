package forgetest_test

import (
	"strings"
	"testing"

	runnerv1 "gitea.dev/actions-proto-go/runner/v1"

	"github.com/forgeload/forgeload/internal/pkg/forgetest"
)

const calledWorkflow = `name: lib
on:
  workflow_call:
    inputs:
      n: {type: number, default: 2}
      on: {type: boolean}
      s: {type: string, default: dflt}
    outputs:
      out:
        value: ${{ jobs.b.outputs.x }}
jobs:
  a:
    runs-on: forgeload
    steps:
      - run: echo a
  b:
    needs: a
    runs-on: [forgeload]
    steps:
      - run: echo b
`

// TestQueueCall: a Forge made WithCallExpansion expands a calling job as
// Gitea 1.27 does: one task per called job (the called workflow with that
// job alone), typed inputs in the event, the passed secrets only, a job
// handed out only after those it needs, with their results and outputs;
// the calling job's result and outputs once they are done. QueueJob
// refuses a calling job there, and QueueCall refuses without the mode.
func TestQueueCall(t *testing.T) {
	t.Parallel()
	if _, err := forgetest.New(t).QueueCall(forgetest.Job{Payload: []byte("jobs:\n  c:\n    uses: ./x.yml\n")}); err == nil {
		t.Fatal("QueueCall without WithCallExpansion: no error")
	}
	f := forgetest.New(t, forgetest.WithCallExpansion())
	if _, err := f.AddRepo("o/r", map[string]string{".gitea/workflows/lib.yml": calledWorkflow}); err != nil {
		t.Fatal(err)
	}
	c := register(t, f, []string{"forgeload"}, false)
	call, err := f.QueueCall(forgetest.Job{
		Payload: []byte("jobs:\n  c:\n    uses: ./.gitea/workflows/lib.yml\n    with:\n      ON: \"true\"\n    secrets: inherit\n"),
		Secrets: map[string]string{"S1": "v1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	ids := call.Tasks()
	first := c.mustFetch(0).Task
	if first.GetId() != ids["a"] || !strings.Contains(string(first.GetWorkflowPayload()), "a:") || strings.Contains(string(first.GetWorkflowPayload()), "b:") {
		t.Fatalf("first task %d, payload:\n%s\nwant job a alone", first.GetId(), first.GetWorkflowPayload())
	}
	ev := first.GetContext().AsMap()["event"].(map[string]any)["inputs"].(map[string]any)
	if ev["n"] != float64(2) || ev["on"] != true || ev["s"] != "dflt" || first.GetSecrets()["S1"] != "v1" {
		t.Fatalf("inputs %v, secrets %v; want n=2 on=true s=dflt and S1 inherited", ev, first.GetSecrets())
	}
	if res, _ := c.fetch(0); res.GetTask() != nil {
		t.Fatalf("b was handed out before a ended: task %d", res.GetTask().GetId())
	}
	if _, ok := call.Need(); ok {
		t.Fatal("Need is ready while the called jobs run")
	}
	c.mustUpdate(&runnerv1.UpdateTaskRequest{State: &runnerv1.TaskState{Id: first.GetId(), Result: runnerv1.Result_RESULT_SUCCESS}, Outputs: map[string]string{"y": "from-a"}})
	second := c.mustFetch(0).Task
	if second.GetId() != ids["b"] || second.GetNeeds()["a"].GetOutputs()["y"] != "from-a" || second.GetNeeds()["a"].GetResult() != runnerv1.Result_RESULT_SUCCESS {
		t.Fatalf("second task %d, needs %v; want b needing a's success and outputs", second.GetId(), second.GetNeeds())
	}
	c.mustUpdate(&runnerv1.UpdateTaskRequest{State: &runnerv1.TaskState{Id: second.GetId(), Result: runnerv1.Result_RESULT_FAILURE}, Outputs: map[string]string{"x": "42"}})
	need, ok := call.Need()
	if !ok || need.GetResult() != runnerv1.Result_RESULT_FAILURE || need.GetOutputs()["out"] != "42" {
		t.Fatalf("Need = %v %v; want failure with out=42", need, ok)
	}
	defer func() {
		if recover() == nil {
			t.Error("QueueJob of a calling job on a Forge made WithCallExpansion did not panic")
		}
	}()
	f.QueueJob(forgetest.Job{Payload: []byte("jobs:\n  c:\n    uses: ./.gitea/workflows/lib.yml\n")})
}
