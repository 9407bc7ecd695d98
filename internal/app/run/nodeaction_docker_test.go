package run

import (
	"fmt"
	"strings"
	"testing"
	"time"

	runnerv1 "gitea.dev/actions-proto-go/runner/v1"

	"github.com/forgeload/forgeload/internal/pkg/container/containertest"
	"github.com/forgeload/forgeload/internal/pkg/forgetest"
	"github.com/forgeload/forgeload/internal/pkg/jobrun"
)

// inJobContainer is JavaScript that is true in the job container, whose
// process 1 is the shell loop forgeload idles it with, and false on the
// host.
const inJobContainer = `require('fs').readFileSync('/proc/1/cmdline', 'utf8').includes("trap 'exit 0'")`

// ctrActionRepo is a JavaScript action with pre, main and post that say
// whether they run in the job container and pass state along; main says
// whether the path in its input (the runner's action cache) is visible,
// and waits for a cancel when asked to.
func ctrActionRepo() map[string]string {
	return map[string]string{
		"action.yml": "inputs:\n  look: {}\n  wait: {default: no}\noutputs:\n  said: {}\nruns:\n  using: node20\n  pre: pre.js\n  main: main.js\n  post: post.js\n",
		"pre.js": `const fs = require('fs');
console.log('pre in container: ' + ` + inJobContainer + `);
fs.appendFileSync(process.env.GITHUB_STATE, 'p=from-pre\n');
`,
		"main.js": `const fs = require('fs');
console.log('main in container: ' + ` + inJobContainer + ` + ' with ' + process.env.STATE_p + ' node ' + process.execPath);
console.log('runner files visible: ' + fs.existsSync(process.env.INPUT_LOOK));
fs.appendFileSync(process.env.GITHUB_OUTPUT, 'said=hi from ' + require('path').basename(process.env.GITHUB_ACTION_PATH) + '\n');
fs.appendFileSync(process.env.GITHUB_ENV, 'FROM_NODE=set-in-container\n');
fs.appendFileSync(process.env.GITHUB_STATE, 'm=from-main\n');
if (process.env.INPUT_WAIT === 'yes') { console.log('main waits'); setTimeout(() => {}, 120000); }
`,
		"post.js": "console.log('post in container: ' + " + inJobContainer + " + ' with ' + process.env.STATE_p + ' ' + process.env.STATE_m);\n",
	}
}

// TestNodeActionInJobContainer: in a job with container:, a JavaScript
// action from the forge runs in the job container with the image's node
// (the runner has no runner.node): its pre, main and post, state passing
// between them, its output and GITHUB_ENV reaching the next step, and
// none of the runner's files (its action cache) visible. An image
// without node fails the pre, naming the image and the fix, once: the
// post it would have registered is not run (before, it failed again with
// the same error). Before, a JavaScript action in a container job was
// refused.
func TestNodeActionInJobContainer(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	o, _, plain := dockerOptions(t)
	img := containertest.NodeImage(t)
	if _, err := h.forge.AddActionRepo("acts/ctr", forgetest.Commit{Tags: []string{"v1"}, Files: ctrActionRepo()}); err != nil {
		t.Fatal(err)
	}
	cacheDir := t.TempDir()
	o.ActionCache = &jobrun.ActionCache{Dir: cacheDir}
	job := func(image string) string {
		return fmt.Sprintf(`
on: push
jobs:
  a:
    runs-on: forgeload
    container:
      image: %s
    steps:
      - id: n
        uses: acts/ctr@v1
        with:
          look: %s
      - run: echo "next sees ${{ steps.n.outputs.said }} env=$FROM_NODE"
`, image, cacheDir)
	}
	v := h.run(job(img), o, selfActions(h))
	log := logText(v)
	if v.Result != runnerv1.Result_RESULT_SUCCESS {
		t.Fatalf("result %v; log:\n%s", v.Result, log)
	}
	for _, want := range []string{
		"pre in container: true",
		"main in container: true with from-pre node " + containertest.Node,
		"runner files visible: false",
		"next sees hi from ", "env=set-in-container",
		"post in container: true with from-pre from-main",
	} {
		wantContains(t, "log", log, want)
	}

	v = h.run(job(plain), o, selfActions(h))
	log = logText(v)
	if v.Result != runnerv1.Result_RESULT_FAILURE || strings.Contains(log, "in container: true") {
		t.Fatalf("an image without node: %v, want FAILURE with no script run; log:\n%s", v.Result, log)
	}
	// Said once: the post of a pre that could not start is not run.
	if n := strings.Count(log, "has no node on its PATH"); n != 1 || strings.Contains(log, "Post Run acts/ctr@v1") {
		t.Errorf("an image without node: the error is said %d times, want once, with no post; log:\n%s", n, log)
	}
	wantContains(t, "log", log, "the job container's image "+plain+" has no node on its PATH")
}

// TestNodeActionPostOnCancelInJobContainer: a job cancelled while a
// JavaScript action's main runs in the job container still runs the
// action's post there, as the always() steps run after a cancel.
func TestNodeActionPostOnCancelInJobContainer(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	o, _, _ := dockerOptions(t)
	img := containertest.NodeImage(t)
	if _, err := h.forge.AddActionRepo("acts/ctr", forgetest.Commit{Tags: []string{"v1"}, Files: ctrActionRepo()}); err != nil {
		t.Fatal(err)
	}
	o.ActionCache = &jobrun.ActionCache{Dir: t.TempDir()}
	o.ReportInterval = 200 * time.Millisecond
	job := forgetest.Job{Payload: []byte(fmt.Sprintf(`
on: push
jobs:
  a:
    runs-on: forgeload
    container:
      image: %s
    steps:
      - uses: acts/ctr@v1
        with:
          look: /
          wait: yes
      - run: echo not this
`, img))}
	selfActions(h)(&job)
	task := h.fetch(job)
	v := h.runCancelledAt(task, o, "main waits")
	log := logText(v)
	if v.Result != runnerv1.Result_RESULT_CANCELLED || strings.Contains(log, "not this") {
		t.Fatalf("result %v, want CANCELLED with no later step; log:\n%s", v.Result, log)
	}
	wantContains(t, "log", log, "post in container: true with from-pre from-main")
}
