package run

import (
	"context"
	"testing"

	runnerv1 "gitea.dev/actions-proto-go/runner/v1"
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
