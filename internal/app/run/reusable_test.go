package run

import (
	"strings"
	"testing"

	runnerv1 "gitea.dev/actions-proto-go/runner/v1"

	"github.com/forgeload/forgeload/internal/pkg/forgetest"
	"github.com/forgeload/forgeload/internal/pkg/jobrun"
)

// buildWorkflow is a reusable workflow: typed inputs with a default, a
// required secret, two jobs (the second needs the first, and one skipped
// by its if:), and an output from a job's output.
const buildWorkflow = `name: build
on:
  workflow_call:
    inputs:
      target: {type: string, required: true}
      dry: {type: boolean, default: false}
      rate: {type: number, default: 5}
    secrets:
      TOKEN: {required: true}
    outputs:
      version:
        value: ${{ jobs.build.outputs.v }}-${{ jobs.test.result }}
jobs:
  build:
    runs-on: anything
    outputs:
      v: ${{ steps.b.outputs.v }}
    steps:
      - id: b
        run: |
          echo "building ${{ inputs.target }} rate=${{ inputs.rate }} from $(cat "$GITHUB_WORKSPACE/hello.txt" 2>/dev/null || echo no-checkout)"
          echo "token is ${{ secrets.TOKEN }}"
          echo "v=1.2.${{ inputs.rate }}" >> "$GITHUB_OUTPUT"
  test:
    needs: build
    runs-on: anything
    steps:
      - run: echo "testing ${{ needs.build.outputs.v }} dry=${{ inputs.dry }} ${{ !inputs.dry && 'real' || 'simulated' }}"
  skipped:
    if: ${{ !inputs.dry }}
    runs-on: anything
    steps:
      - run: echo never-runs
`

// TestReusableWorkflowFromForge: a job with uses: ./.gitea/workflows/x.yml
// (as Gitea up to 1.26 sends it, with no steps) runs the file of the
// task's repository at the run's commit, fetched with git from the fake
// forge with the task token: typed with: inputs and defaults, explicit
// secrets (masked), the called jobs in needs order, and the workflow's
// outputs as the job's. A remote owner/repo/.gitea/workflows/x.yml@ref
// with secrets: inherit runs too; a failing called job fails the caller and
// an if: failure() job after it runs. Before, such a job did not parse.
func TestReusableWorkflowFromForge(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	if _, err := h.forge.AddRepo("me/app", map[string]string{".gitea/workflows/build.yml": buildWorkflow, "hello.txt": "hi"}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.forge.AddActionRepo("org/shared", forgetest.Commit{Tags: []string{"v1"}, Files: map[string]string{
		".github/workflows/lib.yml": `on: workflow_call
jobs:
  first:
    runs-on: x
    steps:
      - uses: actions/checkout@v4
      - run: echo "lib sees ${{ secrets.OTHER }} and $(cat hello.txt)"
      - run: exit 3
  after:
    needs: first
    if: failure()
    runs-on: x
    steps:
      - run: echo "cleanup after ${{ needs.first.result }}"
`}}); err != nil {
		t.Fatal(err)
	}
	cache := &jobrun.ActionCache{Dir: t.TempDir()}
	secrets := func(j *forgetest.Job) {
		j.Secrets = map[string]string{"MY_TOKEN": "s3cr3t-value", "OTHER": "other-secret"}
	}
	v := h.run(`
on: push
jobs:
  call:
    uses: ./.gitea/workflows/build.yml
    with:
      target: world
      dry: true
    secrets:
      TOKEN: ${{ secrets.MY_TOKEN }}
`, Options{Config: jobrun.Config{ActionCache: cache}}, secrets)
	log := logText(v)
	if v.Result != runnerv1.Result_RESULT_SUCCESS {
		t.Fatalf("result %v; log:\n%s", v.Result, log)
	}
	for _, want := range []string{
		"Workflow " + h.forge.URL() + "/me/app@",
		"building world rate=5 from no-checkout", "token is ***",
		"testing 1.2.5 dry=true simulated",
		"job skipped: if: ${{ !inputs.dry }} is false",
		"Called job build: success", "Called job test: success", "Called job skipped: skipped",
		`[test] step 1 "Run echo \"testing ${{ needs.build.outputs.v }} dry=${{ inputs.dry }} ${{ !inputs.dry && 'real' || 'simulated' }}\"": success`,
	} {
		wantContains(t, "log", log, want)
	}
	if strings.Contains(log, "s3cr3t-value") || strings.Contains(log, "never-runs\n") {
		t.Errorf("log shows the secret or ran the skipped job:\n%s", log)
	}
	if got := v.Outputs["version"]; got != "1.2.5-success" {
		t.Errorf("output version = %q, want 1.2.5-success", got)
	}

	v = h.run(`
on: push
jobs:
  call:
    uses: org/shared/.github/workflows/lib.yml@v1
    secrets: inherit
`, Options{Config: jobrun.Config{ActionCache: cache}}, secrets)
	log = logText(v)
	if v.Result != runnerv1.Result_RESULT_FAILURE {
		t.Fatalf("remote call: result %v, want failure; log:\n%s", v.Result, log)
	}
	for _, want := range []string{"lib sees *** and hi", "Called job first: failure", "cleanup after failure", "Called job after: success"} {
		wantContains(t, "log", log, want)
	}

	// A required input missing fails the job before any called job runs.
	v = h.run(`
on: push
jobs:
  call:
    uses: ./.gitea/workflows/build.yml
    secrets: inherit
`, Options{Config: jobrun.Config{ActionCache: cache}}, secrets)
	log = logText(v)
	if v.Result != runnerv1.Result_RESULT_FAILURE || strings.Contains(log, "Called job") {
		t.Fatalf("missing input: result %v; log:\n%s", v.Result, log)
	}
	wantContains(t, "log", log, `input "target" is required by the called workflow`)
}

// TestCachedRepositoryNeedsAccess: a repository cached by commit (an
// action, or a called workflow's) is handed to a job only when the forge
// lets the job's token read it, even when the job names the commit id,
// which needs no lookup. Before, a job whose token could not read the
// repository got the cached files.
func TestCachedRepositoryNeedsAccess(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ids, err := h.forge.AddActionRepo("org/private", forgetest.Commit{Files: map[string]string{
		".gitea/workflows/lib.yml": "on: workflow_call\njobs:\n  a:\n    runs-on: x\n    steps: [{run: echo private-workflow-ran}]\n",
	}})
	if err != nil {
		t.Fatal(err)
	}
	cache := &jobrun.ActionCache{Dir: t.TempDir()}
	payload := "on: push\njobs:\n  call:\n    uses: org/private/.gitea/workflows/lib.yml@" + ids[0] + "\n"
	v := h.run(payload, Options{Config: jobrun.Config{ActionCache: cache}})
	if log := logText(v); v.Result != runnerv1.Result_RESULT_SUCCESS || !strings.Contains(log, "private-workflow-ran") {
		t.Fatalf("first run: %v; log:\n%s", v.Result, log)
	}
	// A job whose token the forge does not accept.
	v = h.run(payload, Options{Config: jobrun.Config{ActionCache: cache}}, func(j *forgetest.Job) {
		j.Context = map[string]any{"token": "not-a-token-of-this-forge"}
	})
	log := logText(v)
	if v.Result != runnerv1.Result_RESULT_FAILURE || strings.Contains(log, "private-workflow-ran") || strings.Contains(log, "Using the cached copy") {
		t.Fatalf("a job that cannot read the repository: %v; log:\n%s", v.Result, log)
	}
	wantContains(t, "log", log, "readable with the task's token?")
}

// TestCalledJobTimeout: a called job's own timeout-minutes fails it (not
// a cancel), and so the calling job, and the job after it that needs it is
// skipped. Before, it ended as cancelled without a word.
func TestCalledJobTimeout(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	if _, err := h.forge.AddRepo("me/app", map[string]string{".gitea/workflows/slow.yml": `on: workflow_call
jobs:
  slow:
    runs-on: x
    timeout-minutes: 0.01
    steps: [{run: sleep 30}]
  next:
    needs: slow
    runs-on: x
    steps: [{run: echo next-$((1+1))}]
`}); err != nil {
		t.Fatal(err)
	}
	v := h.run("on: push\njobs:\n  call:\n    uses: ./.gitea/workflows/slow.yml\n", Options{})
	log := logText(v)
	if v.Result != runnerv1.Result_RESULT_FAILURE || strings.Contains(log, "next-2") {
		t.Fatalf("result %v; log:\n%s", v.Result, log)
	}
	for _, want := range []string{"called job slow exceeded its timeout-minutes and was stopped", "Called job slow: failure", "Called job next: skipped"} {
		wantContains(t, "log", log, want)
	}
}
