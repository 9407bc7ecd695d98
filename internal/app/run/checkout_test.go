package run

import (
	"fmt"
	"io/fs"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	runnerv1 "gitea.dev/actions-proto-go/runner/v1"

	"github.com/forgeload/forgeload/internal/pkg/container"
	"github.com/forgeload/forgeload/internal/pkg/container/containertest"
	"github.com/forgeload/forgeload/internal/pkg/jobrun"
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

	// An input of actions/checkout that forgeload would ignore fails the
	// step before anything is fetched.
	v = h.run("on: push\njobs:\n  a:\n    runs-on: x\n    steps:\n      - uses: actions/checkout@v4\n        with:\n          sparse-checkout: src\n      - run: echo after\n", Options{})
	if v.Result != runnerv1.Result_RESULT_FAILURE {
		t.Fatalf("result = %v, want FAILURE", v.Result)
	}
	// Refused when the job starts, before any step runs.
	wantContains(t, "log", logText(v), `::error::step 1 "Run actions/checkout@v4" uses "actions/checkout@v4": actions/checkout: with.sparse-checkout: src is not supported`)
	if strings.Contains(logText(v), "Checking out") || strings.Contains(logText(v), "\nafter") {
		t.Fatalf("the checkout went ahead, or the job did, despite the refused input:\n%s", logText(v))
	}
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

// A symlink a job plants at, or on the way to, the checkout's path: (or a
// .git of its own making) must not make the daemon's git write outside
// the workspace, delete what is there, or run the job's hooks.
func TestCheckoutStaysInWorkspace(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, plant, path string
		want              string // in the checkout's error; "" when it succeeds
	}{
		{"path is a link out", `ln -s "$HOST/decoy" sub`, "sub", "with.path \"sub\": create workspace/sub in the task directory"},
		{"a directory on the way is a link out", `ln -s "$HOST/decoy" a`, "a/b", "with.path \"a/b\""},
		{"path is a link inside", `mkdir real && ln -s real sub`, "sub", "workspace/sub in the task directory is a symlink"},
		{".git is a link to a host repository", `mkdir sub && ln -s "$HOST/repo/.git" sub/.git`, "sub", ""},
		{".git is a gitlink file", `mkdir sub && echo "gitdir: $HOST/repo/.git" > sub/.git`, "sub", ""},
		// git checks a tree out through no symlink it finds in the work
		// tree, and git clean removes links without following them.
		{"a directory of the tree is a link out", `mkdir sub && ln -s "$HOST/decoy" sub/dir`, "sub", ""},
		{"a file of the tree is a link to a host file", `mkdir sub && ln -s "$HOST/decoy/keep.txt" sub/README`, "sub", ""},
		{"an untracked link out", `mkdir sub && ln -s "$HOST/decoy" sub/untracked && ln -s "$HOST/decoy/keep.txt" sub/untracked-file`, "sub", ""},
		{".git has a hook", `git init -q sub && git -C sub remote add origin http://127.0.0.1:1/x.git && printf '#!/bin/sh\ntouch "%s/hooked"\n' "$HOST" > sub/.git/hooks/post-checkout && chmod +x sub/.git/hooks/post-checkout`, "sub", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			host := t.TempDir()
			decoy := filepath.Join(host, "decoy")
			repo := filepath.Join(host, "repo")
			for _, cmd := range [][]string{{"mkdir", decoy}, {"git", "init", "-q", repo}, {"git", "-C", repo, "remote", "add", "origin", "http://127.0.0.1:1/host.git"}} {
				if out, err := exec.Command(cmd[0], cmd[1:]...).CombinedOutput(); err != nil {
					t.Fatalf("%v: %v\n%s", cmd, err, out)
				}
			}
			for name, text := range map[string]string{"decoy/.runner": "{\"token\": \"host\"}\n", "decoy/keep.txt": "keep\n"} {
				if err := os.WriteFile(filepath.Join(host, name), []byte(text), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			before := snapshot(t, host)
			h := newHarness(t)
			if _, err := h.forge.AddRepo("owner/repo", map[string]string{"README": "hello\n", ".runner": "from the repo\n", "dir/inner": "inner\n", "dir/.runner": "from the repo\n"}); err != nil {
				t.Fatal(err)
			}
			v := h.run(fmt.Sprintf(`
on: push
jobs:
  a:
    runs-on: forgeload
    steps:
      - run: |
          HOST=%s
          %s
      - uses: actions/checkout@v4
        with:
          path: %s
      - run: cat %s/README %s/dir/inner
`, host, c.plant, c.path, c.path, c.path), Options{})
			log := logText(v)
			if after := snapshot(t, host); !maps.Equal(before, after) {
				t.Fatalf("the checkout changed the host directory: %s\nlog:\n%s", changed(before, after), log)
			}
			if c.want == "" {
				if v.Result != runnerv1.Result_RESULT_SUCCESS {
					t.Fatalf("result = %v, want success; log:\n%s", v.Result, log)
				}
				wantContains(t, "log", log, "\nhello\ninner")
				return
			}
			if v.Result != runnerv1.Result_RESULT_FAILURE || v.Steps[1].Result != runnerv1.Result_RESULT_FAILURE {
				t.Fatalf("result = %v, want the checkout to fail; log:\n%s", v.Result, log)
			}
			wantContains(t, "checkout's log", strings.Join(stepLog(t, v, 1), "\n"), c.want)
		})
	}
}

// changed names the paths that differ between two snapshots.
func changed(before, after map[string]string) string {
	var out []string
	for k, v := range before {
		if w, ok := after[k]; !ok {
			out = append(out, "removed "+k)
		} else if w != v {
			out = append(out, fmt.Sprintf("changed %s to %q", k, w))
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			out = append(out, "added "+k)
		}
	}
	sort.Strings(out)
	if len(out) > 20 {
		out = append(out[:20], fmt.Sprintf("and %d more", len(out)-20))
	}
	return strings.Join(out, "\n")
}

// snapshot is every path under dir with its content (files) or target
// (links); git's index, which git rewrites on any status, is left out.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			m[rel] = "-> " + l
		case d.Type().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			m[rel] = string(b)
		default:
			m[rel] = "dir"
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// gatedForge is a proxy in front of the fake forge that runs gate once,
// on the first git request, before it passes any on: the checkout's git
// has made its repository then and waits for the fetch. It returns the
// URL to give as with.github-server-url.
func gatedForge(t *testing.T, forge string, gate func()) string {
	t.Helper()
	u, err := url.Parse(forge)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(u)
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		once.Do(gate)
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// hostileGitConfig is what a job's process writes into the workspace's
// .git while the checkout runs: a filter driver that runs on every file
// checked out, and an include of a host file that declares another.
func hostileGitConfig(marker, include string) string {
	return fmt.Sprintf("[filter \"pwn\"]\n\tsmudge = \"touch %s; cat\"\n[include]\n\tpath = %s\n", marker, include)
}

// The daemon's git must not read a repository directory the job can
// write while it runs: a config a job's process plants in the
// workspace's .git between git init and git checkout (a filter driver, an
// include) would make git run the job's command on the host, as the
// daemon. Here the plant is made while the forge holds the fetch, so the
// race is won every time; the checkout still works, and a later step
// sees the repository.
func TestCheckoutGitDirOutOfJobsReach(t *testing.T) {
	t.Parallel()
	host := t.TempDir()
	marker := filepath.Join(host, "ran-on-the-host")
	include := filepath.Join(host, "evil.config")
	if err := os.WriteFile(include, []byte(fmt.Sprintf("[filter \"inc\"]\n\tsmudge = \"touch %s-included; cat\"\n", marker)), 0o644); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t)
	sha, err := h.forge.AddRepo("owner/repo", map[string]string{"README": "hello\n", "dir/inner": "inner\n"})
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	var planted atomic.Bool
	server := gatedForge(t, h.forge.URL(), func() {
		ws, _ := filepath.Glob(filepath.Join(work, jobrun.TaskDirPrefix+"*", "workspace"))
		if len(ws) != 1 {
			t.Errorf("workspaces in %s: %v, want one", work, ws)
			return
		}
		git := filepath.Join(ws[0], ".git")
		if err := os.MkdirAll(filepath.Join(git, "info"), 0o755); err != nil {
			t.Error(err)
			return
		}
		f, err := os.OpenFile(filepath.Join(git, "config"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err == nil {
			_, err = f.WriteString(hostileGitConfig(marker, include))
			_ = f.Close()
		}
		if err == nil {
			err = os.WriteFile(filepath.Join(git, "info", "attributes"), []byte("README filter=pwn\ndir/* filter=inc\n"), 0o644)
		}
		if err != nil {
			t.Error(err)
		}
		planted.Store(true)
	})
	v := h.run(fmt.Sprintf(`
on: push
jobs:
  a:
    runs-on: forgeload
    steps:
      - uses: actions/checkout@v4
        with:
          github-server-url: %s
      - run: |
          echo "head=$(git rev-parse HEAD)"
          grep -c pwn .git/config || echo "no planted config"
          git diff-index --quiet HEAD && echo "index clean"
          test -z "$(git status --porcelain)" && echo "clean tree"
          cat README
`, server), Options{Config: jobrun.Config{WorkDir: work}})
	log := logText(v)
	if !planted.Load() {
		t.Fatalf("the forge saw no git request; log:\n%s", log)
	}
	for _, m := range []string{marker, marker + "-included"} {
		if _, err := os.Stat(m); err == nil {
			t.Fatalf("the job's command ran on the host (%s exists); log:\n%s", m, log)
		}
	}
	if v.Result != runnerv1.Result_RESULT_SUCCESS {
		t.Fatalf("result = %v, want success; log:\n%s", v.Result, log)
	}
	for _, w := range []string{"head=" + sha, "no planted config", "index clean", "clean tree", "\nhello"} {
		wantContains(t, "log", log, w)
	}
	// The private repository directory went with the task directory.
	if ents, err := os.ReadDir(work); err != nil || len(ents) != 0 {
		t.Fatalf("the work dir after the job: %v, %v; want it empty", ents, err)
	}
}

// A container: job mounts its task directory read-write, and a process it
// leaves running in the container keeps planting a hostile config in the
// workspace's .git while the next step, the checkout, runs git on the
// host. The forge holds the fetch until the plant is in and the process
// has stopped, so without the checkout's private repository directory the
// host-side git runs the job's filter every time; with it, the command
// never runs, and the job still sees the repository.
func TestContainerJobCannotPlantCheckoutGitConfig(t *testing.T) {
	t.Parallel()
	img := containertest.Image(t)
	eng := containertest.Engine(t)
	host := t.TempDir()
	marker := filepath.Join(host, "ran-on-the-host")
	h := newHarness(t)
	sha, err := h.forge.AddRepo("owner/repo", map[string]string{"README": "hello\n"})
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	server := gatedForge(t, h.forge.URL(), func() {
		ws, _ := filepath.Glob(filepath.Join(work, jobrun.TaskDirPrefix+"*", "workspace"))
		if len(ws) != 1 {
			t.Errorf("workspaces in %s: %v, want one", work, ws)
			return
		}
		// Polling with a deadline: the job's process is in another
		// container, with nothing to wait on but the files it writes.
		wait := func(what string, done func() bool) bool {
			for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				if done() {
					return true
				}
			}
			t.Errorf("the job's process did not %s within 30s", what)
			return false
		}
		if !wait("plant its config", func() bool {
			b, _ := os.ReadFile(filepath.Join(ws[0], ".git", "config"))
			return strings.Contains(string(b), "pwn")
		}) {
			return
		}
		if err := os.WriteFile(filepath.Join(ws[0], ".stop"), nil, 0o644); err != nil {
			t.Error(err)
			return
		}
		wait("stop", func() bool {
			_, err := os.Stat(filepath.Join(ws[0], ".stopped"))
			return err == nil
		})
	})
	loop := fmt.Sprintf(`while [ ! -e .stop ]; do
  if ! grep -q pwn .git/config 2>/dev/null; then
    mkdir -p .git/info
    printf '%%s' '%s' >> .git/config
    echo '* filter=pwn' > .git/info/attributes
  fi
done
touch .stopped`, hostileGitConfig(marker, filepath.Join(host, "absent")))
	v := h.run(fmt.Sprintf(`
on: push
jobs:
  a:
    runs-on: forgeload
    container:
      image: %s
    steps:
      - run: |
          cat > "$RUNNER_TEMP/plant.sh" <<'PLANT'
          %s
          PLANT
          sh "$RUNNER_TEMP/plant.sh" </dev/null >/dev/null 2>&1 &
      - uses: actions/checkout@v4
        with:
          github-server-url: %s
      - run: |
          echo "head=$(cat .git/HEAD) at $(cat .git/refs/heads/main)"
          grep -c pwn .git/config || echo "no planted config"
          cat README
`, img, strings.ReplaceAll(loop, "\n", "\n          "), server), Options{Config: jobrun.Config{WorkDir: work, Containers: eng, PullPolicy: container.PullNever}})
	log := logText(v)
	if _, err := os.Stat(marker); err == nil {
		t.Fatalf("the job's command ran on the host (%s exists); log:\n%s", marker, log)
	}
	if v.Result != runnerv1.Result_RESULT_SUCCESS {
		t.Fatalf("result = %v, want success; log:\n%s", v.Result, log)
	}
	for _, w := range []string{"head=ref: refs/heads/main at " + sha, "no planted config", "\nhello"} {
		wantContains(t, "log", log, w)
	}
}

// The daemon's git never runs in, or on, a directory a job can write: not
// its working directory, its repository or its work tree. git resolves
// its work tree by path, so a job that swaps a directory of its workspace
// for a symlink at the right moment would otherwise make it check out
// into, or clean, a directory elsewhere on the host. A git on PATH that
// records where it runs shows it. (Not parallel: it sets PATH.)
func TestCheckoutGitRunsOutsideTaskDir(t *testing.T) {
	real, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	record := filepath.Join(bin, "record")
	wrapper := fmt.Sprintf("#!/bin/sh\nprintf '%%s\\t%%s\\t%%s\\n' \"$(pwd -P)\" \"$GIT_DIR\" \"$GIT_WORK_TREE\" >> %s\nexec %s \"$@\"\n", record, real)
	if err := os.WriteFile(filepath.Join(bin, "git"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	h := newHarness(t)
	if _, err := h.forge.AddRepo("owner/repo", map[string]string{"README": "hello\n"}); err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	v := h.run(`
on: push
jobs:
  a:
    runs-on: forgeload
    steps:
      - uses: actions/checkout@v4
        with:
          clean: false
      - uses: actions/checkout@v4
`, Options{Config: jobrun.Config{WorkDir: work}})
	log := logText(v)
	if v.Result != runnerv1.Result_RESULT_SUCCESS {
		t.Fatalf("result = %v, want success; log:\n%s", v.Result, log)
	}
	b, err := os.ReadFile(record)
	if err != nil {
		t.Fatalf("git ran not at all: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) < 8 {
		t.Fatalf("git ran %d times, want one per command of two checkouts:\n%s", len(lines), b)
	}
	for _, l := range lines {
		f := strings.Split(l, "\t")
		cwd := f[0]
		for _, p := range f {
			if p != "" && !filepath.IsAbs(p) {
				p = filepath.Join(cwd, p)
			}
			rel, err := filepath.Rel(work, p)
			if p == "" || err != nil || !strings.HasPrefix(rel, jobrun.TaskDirPrefix) {
				continue
			}
			if task, _, _ := strings.Cut(rel, string(filepath.Separator)); !strings.Contains(task, "-git-") {
				t.Errorf("git ran with %s in the task directory %s (cwd, GIT_DIR, GIT_WORK_TREE: %q)", p, task, f)
			}
		}
	}
}
