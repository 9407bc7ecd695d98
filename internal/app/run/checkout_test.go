package run

import (
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
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

	// An input of actions/checkout that forgeload would ignore fails the
	// step before anything is fetched.
	v = h.run("on: push\njobs:\n  a:\n    runs-on: x\n    steps:\n      - uses: actions/checkout@v4\n        with:\n          submodules: recursive\n      - run: echo after\n", Options{})
	if v.Result != runnerv1.Result_RESULT_FAILURE {
		t.Fatalf("result = %v, want FAILURE", v.Result)
	}
	wantContains(t, "log", logText(v), "::error::actions/checkout: with.submodules: recursive is not supported")
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
			if _, err := h.forge.AddRepo("owner/repo", map[string]string{"README": "hello\n", ".runner": "from the repo\n"}); err != nil {
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
      - run: cat %s/README
`, host, c.plant, c.path, c.path), Options{})
			log := logText(v)
			if after := snapshot(t, host); !maps.Equal(before, after) {
				t.Fatalf("the checkout changed the host directory: %s\nlog:\n%s", changed(before, after), log)
			}
			if c.want == "" {
				if v.Result != runnerv1.Result_RESULT_SUCCESS {
					t.Fatalf("result = %v, want success; log:\n%s", v.Result, log)
				}
				wantContains(t, "log", log, "\nhello")
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
