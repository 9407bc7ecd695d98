package run

import (
	"strings"
	"testing"
	"time"

	runnerv1 "gitea.dev/actions-proto-go/runner/v1"

	"github.com/forgeload/forgeload/internal/pkg/forgetest"
	"github.com/forgeload/forgeload/internal/pkg/jobrun"
)

// prePostRepo is a repository of two Docker actions with a
// pre-entrypoint and a post-entrypoint. The root one is built from its
// Dockerfile, whose three scripts say which stage runs and pass state
// along (main waits for a cancel when asked to); its pre-if is false when
// the job's env says SKIP_PRE=yes. img/ runs the image img with
// args that a shell runs as a script and echo (its pre-entrypoint) prints.
func prePostRepo(t *testing.T, img string) map[string]string {
	return map[string]string{
		"action.yml": `inputs:
  who: {default: nobody}
  wait: {default: no}
runs:
  using: docker
  image: Dockerfile
  pre-entrypoint: /pre.sh
  pre-if: env.SKIP_PRE != 'yes'
  entrypoint: /main.sh
  post-entrypoint: /post.sh
  args:
    - ${{ inputs.who }}
`,
		"Dockerfile": "FROM " + img + "\nCOPY nonce pre.sh main.sh post.sh /\nRUN chmod 755 /pre.sh /main.sh /post.sh\n",
		"pre.sh":     "#!/bin/sh\necho \"docker pre for $1 state=[$STATE_p] secret=$SECRET_SEEN\"\necho \"p=from-pre-$1\" >> \"$GITHUB_STATE\"\n",
		"main.sh": "#!/bin/sh\necho \"docker main for $1 sees [$STATE_p]\"\necho m=from-main >> \"$GITHUB_STATE\"\n" +
			"if [ \"$INPUT_WAIT\" = yes ]; then echo 'main waits'; sleep 120; fi\n",
		"post.sh":         "#!/bin/sh\necho \"docker post for $1 sees [$STATE_p] [$STATE_m]\"\n",
		"nonce":           nonce(t),
		"wrap/action.yml": "runs:\n  using: composite\n  steps:\n    - uses: acts/dpp/img@v1\n",
		"img/action.yml": `runs:
  using: docker
  image: docker://` + img + `
  pre-entrypoint: /bin/echo
  entrypoint: /bin/sh
  post-entrypoint: /bin/sh
  args:
    - -c
    - 'if [ -n "$STATE_m" ]; then echo "image post sees $STATE_m"; else echo image-main-ran; echo m=image-main >> "$GITHUB_STATE"; fi'
`,
	}
}

// TestDockerActionPrePost: a Docker action from the forge with a
// pre-entrypoint and a post-entrypoint runs the pre when the job starts,
// before its first step (a Dockerfile action's image built first), in a
// container of the same image with the same args, and the post when the
// job ends, after its last step; what each writes to GITHUB_STATE reaches
// the next as STATE_*; the secrets they print are masked. A pre-if that
// is false skips the pre, and main and post still run. Nested in a
// composite action from the forge, the pre runs when the job starts, as
// the composite step's pre. Before, such an action was refused when the
// job started.
func TestDockerActionPrePost(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	opts, _, img := dockerOptions(t)
	if _, err := h.forge.AddActionRepo("acts/dpp", forgetest.Commit{Tags: []string{"v1"}, Files: prePostRepo(t, img)}); err != nil {
		t.Fatal(err)
	}
	opts.ActionCache = &jobrun.ActionCache{Dir: t.TempDir()}
	job := func(env, more string) string {
		return `on: push
jobs:
  a:
    runs-on: forgeload
    env:
      SKIP_PRE: ` + env + `
      SECRET_SEEN: ${{ secrets.S }}
    steps:
      - run: echo first-step-ran
      - uses: acts/dpp@v1
        with:
          who: you
      - uses: acts/dpp/img@v1
      - run: echo last-step-ran
` + more
	}
	secret := func(j *forgetest.Job) { j.Secrets = map[string]string{"S": "pre-secret-value"} }
	v := h.run(job("no", ""), opts, selfActions(h), secret)
	log := logText(v)
	removeBuiltImages(t, log, imageID(t, img))
	if v.Result != runnerv1.Result_RESULT_SUCCESS {
		t.Fatalf("result %v; log:\n%s", v.Result, log)
	}
	wantInOrder(t, log, []string{
		"Pre Run acts/dpp@v1", "building forgeload-action:", "docker pre for you state=[] secret=***",
		"Pre Run acts/dpp/img@v1", "-c if [ -n",
		"first-step-ran",
		"docker main for you sees [from-pre-you]",
		"image-main-ran",
		"last-step-ran",
		"Post Run acts/dpp/img@v1", "image post sees image-main",
		"Post Run acts/dpp@v1", "docker post for you sees [from-pre-you] [from-main]",
	})
	if strings.Contains(log, "pre-secret-value") {
		t.Errorf("the pre's output is not masked:\n%s", log)
	}
	if n := strings.Count(log, "building forgeload-action:"); n != 1 {
		t.Errorf("the image was built %d times, want once (by the pre, reused by main and post):\n%s", n, log)
	}

	// Nested in a composite action from the forge, the pre runs when the
	// job starts too, as the composite step's pre.
	v = h.run(job("yes", "      - uses: acts/dpp/wrap@v1\n"), opts, selfActions(h), secret)
	log = logText(v)
	if v.Result != runnerv1.Result_RESULT_SUCCESS || strings.Contains(log, "docker pre for") || strings.Contains(log, "Pre Run acts/dpp@v1") {
		t.Fatalf("pre-if false: %v, want SUCCESS with no pre run; log:\n%s", v.Result, log)
	}
	wantInOrder(t, log, []string{
		"Pre Run acts/dpp/wrap@v1", "Pre Run acts/dpp/img@v1", "-c if [ -n",
		"first-step-ran", "docker main for you sees []", "last-step-ran", "image-main-ran",
		// The skipped pre registered no post: its main did, after the
		// pres, so its post is the first of the posts, run last first.
		"Post Run acts/dpp@v1", "docker post for you sees [] [from-main]",
		"Post Run acts/dpp/img@v1", "image post sees image-main",
		"Post Run acts/dpp/img@v1", "image post sees image-main",
	})
}

// TestDockerActionPostOnCancel: a job cancelled while a Docker action's
// main runs still runs the action's post, with the state its pre and
// main wrote, as the always() steps run after a cancel; no later step
// runs.
func TestDockerActionPostOnCancel(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	opts, _, img := dockerOptions(t)
	if _, err := h.forge.AddActionRepo("acts/dpp", forgetest.Commit{Tags: []string{"v1"}, Files: prePostRepo(t, img)}); err != nil {
		t.Fatal(err)
	}
	opts.ActionCache = &jobrun.ActionCache{Dir: t.TempDir()}
	opts.ReportInterval = 200 * time.Millisecond
	job := forgetest.Job{Payload: []byte(`on: push
jobs:
  a:
    runs-on: forgeload
    steps:
      - uses: acts/dpp@v1
        with:
          who: waiter
          wait: yes
      - run: echo not this
`)}
	selfActions(h)(&job)
	task := h.fetch(job)
	v := h.runCancelledAt(task, opts, "main waits")
	log := logText(v)
	removeBuiltImages(t, log, imageID(t, img))
	if v.Result != runnerv1.Result_RESULT_CANCELLED || strings.Contains(log, "not this") {
		t.Fatalf("result %v, want CANCELLED with no later step; log:\n%s", v.Result, log)
	}
	wantInOrder(t, log, []string{"docker pre for waiter", "main waits", "docker post for waiter sees [from-pre-waiter] [from-main]"})
}
