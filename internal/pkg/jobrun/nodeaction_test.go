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
// workspace, a JavaScript action fails its step naming the file and field.
func TestNodeActionRefused(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ name, node, yml, want string }{
		{"no node", "", nodeActionYML, "act/action.yml: runs.using: node20: this runner runs JavaScript actions only with a Node.js its admin gives (runner.node"},
		{"main outside", "node", "runs:\n  using: node20\n  main: ../../../x.js\n", `act/action.yml: runs.main: "../../../x.js" is not a file inside the workspace`},
		{"no main", "node", "runs:\n  using: node20\n", "act/action.yml:2: runs.main: missing"},
		{"pre outside", "node", "runs:\n  using: node20\n  main: m.js\n  pre: /etc/p.js\n", `act/action.yml: runs.pre: "/etc/p.js" is not a file inside the workspace`},
	} {
		res, rep := runNodePayload(t, tt.node, "on: push\njobs:\n  a:\n    runs-on: x\n    steps:\n"+writeFilesStep(map[string]string{"act/action.yml": tt.yml})+"      - uses: ./act\n")
		if rows := jobRows(rep, 2); res != runnerv1.Result_RESULT_FAILURE || !strings.Contains(rows, tt.want) {
			t.Errorf("%s: %v, want FAILURE with %q:\n%s", tt.name, res, tt.want, rows)
		}
	}
}

// TestNodeActionLocalPre: a local action's pre: is not run, as on
// GitHub (the action is not there when the job starts): the step warns,
// naming the file, and its main and post run. Before, the step failed.
func TestNodeActionLocalPre(t *testing.T) {
	t.Parallel()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("no node on PATH")
	}
	files := writeFilesStep(map[string]string{
		"act/action.yml": "runs:\n  using: node20\n  pre: pre.js\n  main: main.js\n  post: post.js\n",
		"act/pre.js":     "console.log('pre ran');\n",
		"act/main.js":    "console.log('main ran');\n",
		"act/post.js":    "console.log('post ran');\n",
	})
	res, rep := runNodePayload(t, node, "on: push\njobs:\n  a:\n    runs-on: x\n    steps:\n"+files+"      - uses: ./act\n")
	rows := jobRows(rep, 2)
	if res != runnerv1.Result_RESULT_SUCCESS || strings.Contains(rows, "pre ran") {
		t.Fatalf("result %v; want SUCCESS with no pre:\n%s", res, rows)
	}
	for _, want := range []string{"::warning::act/action.yml: runs.pre is not run for a local action (uses: ./act)", "main ran", "post ran"} {
		if !strings.Contains(rows, want) {
			t.Errorf("rows lack %q:\n%s", want, rows)
		}
	}
}

// TestNodeActionInContainerJobNeedsNoRunnerNode: in a job with
// container: a JavaScript action runs with the image's node, so it is
// accepted without runner.node; on the host it still needs one. Before,
// every JavaScript action in a container job was refused.
func TestNodeActionInContainerJobNeedsNoRunnerNode(t *testing.T) {
	t.Parallel()
	a := &workflow.Action{Runs: workflow.ActionRuns{Using: "node20", Main: "m.js"}}
	for _, tt := range []struct {
		name, container, want string
	}{
		{"container", "    container: alpine:3\n", ""},
		{"host", "", "o/r@v1: action.yml: runs.using: node20: this runner runs JavaScript actions only with a Node.js its admin gives (runner.node"},
	} {
		j := &job{deps: &Config{}}
		var err error
		if j.wf, err = parseWorkflow("on: push\njobs:\n  a:\n    runs-on: x\n" + tt.container + "    steps:\n      - run: echo\n"); err != nil {
			t.Fatal(err)
		}
		err = j.checkNode(a, "o/r@v1: action.yml", "/x", ".")
		if (tt.want == "" && err != nil) || (tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want))) {
			t.Errorf("%s: checkNode without runner.node: %v, want %q", tt.name, err, tt.want)
		}
	}
}

func parseWorkflow(s string) (*workflow.Workflow, error) { return workflow.Parse([]byte(s)) }
