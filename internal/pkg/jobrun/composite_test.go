package jobrun

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	runnerv1 "gitea.dev/actions-proto-go/runner/v1"
)

// writeFilesStep is a run: step that writes files into the workspace, as
// a checkout would; the contents go base64-encoded, so that the ${{ }} in
// them is not the run: step's own.
func writeFilesStep(files map[string]string) string {
	var b strings.Builder
	b.WriteString("      - run: |\n")
	for _, p := range sortedKeys(files) {
		b.WriteString("          mkdir -p \"$(dirname '" + p + "')\"\n")
		b.WriteString("          echo " + base64.StdEncoding.EncodeToString([]byte(files[p])) + " | base64 -d > '" + p + "'\n")
	}
	return b.String()
}

func jobRows(rep *memReporter, n int) string {
	all := strings.Join(rep.rows[-1], "\n")
	for i := range n {
		all += "\n" + strings.Join(rep.rows[i], "\n")
	}
	return all
}

const greetAction = `name: greet
inputs:
  who:
    required: true
  greeting:
    default: hi-${{ env.LEVEL }}
outputs:
  msg:
    value: ${{ steps.say.outputs.msg }}
  inner:
    value: ${{ steps.nested.outputs.got }}
runs:
  using: composite
  steps:
    - id: say
      shell: bash
      run: |
        echo "${{ inputs.greeting }}, ${{ inputs.who }} outer=$OUTER own=$OWN path=$GITHUB_ACTION_PATH ctx=${{ github.action_path }}"
        echo "msg=said-${{ inputs.who }}" >> "$GITHUB_OUTPUT"
      env:
        OWN: own-value
    - id: nested
      uses: ./.gitea/actions/inner
      with:
        x: from-${{ steps.say.outputs.msg }}
    - if: failure()
      shell: sh
      run: echo must-not-run
    - if: always()
      shell: sh
      run: echo always-ran
`

const innerAction = `runs:
  using: composite
  steps:
    - id: o
      shell: sh
      run: |
        echo "inner got ${{ inputs.x }}"
        echo "got=${{ inputs.x }}" >> "$GITHUB_OUTPUT"
inputs:
  x: {}
outputs:
  got:
    value: ${{ steps.o.outputs.got }}
`

// TestCompositeLocalAction: uses: ./path runs a local composite action:
// inputs (given and defaulted), outputs, a nested local action (action.yaml),
// if: on its steps, the uses: step's env, shell, GITHUB_ACTION_PATH and
// github.action_path. Before, the job was refused.
func TestCompositeLocalAction(t *testing.T) {
	t.Parallel()
	res, rep := runPayload(t, `
on: push
env:
  LEVEL: l1
jobs:
  a:
    runs-on: x
    steps:
`+writeFilesStep(map[string]string{
		".gitea/actions/greet/action.yml":  greetAction,
		".gitea/actions/inner/action.yaml": innerAction,
	})+`      - id: g
        uses: ./.gitea/actions/greet
        with:
          who: world
          extra: 1
        env:
          OUTER: outer-value
      - run: echo "after msg=${{ steps.g.outputs.msg }} inner=${{ steps.g.outputs.inner }}"
`)
	rows := jobRows(rep, 3)
	if res != runnerv1.Result_RESULT_SUCCESS {
		t.Fatalf("result %v:\n%s", res, rows)
	}
	step := strings.Join(rep.rows[1], "\n")
	for _, want := range []string{
		"hi-l1, world outer=outer-value own=own-value path=",
		"/workspace/.gitea/actions/greet ctx=/",
		"inner got from-said-world",
		"always-ran",
		"with.extra is not an input of .gitea/actions/greet/action.yml (it declares: who, greeting); it is ignored",
	} {
		if !strings.Contains(step, want) {
			t.Errorf("the action's rows lack %q:\n%s", want, step)
		}
	}
	if strings.Contains(step, "must-not-run") {
		t.Errorf("an if: failure() step ran:\n%s", step)
	}
	if got := strings.Join(rep.rows[2], "\n"); !strings.Contains(got, "after msg=said-world inner=from-said-world") {
		t.Errorf("outputs did not reach the next step:\n%s", got)
	}
}

// TestCompositeFailures: a failing step fails the action (later steps run
// only with always() or failure()); bad metadata names the file and
// field; an action.yml that is a symlink out of the workspace is not read;
// an action that uses itself stops at the depth bound; an unsupported
// uses: inside is refused before any of the action's steps runs.
func TestCompositeFailures(t *testing.T) {
	t.Parallel()
	outside := filepath.Join(t.TempDir(), "action.yml")
	if err := os.WriteFile(outside, []byte("runs:\n  using: composite\n  steps:\n    - run: echo leaked-outside\n      shell: sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, action string
		want         []string
		never        string
	}{
		{"failing step", "runs:\n  using: composite\n  steps:\n    - run: exit 3\n      shell: sh\n    - run: echo next-ran\n      shell: sh\n    - if: failure()\n      run: echo failure-ran\n      shell: sh\n",
			[]string{"Process completed with exit code 3.", "failure-ran"}, "next-ran"},
		{"bad metadata", "runs:\n  using: composite\n  steps:\n    - run: echo\n",
			[]string{"uses: ./act: act/action.yml:4: runs.steps[0].shell: missing"}, ""},
		{"node action", "runs:\n  using: node20\n  main: index.js\n",
			[]string{"act/action.yml: runs.using: node20: this runner runs JavaScript actions only with a Node.js its admin gives (runner.node"}, ""},
		{"itself", "runs:\n  using: composite\n  steps:\n    - uses: ./act\n",
			[]string{"composite actions nest more than 10 deep"}, ""},
		{"remote inside", "runs:\n  using: composite\n  steps:\n    - run: echo first-inner-ran\n      shell: sh\n    - uses: actions/cache@v4\n",
			[]string{`./act: act/action.yml: runs.steps[1] uses "actions/cache@v4": the task carries no default actions URL`}, "first-inner-ran"},
		{"bad if", "runs:\n  using: composite\n  steps:\n    - name: guarded\n      if: nosuchfn()\n      run: echo guarded-ran\n      shell: sh\n",
			[]string{`::error::./act: act/action.yml: runs.steps[0] "guarded": if:`}, "guarded-ran"},
		{"bad output", "outputs:\n  o:\n    value: ${{ nosuchfn() }}\nruns:\n  using: composite\n  steps:\n    - run: exit 1\n      shell: sh\n",
			[]string{"::warning::./act: act/action.yml: outputs.o.value:"}, ""},
		{"symlink out", "",
			[]string{"a symlink leads outside the workspace"}, "leaked-outside"},
	} {
		files := map[string]string{"act/action.yml": tt.action}
		setup := writeFilesStep(files)
		if tt.action == "" {
			setup = "      - run: mkdir act && ln -s " + outside + " act/action.yml\n"
		}
		res, rep := runPayload(t, "on: push\njobs:\n  a:\n    runs-on: x\n    steps:\n"+setup+"      - uses: ./act\n")
		rows := jobRows(rep, 2)
		if res != runnerv1.Result_RESULT_FAILURE || rep.ends[1] != runnerv1.Result_RESULT_FAILURE {
			t.Errorf("%s: result %v, step %v; want FAILURE:\n%s", tt.name, res, rep.ends[1], rows)
		}
		for _, w := range tt.want {
			if !strings.Contains(rows, w) {
				t.Errorf("%s: rows lack %q:\n%s", tt.name, w, rows)
			}
		}
		if tt.never != "" && strings.Contains(rows, tt.never) {
			t.Errorf("%s: %q ran:\n%s", tt.name, tt.never, rows)
		}
	}
}
