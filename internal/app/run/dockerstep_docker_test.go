package run

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	runnerv1 "gitea.dev/actions-proto-go/runner/v1"

	"github.com/forgeload/forgeload/internal/pkg/forgetest"
	"github.com/forgeload/forgeload/internal/pkg/jobrun"
)

// TestDockerStep: uses: docker://image runs the image once with
// with.entrypoint and with.args (quoted words kept whole), its other
// inputs as INPUT_*, in the workspace, writing GITHUB_OUTPUT and files the
// next step reads; a non-zero exit fails the step. Before, docker:// steps
// were refused.
func TestDockerStep(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	opts, eng, img := dockerOptions(t)
	v := h.run(`
on: push
jobs:
  a:
    runs-on: forgeload
    steps:
      - id: d
        uses: docker://`+img+`
        with:
          entrypoint: /bin/sh
          args: -c "echo hello from $INPUT_WHO in $(pwd); echo out=from-docker >> $GITHUB_OUTPUT; echo made > made.txt"
          who: the container
      - run: echo "next sees $(cat made.txt) ${{ steps.d.outputs.out }}"
      - uses: docker://`+img+`
        with:
          entrypoint: /bin/sh
          args: -c 'exit 3'
`, opts)
	log := logText(v)
	if v.Result != runnerv1.Result_RESULT_FAILURE || v.Steps[0].Result != runnerv1.Result_RESULT_SUCCESS || v.Steps[2].Result != runnerv1.Result_RESULT_FAILURE {
		t.Fatalf("result %v, steps %+v; want the last step to fail; log:\n%s", v.Result, v.Steps, log)
	}
	wantContains(t, "log", log, "hello from the container in /")
	wantContains(t, "log", log, "/workspace")
	wantContains(t, "log", log, "next sees made from-docker")
	wantContains(t, "log", log, "Container exited with code 3.")
	// The step containers are removed with the job.
	if objs, err := eng.Objects(context.Background(), ""); err != nil || len(objs) > 0 {
		t.Fatalf("left after the job: %v %v", objs, err)
	}
}

// TestDockerAction: a Docker action (runs.using: docker, image:
// docker://...) from the forge runs its image with runs.args and runs.env,
// in which expressions see its inputs, and the inputs as INPUT_*.
func TestDockerAction(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	opts, _, img := dockerOptions(t)
	if _, err := h.forge.AddActionRepo("acts/dock", forgetest.Commit{Tags: []string{"v1"}, Files: map[string]string{"action.yml": `inputs:
  who:
    default: nobody
runs:
  using: docker
  image: docker://` + img + `
  entrypoint: /bin/sh
  args:
    - -c
    - echo "docker action for ${{ inputs.who }} env=$GREETING input=$INPUT_WHO"
  env:
    GREETING: hi-${{ inputs.who }}
`}}); err != nil {
		t.Fatal(err)
	}
	opts.ActionCache = &jobrun.ActionCache{Dir: t.TempDir()}
	v := h.run("on: push\njobs:\n  a:\n    runs-on: forgeload\n    steps:\n      - uses: acts/dock@v1\n        with:\n          who: you\n", opts, selfActions(h))
	log := logText(v)
	if v.Result != runnerv1.Result_RESULT_SUCCESS {
		t.Fatalf("result %v; log:\n%s", v.Result, log)
	}
	wantContains(t, "log", log, "docker action for you env=hi-you input=you")
}

// TestDockerStepOutputIsLive: a docker:// step's output reaches the forge
// while the container runs: the test sees its first line, and only then
// lets it end (through a file in the workspace). Before, the output was
// copied when the container exited, so the line never came while it ran.
func TestDockerStepOutputIsLive(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	opts, _, img := dockerOptions(t)
	opts.ReportInterval = 100 * time.Millisecond
	task := h.fetch(forgetest.Job{Payload: []byte(`on: push
jobs:
  a:
    runs-on: forgeload
    steps:
      - uses: docker://` + img + `
        with:
          entrypoint: /bin/sh
          args: -c 'echo "live-line in $GITHUB_WORKSPACE"; while ! test -e "$GITHUB_WORKSPACE/release"; do sleep 0.05; done; echo after-release'
`)})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- h.runner(opts).Run(ctx, task) }()
	lineRe := regexp.MustCompile(`live-line in (/\S+)`)
	var ws string
	for deadline := time.Now().Add(30 * time.Second); ws == "" && time.Now().Before(deadline); {
		if m := lineRe.FindStringSubmatch(logText(h.forge.Task(task.GetId()))); m != nil {
			ws = m[1]
			break
		}
		select {
		case err := <-done:
			t.Fatalf("the job ended (%v) before the test let the container end; log:\n%s", err, logText(h.forge.Task(task.GetId())))
		case <-time.After(20 * time.Millisecond):
		}
	}
	if ws == "" {
		cancel()
		<-done
		t.Fatalf("the container's first line did not reach the forge while it ran; log:\n%s", logText(h.forge.Task(task.GetId())))
	}
	if err := os.WriteFile(filepath.Join(ws, "release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	v := h.forge.Task(task.GetId())
	log := logText(v)
	if v.Result != runnerv1.Result_RESULT_SUCCESS {
		t.Fatalf("result %v; log:\n%s", v.Result, log)
	}
	wantContains(t, "log", log, "after-release")
}

// TestDockerStepCancelStopsItsContainer: a cancelled docker:// step's
// container is removed when the step ends, so the always() step after it
// finds it stopped (its heartbeat file no longer changes). Before, it ran
// on until the job's end removed every container, beside the cleanup
// steps and posts.
func TestDockerStepCancelStopsItsContainer(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	opts, _, img := dockerOptions(t)
	opts.ReportInterval = 100 * time.Millisecond
	task := h.fetch(forgetest.Job{Payload: []byte(`on: push
jobs:
  a:
    runs-on: forgeload
    steps:
      - uses: docker://` + img + `
        with:
          entrypoint: /bin/sh
          args: -c 'i=0; while true; do i=$((i+1)); echo $i > "$GITHUB_WORKSPACE/beat"; if [ $i = 3 ]; then echo "beating-$((6*7))"; fi; sleep 0.05; done'
      - if: always()
        run: |
          a=$(cat beat); sleep 1; b=$(cat beat)
          if [ -z "$a" ]; then echo no-beat; elif [ "$a" = "$b" ]; then echo container-stopped; else echo "container-still-running $a $b"; fi
`)})
	v := h.runCancelledAt(task, opts, "beating-42")
	log := logText(v)
	if v.Result != runnerv1.Result_RESULT_CANCELLED {
		t.Fatalf("result %v, want CANCELLED; log:\n%s", v.Result, log)
	}
	wantContains(t, "log", log, "container-stopped")
}
