package run

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	runnerv1 "gitea.dev/actions-proto-go/runner/v1"

	"github.com/forgeload/forgeload/internal/pkg/forgetest"
)

const lfsAttributes = "*.bin filter=lfs diff=lfs merge=lfs -text\n"

// TestCheckoutLFS: lfs: true checks out an LFS-tracked file's content,
// downloaded with git-lfs from the forge's LFS server with the task
// token, and leaves the repository set up for Git LFS as actions/checkout
// does (the filter in .git/config, git-lfs's hooks); lfs: false leaves
// the pointer file. A .lfsconfig that names another LFS server is not
// followed: the token goes to the forge only. The token is nowhere in
// the log or in the repository the job gets. Before, lfs: true was
// refused.
func TestCheckoutLFS(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	var elsewhere atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		elsewhere.Add(1)
		http.Error(w, "not the forge", http.StatusForbidden)
	}))
	t.Cleanup(other.Close)
	content := []byte(strings.Repeat("0123456789abcdef", 4096))
	pointer, err := h.forge.AddLFSObject("owner/repo", content)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.forge.AddRepo("owner/repo", map[string]string{
		".gitattributes": lfsAttributes, "data/big.bin": pointer, "README": "hello\n",
		".lfsconfig": "[lfs]\n\turl = " + other.URL + "/elsewhere/info/lfs\n",
	}); err != nil {
		t.Fatal(err)
	}
	keep := t.TempDir()
	v := h.run(`
on: push
jobs:
  a:
    runs-on: forgeload
    steps:
      - uses: actions/checkout@v4
        with:
          lfs: true
      - run: |
          echo "lfs sha=$(sha256sum data/big.bin | cut -c1-64)"
          test -z "$(git status --porcelain)" && echo clean-tree
          echo "filter=$(git config --local filter.lfs.process) hook=$(test -x .git/hooks/pre-push && echo pre-push)"
          cp -a .git `+keep+`/git
      - uses: actions/checkout@v4
        with:
          path: plain
      - run: echo "plain=$(head -n 1 plain/data/big.bin)"
`, Options{})
	log := logText(v)
	if v.Result != runnerv1.Result_RESULT_SUCCESS {
		t.Fatalf("result = %v; log:\n%s", v.Result, log)
	}
	sum := sha256.Sum256(content)
	for _, want := range []string{
		"lfs sha=" + hex.EncodeToString(sum[:]), "clean-tree", "filter=git-lfs filter-process hook=pre-push",
		"plain=version https://git-lfs.github.com/spec/v1",
	} {
		wantContains(t, "log", log, want)
	}
	if n := elsewhere.Load(); n != 0 {
		t.Errorf("the LFS server the repository's .lfsconfig names got %d requests, want none", n)
	}
	authed := 0
	for _, r := range h.forge.LFSRequests() {
		if r.Authed && r.Status == http.StatusOK {
			authed++
		}
	}
	if authed == 0 {
		t.Errorf("the forge's LFS server saw no authenticated request: %+v", h.forge.LFSRequests())
	}
	wantNoToken(t, v, log, filepath.Join(keep, "git"))
}

// wantNoToken fails t when the task's token, or the Authorization header
// the checkout makes of it, is in log or in a file under repo.
func wantNoToken(t *testing.T, v forgetest.TaskView, log, repo string) {
	t.Helper()
	secrets := []string{v.Token, base64.StdEncoding.EncodeToString([]byte("x-access-token:" + v.Token))}
	for _, s := range secrets {
		if strings.Contains(log, s) {
			t.Errorf("the token is in the log:\n%s", log)
		}
	}
	files := 0
	err := filepath.WalkDir(repo, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		files++
		b, err := os.ReadFile(p)
		for _, s := range secrets {
			if strings.Contains(string(b), s) {
				t.Errorf("the token is in the job's repository, in %s", p)
			}
		}
		return err
	})
	if err != nil || files == 0 {
		t.Fatalf("read the job's repository %s: %d files, %v", repo, files, err)
	}
}

// TestCheckoutLFSMissingObject: an LFS object the forge does not have
// fails the checkout, naming the object and what to check, and the step
// after it does not run.
func TestCheckoutLFSMissingObject(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	pointer := "version https://git-lfs.github.com/spec/v1\noid sha256:" + strings.Repeat("ab", 32) + "\nsize 12\n"
	if _, err := h.forge.AddRepo("owner/repo", map[string]string{".gitattributes": lfsAttributes, "big.bin": pointer}); err != nil {
		t.Fatal(err)
	}
	v := h.run(`
on: push
jobs:
  a:
    runs-on: forgeload
    steps:
      - uses: actions/checkout@v4
        with:
          lfs: true
      - run: echo after-checkout
`, Options{})
	log := logText(v)
	if v.Result != runnerv1.Result_RESULT_FAILURE {
		t.Fatalf("result = %v, want failure; log:\n%s", v.Result, log)
	}
	for _, want := range []string{strings.Repeat("ab", 32), "[404] Not Found", "the Git LFS objects of", "could not all be downloaded", "is every LFS object of the commit pushed to the forge"} {
		wantContains(t, "log", log, want)
	}
	if strings.Contains(log, "after-checkout") {
		t.Fatalf("the step after the failed checkout ran:\n%s", log)
	}
}

// TestCheckoutLFSDeadline: git-lfs runs under the step's deadline: an LFS
// server that never answers fails the step when its timeout-minutes is
// up, and the run ends then. Before, git was killed but the git-lfs it
// had started was not, and held git's output open: the step waited for
// the server.
func TestCheckoutLFSDeadline(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	pointer, err := h.forge.AddLFSObject("owner/repo", []byte("held\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.forge.AddRepo("owner/repo", map[string]string{".gitattributes": lfsAttributes, "big.bin": pointer}); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(h.forge.URL())
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(u)
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "/info/lfs/") {
			select { // the LFS server hangs until the test ends
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	start := time.Now()
	v := h.run(`
on: push
jobs:
  a:
    runs-on: forgeload
    steps:
      - uses: actions/checkout@v4
        timeout-minutes: 0.05
        with:
          lfs: true
          github-server-url: `+srv.URL+`
`, Options{})
	log := logText(v)
	if v.Result != runnerv1.Result_RESULT_FAILURE {
		t.Fatalf("result = %v, want failure; log:\n%s", v.Result, log)
	}
	wantContains(t, "log", log, "exceeded timeout-minutes")
	if d := time.Since(start); d > 30*time.Second {
		t.Fatalf("the run took %v, want it to end soon after the step's 3 s timeout", d)
	}
}

// TestCheckoutLFSWithoutGitLFS: on a host without git-lfs, lfs: true fails
// the job when it starts, before any step runs, saying to install it.
// (Not parallel: it sets PATH, to a directory with git but no git-lfs.)
func TestCheckoutLFSWithoutGitLFS(t *testing.T) {
	bin := t.TempDir()
	for _, name := range []string{"git", "bash", "sh"} {
		p, err := exec.LookPath(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(p, filepath.Join(bin, name)); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", bin)
	h := newHarness(t)
	if _, err := h.forge.AddRepo("owner/repo", map[string]string{"README": "hello\n"}); err != nil {
		t.Fatal(err)
	}
	v := h.run(`
on: push
jobs:
  a:
    runs-on: forgeload
    steps:
      - run: echo first-step
      - uses: actions/checkout@v4
        with:
          lfs: true
`, Options{})
	log := logText(v)
	if v.Result != runnerv1.Result_RESULT_FAILURE {
		t.Fatalf("result = %v, want failure; log:\n%s", v.Result, log)
	}
	for _, want := range []string{"with.lfs: true needs git-lfs on the runner host", "apt-get install git-lfs", "none of its steps ran"} {
		wantContains(t, "log", log, want)
	}
	if strings.Contains(log, "first-step") {
		t.Fatalf("a step ran before the refusal:\n%s", log)
	}
}
