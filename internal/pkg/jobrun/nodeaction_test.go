package jobrun

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	runnerv1 "gitea.dev/actions-proto-go/runner/v1"

	"github.com/forgeload/forgeload/internal/pkg/workflow"
)

const nodeActionYML = `name: hello
inputs:
  who:
    default: nobody
  Greeting Word:
    default: hi
outputs:
  said:
    description: what it said
runs:
  using: node20
  main: dist/main.js
  post: dist/post.js
  post-if: always()
`

const nodeMain = `const fs = require('fs');
console.log('main says ' + process.env['INPUT_GREETING_WORD'] + ' ' + process.env.INPUT_WHO + ' from ' + process.env.GITHUB_ACTION_PATH.split('/').slice(-2).join('/'));
fs.appendFileSync(process.env.GITHUB_OUTPUT, 'said=' + process.env.INPUT_WHO + '\n');
fs.appendFileSync(process.env.GITHUB_STATE, 'started=yes-' + process.env.INPUT_WHO + '\n');
fs.appendFileSync(process.env.GITHUB_ENV, 'FROM_NODE=set-by-main\n');
if (process.env.INPUT_WHO === 'fail') { console.log('::error::asked to fail'); process.exit(2); }
`

const nodePost = `console.log('post sees state ' + process.env.STATE_started + ' input ' + process.env.INPUT_WHO);
`

func runNodePayload(t *testing.T, node, payload string) (runnerv1.Result, *memReporter) {
	t.Helper()
	cfg := Config{WorkDir: t.TempDir(), Node: node}.WithDefaults()
	rep := newMemReporter()
	j := NewJob(&cfg, &runnerv1.Task{Id: 1, WorkflowPayload: []byte(payload)})
	res := j.Run(context.Background(), context.Background(), rep)
	j.Cleanup()
	return res, rep
}

// TestNodeAction: a JavaScript action runs with the Node.js runner.node
// names: INPUT_* (upper case, spaces as _), GITHUB_OUTPUT, GITHUB_ENV,
// GITHUB_STATE handed to its post:, which runs after the job's steps,
// also when a step failed (post-if: always()). Before, it was refused.
func TestNodeAction(t *testing.T) {
	t.Parallel()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("no node on PATH")
	}
	files := writeFilesStep(map[string]string{"act/action.yml": nodeActionYML, "act/dist/main.js": nodeMain, "act/dist/post.js": nodePost})
	res, rep := runNodePayload(t, node, "on: push\njobs:\n  a:\n    runs-on: x\n    steps:\n"+files+`      - id: n
        uses: ./act
        with:
          who: world
      - run: echo "said=${{ steps.n.outputs.said }} env=$FROM_NODE"
      - uses: ./act
        with:
          who: fail
`)
	rows := jobRows(rep, 4)
	if res != runnerv1.Result_RESULT_FAILURE || rep.ends[1] != runnerv1.Result_RESULT_SUCCESS || rep.ends[3] != runnerv1.Result_RESULT_FAILURE {
		t.Fatalf("result %v, steps %v; want the last step (and so the job) to fail:\n%s", res, rep.ends, rows)
	}
	for _, want := range []string{
		"main says hi world from workspace/act",
		"said=world env=set-by-main",
		"Node.js exited with code 2.",
		"Post Run ./act",
		"post sees state yes-fail input fail",
		"post sees state yes-world input world",
	} {
		if !strings.Contains(rows, want) {
			t.Errorf("rows lack %q:\n%s", want, rows)
		}
	}
	job := strings.Join(rep.rows[-1], "\n")
	if strings.Index(job, "yes-fail") > strings.Index(job, "yes-world") {
		t.Errorf("posts did not run last first:\n%s", job)
	}
}

// TestNodeActionRefused: without runner.node, or with a main outside the
// action, a JavaScript action fails its step naming the file and field.
func TestNodeActionRefused(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ name, node, yml, want string }{
		{"no node", "", nodeActionYML, "act/action.yml: runs.using: node20: this runner runs JavaScript actions only with a Node.js its admin gives (runner.node"},
		{"main outside", "node", "runs:\n  using: node20\n  main: ../../../x.js\n", `act/action.yml: runs.main: "../../../x.js" is not a file inside the action`},
		{"no main", "node", "runs:\n  using: node20\n", "act/action.yml:2: runs.main: missing"},
		{"pre", "node", "runs:\n  using: node20\n  main: m.js\n  pre: p.js\n", "act/action.yml: runs.pre: not supported by this runner yet"},
	} {
		res, rep := runNodePayload(t, tt.node, "on: push\njobs:\n  a:\n    runs-on: x\n    steps:\n"+writeFilesStep(map[string]string{"act/action.yml": tt.yml})+"      - uses: ./act\n")
		if rows := jobRows(rep, 2); res != runnerv1.Result_RESULT_FAILURE || !strings.Contains(rows, tt.want) {
			t.Errorf("%s: %v, want FAILURE with %q:\n%s", tt.name, res, tt.want, rows)
		}
	}
}

// TestNodeActionInContainerJobRefusedFirst: a JavaScript action in a job
// with container: is refused before anything starts (no container, no
// step), naming the file and the reason.
func TestNodeActionInContainerJobRefusedFirst(t *testing.T) {
	t.Parallel()
	j := &job{deps: &Config{Node: "node"}}
	wf := `on: push
jobs:
  a:
    runs-on: x
    container: alpine:3
    steps:
      - run: echo
`
	var err error
	if j.wf, err = parseWorkflow(wf); err != nil {
		t.Fatal(err)
	}
	a := &workflow.Action{Runs: workflow.ActionRuns{Using: "node20", Main: "m.js"}}
	if err := j.checkNode(a, "o/r@v1: action.yml", "/x"); err == nil || !strings.Contains(err.Error(), "o/r@v1: action.yml: runs.using: node20: JavaScript actions are not run in a job container") {
		t.Fatalf("checkNode in a container job: %v", err)
	}
}

func parseWorkflow(s string) (*workflow.Workflow, error) { return workflow.Parse([]byte(s)) }
