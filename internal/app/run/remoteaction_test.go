package run

import (
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	runnerv1 "gitea.dev/actions-proto-go/runner/v1"

	"github.com/forgeload/forgeload/internal/pkg/forgetest"
	"github.com/forgeload/forgeload/internal/pkg/jobrun"
)

func greetRepo(version string) map[string]string {
	return map[string]string{
		"action.yml": `name: greet
inputs:
  who:
    default: nobody
outputs:
  msg:
    value: ${{ steps.say.outputs.msg }}
runs:
  using: composite
  steps:
    - id: say
      shell: bash
      run: |
        echo "greet ` + version + ` ${{ inputs.who }} from $(cat "$GITHUB_ACTION_PATH/name.txt")"
        echo "msg=said ${{ inputs.who }}" >> "$GITHUB_OUTPUT"
    - uses: acts/greet/inner@v1
      with:
        x: nested-${{ inputs.who }}
`,
		"name.txt": "greet-" + version,
		"inner/action.yml": `inputs:
  x: {}
runs:
  using: composite
  steps:
    - shell: sh
      run: echo "inner got ${{ inputs.x }}"
`,
		"node/action.yml": "runs:\n  using: node20\n  main: index.js\n",
	}
}

// selfActions makes the job's default actions URL the fake forge itself
// (Gitea's DEFAULT_ACTIONS_URL=self).
func selfActions(h *harness) func(*forgetest.Job) {
	return func(j *forgetest.Job) {
		j.Context = map[string]any{"gitea_default_actions_url": h.forge.URL()}
	}
}

// TestRemoteActionFromForge: uses: owner/repo@ref fetches the action with
// git from the forge's real smart-HTTP endpoint, with the task's token,
// resolved against the task's default actions URL (and as a full URL, and
// by commit, and in a directory of the repository by an annotated tag);
// a composite action's nested remote action runs; the second job uses the
// cache; a tag moved to another commit is fetched anew. Before, every
// action from another repository was refused.
func TestRemoteActionFromForge(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ids, err := h.forge.AddActionRepo("acts/greet", forgetest.Commit{Files: greetRepo("v1"), Tags: []string{"v1"}, AnnotatedTags: []string{"v1.0"}})
	if err != nil {
		t.Fatal(err)
	}
	cache := &jobrun.ActionCache{Dir: t.TempDir()}
	payload := `
on: push
jobs:
  a:
    runs-on: forgeload
    steps:
      - run: echo first-step-ran
      - id: g
        uses: acts/greet@v1
        with:
          who: world
      - run: echo "out=${{ steps.g.outputs.msg }}"
      - uses: acts/greet/inner@v1.0
        with:
          x: direct
      - uses: ` + h.forge.URL() + `/acts/greet@` + ids[0] + `
`
	v := h.run(payload, Options{Config: jobrun.Config{ActionCache: cache}}, selfActions(h))
	log := logText(v)
	if v.Result != runnerv1.Result_RESULT_SUCCESS {
		t.Fatalf("result %v; log:\n%s", v.Result, log)
	}
	for _, want := range []string{
		"Action " + h.forge.URL() + "/acts/greet@v1 is commit " + ids[0],
		"greet v1 world from greet-v1", "inner got nested-world", "out=said world",
		"inner got direct", "greet v1 nobody from greet-v1",
	} {
		wantContains(t, "log", log, want)
	}
	if auths := h.forge.GitAuths(); len(auths) == 0 || auths[0] != v.Token {
		t.Errorf("git requests authenticated with %q, want the task token", auths)
	}

	// The same commit again: from the cache, no fetch.
	v = h.run(payload, Options{Config: jobrun.Config{ActionCache: cache}}, selfActions(h))
	if log := logText(v); v.Result != runnerv1.Result_RESULT_SUCCESS || !strings.Contains(log, "Using the cached copy of commit "+ids[0]) {
		t.Fatalf("second run: %v; log:\n%s", v.Result, log)
	}

	// v1 moves to a new commit: the job runs the new one.
	ids2, err := h.forge.AddActionRepo("acts/greet", forgetest.Commit{Files: greetRepo("v1")}, forgetest.Commit{Files: greetRepo("v2"), Tags: []string{"v1"}, AnnotatedTags: []string{"v1.0"}})
	if err != nil {
		t.Fatal(err)
	}
	v = h.run(strings.Replace(payload, "@"+ids[0], "@v1", 1), Options{Config: jobrun.Config{ActionCache: cache}}, selfActions(h))
	log = logText(v)
	if v.Result != runnerv1.Result_RESULT_SUCCESS || !strings.Contains(log, "greet v2 world from greet-v2") || !strings.Contains(log, "is commit "+ids2[1]) {
		t.Fatalf("after the tag moved: %v; log:\n%s", v.Result, log)
	}

	// By commit id, into an empty cache: fetched by that id.
	v = h.run(`
on: push
jobs:
  a:
    runs-on: forgeload
    steps:
      - uses: acts/greet@`+ids2[1]+`
        with:
          who: by-id
`, Options{Config: jobrun.Config{ActionCache: &jobrun.ActionCache{Dir: t.TempDir()}}}, selfActions(h))
	log = logText(v)
	if v.Result != runnerv1.Result_RESULT_SUCCESS || !strings.Contains(log, "greet v2 by-id from greet-v2") || strings.Contains(log, "Using the cached copy") {
		t.Fatalf("by commit id: %v; log:\n%s", v.Result, log)
	}
}

// TestRemoteActionRefused: what cannot run is refused before any step
// runs: a ref the repository lacks, a JavaScript action, an action larger
// than the cache's bound. The task token never goes to another host than
// the forge.
func TestRemoteActionRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	if _, err := h.forge.AddActionRepo("acts/greet", forgetest.Commit{Files: greetRepo("v1"), Tags: []string{"v1"}}); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, uses string
		opts       Options
		want       string
	}{
		{"unknown ref", "acts/greet@v9", Options{}, `the repository has no tag or branch "v9"`},
		{"node action", "acts/greet/node@v1", Options{}, "acts/greet/node@v1: node/action.yml: runs.using: node20: this runner runs JavaScript actions only with a Node.js its admin gives (runner.node"},
		{"too large", "acts/greet@v1", Options{Config: jobrun.Config{ActionCache: &jobrun.ActionCache{Dir: t.TempDir(), MaxBytes: 100}}}, "more than the action cache's bound"},
	} {
		v := h.run("on: push\njobs:\n  a:\n    runs-on: forgeload\n    steps:\n      - run: echo first-step-ran\n      - uses: "+tt.uses+"\n", tt.opts, selfActions(h))
		log := logText(v)
		if v.Result != runnerv1.Result_RESULT_FAILURE || strings.Contains(log, "first-step-ran") || !strings.Contains(log, tt.want) {
			t.Errorf("%s: %v; want FAILURE before any step ran, with %q; log:\n%s", tt.name, v.Result, tt.want, log)
		}
	}

	// Another host: no token.
	var mu sync.Mutex
	var auths []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auths = append(auths, r.Header.Get("Authorization"))
		mu.Unlock()
		http.NotFound(w, r)
	}))
	defer other.Close()
	v := h.run("on: push\njobs:\n  a:\n    runs-on: forgeload\n    steps:\n      - uses: acts/greet@v1\n", Options{}, func(j *forgetest.Job) {
		j.Context = map[string]any{"gitea_default_actions_url": other.URL}
	})
	mu.Lock()
	defer mu.Unlock()
	if v.Result != runnerv1.Result_RESULT_FAILURE || len(auths) == 0 {
		t.Fatalf("an action from another host: %v, %d requests; log:\n%s", v.Result, len(auths), logText(v))
	}
	for _, a := range auths {
		if a != "" {
			t.Fatalf("the runner sent %q to a host other than the forge", a)
		}
	}
}

// TestRemoteNodeAction: a JavaScript action from the forge runs with
// runner.node, its output reaching the next step and its post running
// after the job's steps with main's state.
func TestRemoteNodeAction(t *testing.T) {
	t.Parallel()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("no node on PATH")
	}
	h := newHarness(t)
	if _, err := h.forge.AddActionRepo("acts/hello", forgetest.Commit{Tags: []string{"v2"}, Files: map[string]string{
		"action.yml": "inputs:\n  who: {}\noutputs:\n  said: {}\nruns:\n  using: node20\n  main: main.js\n  post: post.js\n",
		"main.js": `const fs = require('fs');
console.log('node main for ' + process.env.INPUT_WHO);
fs.appendFileSync(process.env.GITHUB_OUTPUT, 'said=hello ' + process.env.INPUT_WHO + '\n');
fs.appendFileSync(process.env.GITHUB_STATE, 'who=' + process.env.INPUT_WHO + '\n');
`,
		"post.js": "console.log('node post for ' + process.env.STATE_who);\n",
	}}); err != nil {
		t.Fatal(err)
	}
	v := h.run(`
on: push
jobs:
  a:
    runs-on: forgeload
    steps:
      - id: n
        uses: acts/hello@v2
        with:
          who: forge
      - run: echo "next sees ${{ steps.n.outputs.said }}"
`, Options{Config: jobrun.Config{Node: node, ActionCache: &jobrun.ActionCache{Dir: t.TempDir()}}}, selfActions(h))
	log := logText(v)
	if v.Result != runnerv1.Result_RESULT_SUCCESS {
		t.Fatalf("result %v; log:\n%s", v.Result, log)
	}
	for _, want := range []string{"node main for forge", "next sees hello forge", "node post for forge"} {
		wantContains(t, "log", log, want)
	}
	if strings.Index(log, "node post for") < strings.Index(log, "next sees") {
		t.Errorf("post ran before the job's last step:\n%s", log)
	}
}

// preRepo is a JavaScript action with pre, main and post that pass state
// along; skip/ has a pre-if that is false, wrap/ nests the root action in
// a composite one (with: from its input), deep/ nests wrap/, bad/ nests
// an action the repository lacks (in a step whose if: is false), two/
// nests a failing pre before succ/, whose pre-if is success(), and a who
// of fail-pre makes the pre fail.
func preRepo() map[string]string {
	return map[string]string{
		"action.yml": "inputs:\n  who: {}\nruns:\n  using: node20\n  pre: pre.js\n  main: main.js\n  post: post.js\n",
		"pre.js": `const fs = require('fs');
console.log('node pre for ' + process.env.INPUT_WHO);
fs.appendFileSync(process.env.GITHUB_STATE, 'from_pre=pre-' + process.env.INPUT_WHO + '\n');
if (process.env.INPUT_WHO === 'fail-pre') process.exit(3);
`,
		"main.js": `const fs = require('fs');
console.log('node main for ' + process.env.INPUT_WHO + ' sees pre state ' + process.env.STATE_from_pre);
fs.appendFileSync(process.env.GITHUB_STATE, 'who=' + process.env.INPUT_WHO + '\n');
`,
		"post.js":         "console.log('node post for ' + process.env.STATE_who + ' with pre state ' + process.env.STATE_from_pre);\n",
		"skip/action.yml": "runs:\n  using: node20\n  pre: pre.js\n  pre-if: runner.os == 'Plan9'\n  main: main.js\n",
		"skip/pre.js":     "console.log('skipped pre ran');\n",
		"skip/main.js":    "console.log('skip main sees pre state ' + (process.env.STATE_from_pre || 'none'));\n",
		"wrap/action.yml": "inputs:\n  tag: {}\nruns:\n  using: composite\n  steps:\n    - shell: sh\n      run: echo wrap-main-ran\n    - uses: acts/pre@v1\n      with:\n        who: nested-${{ inputs.tag }}\n",
		"deep/action.yml": "runs:\n  using: composite\n  steps:\n    - uses: acts/pre/wrap@v1\n      with:\n        tag: deep\n",
		"bad/action.yml":  "runs:\n  using: composite\n  steps:\n    - if: false\n      uses: acts/pre/nothere@v1\n",
		"succ/action.yml": "runs:\n  using: node20\n  pre: pre.js\n  pre-if: success()\n  main: main.js\n",
		"succ/pre.js":     "console.log('success-if pre ran');\n",
		"succ/main.js":    "console.log('succ main ran');\n",
		"two/action.yml":  "runs:\n  using: composite\n  steps:\n    - uses: acts/pre@v1\n      with:\n        who: fail-pre\n    - uses: acts/pre/succ@v1\n",
	}
}

// TestRemoteNodeActionPre: the pre: of a JavaScript action from the forge
// runs when the job starts, before its first step, in the job's own rows
// under "Pre <step>", with the step's inputs; what it writes to
// GITHUB_STATE reaches main and post as STATE_*; a pre-if that is false
// skips it. Nested in composite actions from the forge, at any depth, it
// runs when the job starts too, as the composite step's pre, with its
// inputs as they evaluate then (steps is empty), as GitHub's runner runs
// it; nested in a local composite action it is not run, with a warning,
// as on GitHub. A nested action the forge lacks fails the job before any
// step runs, as on GitHub. A failing pre fails the job before any step
// runs, and the post it registered still runs; a later nested pre-if:
// success() still holds in the same composite's pre, as on GitHub.
// Before, a nested pre ran right before its main, in a local composite
// action too, and a missing nested action failed only its composite
// step, after the earlier steps ran.
func TestRemoteNodeActionPre(t *testing.T) {
	t.Parallel()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("no node on PATH")
	}
	h := newHarness(t)
	if _, err := h.forge.AddActionRepo("acts/pre", forgetest.Commit{Tags: []string{"v1"}, Files: preRepo()}); err != nil {
		t.Fatal(err)
	}
	o := Options{Config: jobrun.Config{Node: node, ActionCache: &jobrun.ActionCache{Dir: t.TempDir()}}}
	v := h.run(`
on: push
jobs:
  a:
    runs-on: forgeload
    steps:
      - id: x
        run: |
          echo first-step-ran
          echo "y=after" >> "$GITHUB_OUTPUT"
          mkdir lw
          printf 'runs:\n  using: composite\n  steps:\n    - uses: acts/pre@v1\n      with:\n        who: local\n' > lw/action.yml
      - uses: acts/pre@v1
        with:
          who: forge
      - uses: acts/pre/skip@v1
      - uses: acts/pre/wrap@v1
        with:
          tag: ${{ steps.x.outputs.y || 'before' }}
      - uses: acts/pre/deep@v1
      - uses: ./lw
`, o, selfActions(h))
	log := logText(v)
	if v.Result != runnerv1.Result_RESULT_SUCCESS {
		t.Fatalf("result %v; log:\n%s", v.Result, log)
	}
	order := []string{
		"Pre Run acts/pre@v1", "node pre for forge",
		"Pre Run acts/pre/wrap@v1", "node pre for nested-before",
		"Pre Run acts/pre/deep@v1", "Pre Run acts/pre/wrap@v1", "node pre for nested-deep",
		"first-step-ran",
		"node main for forge sees pre state pre-forge", "skip main sees pre state none",
		"wrap-main-ran", "node main for nested-after sees pre state pre-nested-before",
		"node main for nested-deep sees pre state pre-nested-deep",
		"runs.pre is not run for an action nested in a local action (uses: ./lw), as on GitHub",
		"node main for local sees pre state undefined",
		"node post for local with pre state undefined",
		"node post for nested-deep with pre state pre-nested-deep",
		"node post for nested-after with pre state pre-nested-before",
		"node post for forge with pre state pre-forge",
	}
	wantInOrder(t, log, order)
	if strings.Contains(log, "skipped pre ran") {
		t.Errorf("a pre whose pre-if is false ran:\n%s", log)
	}
	if rows := strings.Join(stepLog(t, v, 0), "\n") + strings.Join(stepLog(t, v, 1), "\n"); strings.Contains(rows, "node pre for forge") {
		t.Errorf("the pre's rows are in a step's:\n%s", rows)
	}

	v = h.run(`
on: push
jobs:
  a:
    runs-on: forgeload
    steps:
      - run: echo first-step-ran
      - uses: acts/pre@v1
        with:
          who: fail-pre
`, o, selfActions(h))
	log = logText(v)
	if v.Result != runnerv1.Result_RESULT_FAILURE || strings.Contains(log, "first-step-ran") || strings.Contains(log, "node main for") {
		t.Fatalf("a failing pre: %v, want FAILURE with no step run; log:\n%s", v.Result, log)
	}
	for _, want := range []string{"Node.js exited with code 3.", "node post for undefined with pre state pre-fail-pre"} {
		wantContains(t, "log", log, want)
	}

	v = h.run("on: push\njobs:\n  a:\n    runs-on: forgeload\n    steps:\n      - run: echo first-step-ran\n      - uses: acts/pre/bad@v1\n", o, selfActions(h))
	log = logText(v)
	want := `bad/action.yml: runs.steps[0] uses "acts/pre/nothere@v1": `
	if v.Result != runnerv1.Result_RESULT_FAILURE || strings.Contains(log, "first-step-ran") || !strings.Contains(log, want) {
		t.Fatalf("a nested action the forge lacks: %v, want FAILURE before any step, with %q; log:\n%s", v.Result, want, log)
	}

	// A nested pre-if: success() looks at the job's status, which a
	// failed pre nested in the same composite action has not changed yet,
	// as in GitHub's runner; the job then fails.
	v = h.run("on: push\njobs:\n  a:\n    runs-on: forgeload\n    steps:\n      - uses: acts/pre/two@v1\n", o, selfActions(h))
	log = logText(v)
	if v.Result != runnerv1.Result_RESULT_FAILURE || strings.Contains(log, "succ main ran") {
		t.Fatalf("a failing nested pre: %v, want FAILURE with no main; log:\n%s", v.Result, log)
	}
	wantInOrder(t, log, []string{"node pre for fail-pre", "Node.js exited with code 3.", "success-if pre ran"})
}

// TestRemoteNodeActionMainInRepository: a JavaScript action in a
// directory of its repository may name a main and a post in another
// directory of that repository (main: ../dist/restore/index.js), as
// actions/cache/restore@v4 does; before, forgeload refused any path that
// left the action's own directory, so that release failed before any
// step ran. A path that leaves the repository is still refused.
func TestRemoteNodeActionMainInRepository(t *testing.T) {
	t.Parallel()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("no node on PATH")
	}
	h := newHarness(t)
	if _, err := h.forge.AddActionRepo("acts/split", forgetest.Commit{Tags: []string{"v1"}, Files: map[string]string{
		"restore/action.yml":    "runs:\n  using: node20\n  main: ../dist/restore/index.js\n  post: ../dist/restore/post.js\n",
		"dist/restore/index.js": "console.log('restore main from ' + require('path').basename(process.env.GITHUB_ACTION_PATH));\n",
		"dist/restore/post.js":  "console.log('restore post ran');\n",
		"escape/action.yml":     "runs:\n  using: node20\n  main: ../../outside.js\n",
	}}); err != nil {
		t.Fatal(err)
	}
	o := Options{Config: jobrun.Config{Node: node, ActionCache: &jobrun.ActionCache{Dir: t.TempDir()}}}
	v := h.run("on: push\njobs:\n  a:\n    runs-on: forgeload\n    steps:\n      - uses: acts/split/restore@v1\n", o, selfActions(h))
	log := logText(v)
	if v.Result != runnerv1.Result_RESULT_SUCCESS {
		t.Fatalf("result %v; log:\n%s", v.Result, log)
	}
	wantContains(t, "log", log, "restore main from restore")
	wantContains(t, "log", log, "restore post ran")

	v = h.run("on: push\njobs:\n  a:\n    runs-on: forgeload\n    steps:\n      - run: echo first-step-ran\n      - uses: acts/split/escape@v1\n", o, selfActions(h))
	log = logText(v)
	want := `acts/split/escape@v1: escape/action.yml: runs.main: "../../outside.js" is not a file inside the action's repository`
	if v.Result != runnerv1.Result_RESULT_FAILURE || strings.Contains(log, "first-step-ran") || !strings.Contains(log, want) {
		t.Fatalf("a main outside the repository: %v; want FAILURE before any step, with %q; log:\n%s", v.Result, want, log)
	}
}

// wantInOrder fails t unless log has each of want, one after the other.
func wantInOrder(t *testing.T, log string, want []string) {
	t.Helper()
	rest := log
	for _, w := range want {
		n := strings.Index(rest, w)
		if n < 0 {
			t.Fatalf("the log lacks %q after what came before it, in order %q; log:\n%s", w, want, log)
		}
		rest = rest[n+len(w):]
	}
}

// limRepo is a JavaScript action whose pre or post hangs or fails as its
// input mode asks.
func limRepo() map[string]string {
	return map[string]string{
		"action.yml": "inputs:\n  mode: {}\nruns:\n  using: node20\n  pre: pre.js\n  main: main.js\n  post: post.js\n",
		"pre.js": `const m = process.env.INPUT_MODE;
if (m === 'hang-pre') { console.log('pre hangs'); setTimeout(() => {}, 120000); }
if (m === 'fail-pre') process.exit(1);
`,
		"main.js": "console.log('lim main ran ' + process.env.INPUT_MODE);\n",
		"post.js": `const m = process.env.INPUT_MODE;
if (m === 'hang-post') { console.log('post hangs'); setTimeout(() => {}, 120000); }
if (m === 'fail-post') process.exit(1);
console.log('lim post ran ' + m);
`,
		"wrap/action.yml": "runs:\n  using: composite\n  steps:\n    - uses: acts/lim@v1\n      continue-on-error: true\n      with:\n        mode: fail-pre\n    - uses: acts/lim@v1\n      with:\n        mode: hang-pre\n",
	}
}

// TestRemoteNodeActionPreLimits: a JavaScript action's pre and post are
// bounded by its step's timeout-minutes, and its continue-on-error
// forgives their failure, as GitHub's runner applies both to every stage
// of the step; a pre that hangs in a step without timeout-minutes is
// stopped by the job's timeout. Before, pre and post ignored both: a
// hanging pre ran until the job's timeout, and a failing post with
// continue-on-error failed the job.
func TestRemoteNodeActionPreLimits(t *testing.T) {
	t.Parallel()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("no node on PATH")
	}
	h := newHarness(t)
	if _, err := h.forge.AddActionRepo("acts/lim", forgetest.Commit{Tags: []string{"v1"}, Files: limRepo()}); err != nil {
		t.Fatal(err)
	}
	o := Options{Config: jobrun.Config{Node: node, ActionCache: &jobrun.ActionCache{Dir: t.TempDir()}}}
	v := h.run(`
on: push
jobs:
  a:
    runs-on: forgeload
    steps:
      - run: echo first-step-ran
      - uses: acts/lim@v1
        timeout-minutes: 0.05
        continue-on-error: true
        with:
          mode: hang-pre
      - uses: acts/lim@v1
        continue-on-error: ${{ github.event_name == 'push' }}
        with:
          mode: fail-post
      - run: echo last-step-ran
`, o, selfActions(h))
	log := logText(v)
	if v.Result != runnerv1.Result_RESULT_SUCCESS {
		t.Fatalf("continue-on-error: %v, want SUCCESS; log:\n%s", v.Result, log)
	}
	wantInOrder(t, log, []string{
		"pre hangs", `::error::pre of step "Run acts/lim@v1" exceeded the step's timeout-minutes (0.05) and was stopped`,
		`pre of step "Run acts/lim@v1" failed, continuing: continue-on-error is set`,
		"first-step-ran", "lim main ran hang-pre", "lim main ran fail-post", "last-step-ran",
		`post of step "Run acts/lim@v1" failed, continuing: continue-on-error is set`, "lim post ran hang-pre",
	})

	v = h.run(`
on: push
jobs:
  a:
    runs-on: forgeload
    steps:
      - uses: acts/lim@v1
        timeout-minutes: 0.05
        with:
          mode: hang-post
`, o, selfActions(h))
	log = logText(v)
	if v.Result != runnerv1.Result_RESULT_FAILURE {
		t.Fatalf("a hanging post: %v, want FAILURE; log:\n%s", v.Result, log)
	}
	wantInOrder(t, log, []string{"lim main ran hang-post", "post hangs", `::error::post of step "Run acts/lim@v1" exceeded the step's timeout-minutes (0.05) and was stopped`})

	// Nested in a composite action: the nested step's continue-on-error
	// forgives its pre; the composite step's timeout-minutes bounds the
	// nested pres together, and its continue-on-error forgives them.
	v = h.run(`
on: push
jobs:
  a:
    runs-on: forgeload
    steps:
      - uses: acts/lim/wrap@v1
        timeout-minutes: 0.1
        continue-on-error: true
`, o, selfActions(h))
	log = logText(v)
	if v.Result != runnerv1.Result_RESULT_SUCCESS {
		t.Fatalf("nested: %v, want SUCCESS; log:\n%s", v.Result, log)
	}
	wantInOrder(t, log, []string{
		"Pre Run acts/lim/wrap@v1", `pre of step "Run acts/lim@v1" failed, continuing: continue-on-error is set`, "pre hangs",
		`::error::pre of step "Run acts/lim/wrap@v1" exceeded the step's timeout-minutes (0.1) and was stopped`,
		`pre of step "Run acts/lim/wrap@v1" failed, continuing: continue-on-error is set`,
		"lim main ran fail-pre", "lim main ran hang-pre", "lim post ran hang-pre", "lim post ran fail-pre",
	})

	start := time.Now()
	v = h.run(`
on: push
jobs:
  a:
    runs-on: forgeload
    timeout-minutes: 0.1
    steps:
      - uses: acts/lim@v1
        with:
          mode: hang-pre
`, o, selfActions(h))
	log = logText(v)
	if v.Result == runnerv1.Result_RESULT_SUCCESS || strings.Contains(log, "lim main ran") || time.Since(start) > 30*time.Second {
		t.Fatalf("a hanging pre under the job's timeout: %v after %v, want it stopped and no main; log:\n%s", v.Result, time.Since(start), log)
	}
	wantInOrder(t, log, []string{"pre hangs", "stopped: job timeout", "lim post ran hang-pre", "the job exceeded its time limit"})
}
