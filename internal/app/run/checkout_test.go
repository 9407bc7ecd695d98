package run

import (
	"strings"
	"testing"

	runnerv1 "gitea.dev/actions-proto-go/runner/v1"
)

// TestCheckoutFromForge checks out a repository the fake forge serves over
// smart HTTP (git http-backend), authenticated with the task token.
func TestCheckoutFromForge(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	sha, err := h.forge.AddRepo("owner/repo", map[string]string{"perf/api.yaml": "rate: 10\n", "README": "hello\n"})
	if err != nil {
		t.Fatal(err)
	}
	v := h.run(`
on: push
jobs:
  a:
    runs-on: forgeload
    steps:
      - uses: actions/checkout@v4
      - run: |
          cat perf/api.yaml
          git rev-parse HEAD
      - uses: actions/checkout@v4
        with:
          path: sub
          ref: main
          fetch-depth: 0
      - run: test -e sub/README && echo "sub checkout ok"
`, Options{})
	log := logText(v)
	if v.Result != runnerv1.Result_RESULT_SUCCESS {
		t.Fatalf("result = %v; log:\n%s", v.Result, log)
	}
	wantContains(t, "log", log, "rate: 10")
	wantContains(t, "log", log, sha)
	wantContains(t, "log", log, "sub checkout ok")
	auths := h.forge.GitAuths()
	if len(auths) == 0 {
		t.Fatal("the forge saw no authenticated git request")
	}
	if strings.Contains(log, auths[0]) {
		t.Fatalf("the task token leaked into the log:\n%s", log)
	}
}

func TestCheckoutRejectsUnknownInput(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	v := h.run("on: push\njobs:\n  a:\n    runs-on: x\n    steps:\n      - uses: actions/checkout@v4\n        with:\n          depth: 1\n", Options{})
	if v.Result != runnerv1.Result_RESULT_FAILURE {
		t.Fatalf("result = %v, want FAILURE", v.Result)
	}
	wantContains(t, "log", logText(v), "with.depth is not an input of actions/checkout")
}

func TestCheckoutWithoutAccessFails(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	if _, err := h.forge.AddRepo("owner/private", map[string]string{"x": "y"}); err != nil {
		t.Fatal(err)
	}
	v := h.run("on: push\njobs:\n  a:\n    runs-on: x\n    steps:\n      - uses: actions/checkout@v4\n        with:\n          token: not-a-task-token\n", Options{})
	if v.Result != runnerv1.Result_RESULT_FAILURE {
		t.Fatalf("result = %v, want FAILURE", v.Result)
	}
	wantContains(t, "log", logText(v), "allowed to read it")
}
