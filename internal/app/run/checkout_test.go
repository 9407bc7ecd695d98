package run

import (
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	runnerv1 "gitea.dev/actions-proto-go/runner/v1"

	"github.com/forgeload/forgeload/internal/pkg/forgetest"
)

// gitServer serves a bare repository over smart HTTP with git http-backend
// and records the Authorization headers it saw. It returns the server URL,
// the repository path ("owner/name") and the commit to check out.
func gitServer(t *testing.T) (url, repo, sha string, auths *atomic.Value) {
	t.Helper()
	backend := filepath.Join(gitExecPath(t), "git-http-backend")
	root := t.TempDir()
	work := t.TempDir()
	git := func(dir string, args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git(work, "init", "-q", "-b", "main", ".")
	if err := os.MkdirAll(filepath.Join(work, "perf"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "perf", "api.yaml"), []byte("rate: 10\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(work, "add", ".")
	git(work, "commit", "-q", "-m", "first")
	sha = git(work, "rev-parse", "HEAD")
	if err := os.WriteFile(filepath.Join(work, "later.txt"), []byte("later\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(work, "add", ".")
	git(work, "commit", "-q", "-m", "second")
	bare := filepath.Join(root, "owner", "repo.git")
	git(root, "clone", "-q", "--bare", work, bare)
	git(bare, "config", "http.receivepack", "false")
	git(bare, "config", "uploadpack.allowReachableSHA1InWant", "true")

	auths = &atomic.Value{}
	auths.Store("")
	h := &cgi.Handler{
		Path: backend,
		Env:  []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1"},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a := r.Header.Get("Authorization"); a != "" {
			auths.Store(a)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, "owner/repo", sha, auths
}

func gitExecPath(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Skipf("git is not installed: %v", err)
	}
	return strings.TrimSpace(string(out))
}

func TestCheckoutFromHTTPRepo(t *testing.T) {
	t.Parallel()
	url, repo, sha, auths := gitServer(t)
	h := newHarness(t)
	v := h.run(`
on: push
jobs:
  a:
    runs-on: forgeload
    steps:
      - uses: actions/checkout@v4
      - run: |
          cat perf/api.yaml
          test ! -e later.txt && echo "pinned to the task sha"
          git rev-parse HEAD
      - uses: actions/checkout@v4
        with:
          path: sub
          ref: main
          fetch-depth: 0
      - run: test -e sub/later.txt && git -C sub rev-list --count HEAD
`, Options{}, func(j *forgetest.Job) {
		j.Context = map[string]any{"server_url": url + "/", "repository": repo, "sha": sha, "ref": "refs/heads/main", "token": "task-token-xyz"}
		j.Secrets = map[string]string{"GITHUB_TOKEN": "task-token-xyz"}
	})
	log := logText(v)
	if v.Result != runnerv1.Result_RESULT_SUCCESS {
		t.Fatalf("result = %v; log:\n%s", v.Result, log)
	}
	wantContains(t, "log", log, "rate: 10")
	wantContains(t, "log", log, "pinned to the task sha")
	wantContains(t, "log", log, sha)
	if got := strings.TrimSpace(stepLog(t, v, 3)[len(stepLog(t, v, 3))-1]); got != "2" {
		t.Fatalf("full-history checkout has %q commits, want 2", got)
	}
	a, _ := auths.Load().(string)
	if !strings.HasPrefix(a, "Basic ") && !strings.HasPrefix(strings.ToLower(a), "basic ") {
		t.Fatalf("git server saw Authorization %q, want the task token as basic auth", a)
	}
	if strings.Contains(log, "task-token-xyz") {
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
