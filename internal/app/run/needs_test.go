package run

import (
	"strings"
	"testing"

	runnerv1 "gitea.dev/actions-proto-go/runner/v1"

	"github.com/forgeload/forgeload/internal/pkg/forgetest"
)

// TestRunJobIfSeesNeeds: a job-level if: is evaluated with the results of
// the jobs the task needs (issue 30): after a failed perf gate, a
// failure() rollback runs and a success() deploy, or a job with no if:, is
// skipped; after a success it is the other way round.
func TestRunJobIfSeesNeeds(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cond string // "" means no if:
		gate runnerv1.Result
		want runnerv1.Result
	}{
		{"failure() after a failed gate runs", "failure()", runnerv1.Result_RESULT_FAILURE, runnerv1.Result_RESULT_SUCCESS},
		{"success() after a failed gate is skipped", "success()", runnerv1.Result_RESULT_FAILURE, runnerv1.Result_RESULT_SKIPPED},
		{"no if after a failed gate is skipped", "", runnerv1.Result_RESULT_FAILURE, runnerv1.Result_RESULT_SKIPPED},
		{"needs result after a failed gate runs", "${{ always() && needs.gate.result == 'failure' }}", runnerv1.Result_RESULT_FAILURE, runnerv1.Result_RESULT_SUCCESS},
		{"success() after a skipped gate is skipped", "success()", runnerv1.Result_RESULT_SKIPPED, runnerv1.Result_RESULT_SKIPPED},
		{"failure() after a passed gate is skipped", "failure()", runnerv1.Result_RESULT_SUCCESS, runnerv1.Result_RESULT_SKIPPED},
		{"no if after a passed gate runs", "", runnerv1.Result_RESULT_SUCCESS, runnerv1.Result_RESULT_SUCCESS},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cond := ""
			if tt.cond != "" {
				cond = "    if: " + tt.cond + "\n"
			}
			payload := "on: push\njobs:\n  next:\n    runs-on: x\n" + cond + "    steps:\n      - run: echo next-ran\n"
			v := newHarness(t).run(payload, Options{}, func(j *forgetest.Job) {
				j.Needs = map[string]*runnerv1.TaskNeed{
					"gate":  {Result: tt.gate},
					"build": {Result: runnerv1.Result_RESULT_SUCCESS},
				}
			})
			if v.Result != tt.want {
				t.Fatalf("result = %v, want %v; log:\n%s", v.Result, tt.want, logText(v))
			}
			if ran := strings.Contains(logText(v), "next-ran"); ran != (tt.want == runnerv1.Result_RESULT_SUCCESS) {
				t.Fatalf("step ran = %v with result %v; log:\n%s", ran, v.Result, logText(v))
			}
		})
	}
}

// TestRunTypedDispatchInputs: a workflow_dispatch boolean input sent as
// "false" is false in inputs, so if: inputs.dry_run skips its step and
// if: !inputs.dry_run runs its one (issue 30); github.event.inputs keeps the
// string, and a number input compares as a number.
func TestRunTypedDispatchInputs(t *testing.T) {
	t.Parallel()
	payload := `on:
  workflow_dispatch:
    inputs:
      dry_run: {type: boolean, default: true}
      rate: {type: number}
jobs:
  perf:
    runs-on: x
    steps:
      - if: inputs.dry_run
        run: echo dry-run-step
      - if: ${{ !inputs.dry_run }}
        run: echo real-run-step
      - run: echo "event=${{ github.event.inputs.dry_run == 'false' }} rate=${{ inputs.rate > 99 }}"
`
	v := newHarness(t).run(payload, Options{}, func(j *forgetest.Job) {
		j.Context = map[string]any{
			"event_name": "workflow_dispatch",
			"event":      map[string]any{"inputs": map[string]any{"dry_run": "false", "rate": "100"}},
		}
	})
	log := logText(v)
	if v.Result != runnerv1.Result_RESULT_SUCCESS {
		t.Fatalf("result = %v; log:\n%s", v.Result, log)
	}
	if strings.Contains(log, "dry-run-step") {
		t.Errorf("if: inputs.dry_run ran with dry_run=false; log:\n%s", log)
	}
	wantContains(t, "log", log, "real-run-step")
	wantContains(t, "log", log, "event=true rate=true")
}
