package cmd

import (
	"strings"
	"testing"
)

// TestE2EExecReusableWorkflow: forgeload exec runs a job that calls a
// reusable workflow of the directory it runs in (uses: ./.gitea/...), with
// its inputs, its jobs in needs order (a matrix job once per combination),
// and the next job sees the called workflow's outputs through needs.
// Before, the workflow did not parse.
func TestE2EExecReusableWorkflow(t *testing.T) {
	parallel(t)
	code, out := execWorkflow(t, `on: push
jobs:
  call:
    uses: ./.gitea/workflows/lib.yml
    with:
      who: world
  after:
    needs: call
    runs-on: x
    steps:
      - run: echo "after got ${{ needs.call.outputs.greeting }} and leg ${{ needs.call.outputs.leg }}"
`, map[string]string{".gitea/workflows/lib.yml": `on:
  workflow_call:
    inputs:
      who: {type: string, required: true}
    outputs:
      greeting: {value: "${{ jobs.say.outputs.g }}"}
      leg: {value: "${{ jobs.legs.outputs.last }}-${{ jobs.legs.result }}"}
jobs:
  legs:
    needs: say
    runs-on: x
    strategy:
      matrix:
        n: [1, 2]
    outputs: {last: "${{ steps.l.outputs.v }}"}
    steps:
      - id: l
        run: |
          echo "leg ${{ matrix.n }} after ${{ needs.say.outputs.g }}"
          echo "v=${{ matrix.n }}" >> "$GITHUB_OUTPUT"
  say:
    runs-on: x
    outputs: {g: "${{ steps.s.outputs.g }}"}
    steps:
      - id: s
        run: echo "g=hello ${{ inputs.who }}" >> "$GITHUB_OUTPUT"
`})
	if code != 0 {
		t.Fatalf("exit %d; output:\n%s", code, out)
	}
	for _, want := range []string{"Called job say: success", "leg 1 after hello world", "leg 2 after hello world", "Called job legs (1): success",
		"Called job legs (2): success", "after got hello world and leg 2-success", "■ job call: success", "■ job after: success"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestE2EExecReusableWorkflowErrors: a workflow that calls itself stops at
// 10 levels (as on GitHub), and a secret the called workflow does not declare fails the
// job before any called job runs, naming it.
func TestE2EExecReusableWorkflowErrors(t *testing.T) {
	parallel(t)
	code, out := execWorkflow(t, `on: push
jobs:
  call:
    uses: ./.gitea/workflows/loop.yml
`, map[string]string{".gitea/workflows/loop.yml": `on: workflow_call
jobs:
  again:
    uses: ./.gitea/workflows/loop.yml
`})
	if code != ExitFailure || !strings.Contains(out, "this call would make 11 levels of workflows calling one another, more than the 10 allowed") {
		t.Fatalf("exit %d; output:\n%s", code, out)
	}
	code, out = execWorkflow(t, `on: push
jobs:
  call:
    uses: ./.gitea/workflows/lib.yml
    secrets:
      NOPE: x
`, map[string]string{".gitea/workflows/lib.yml": "on: workflow_call\njobs:\n  a:\n    runs-on: x\n    steps: [{run: echo ran}]\n"})
	if code != ExitFailure || strings.Contains(out, "Called job") ||
		!strings.Contains(out, `secrets.NOPE: the called workflow declares no secret "NOPE" under on.workflow_call.secrets`) {
		t.Fatalf("exit %d; output:\n%s", code, out)
	}
}

// TestE2EExecRemoteReusableWorkflowByURL: forgeload exec runs a reusable
// workflow named by its full URL, fetched with git from a public
// repository; owner/repo/... without a host is bad input there, saying
// why.
func TestE2EExecRemoteReusableWorkflowByURL(t *testing.T) {
	parallel(t)
	url := serveGitRepo(t, "org/shared", "v1", map[string]string{".github/workflows/lib.yml": `on:
  workflow_call:
    inputs:
      n: {type: number, default: 2}
jobs:
  a:
    runs-on: x
    steps:
      - run: echo "remote workflow n=${{ inputs.n }} sum=${{ inputs.n == 2 }}"
`})
	code, out := execWorkflow(t, "on: push\njobs:\n  call:\n    uses: "+url+"/org/shared/.github/workflows/lib.yml@v1\n", nil)
	if code != 0 || !strings.Contains(out, "remote workflow n=2 sum=true") {
		t.Fatalf("exit %d; output:\n%s", code, out)
	}
	code, out = execWorkflow(t, "on: push\njobs:\n  call:\n    uses: org/shared/.github/workflows/lib.yml@v1\n", nil)
	if code != ExitFailure || !strings.Contains(out, "a local run has no forge to fetch the workflow from; write its full URL") {
		t.Fatalf("exit %d; output:\n%s", code, out)
	}
}
