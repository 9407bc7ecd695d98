package jobrun

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/forgeload/forgeload/internal/pkg/workflow"
)

// TestCheckoutInputs: every with: input is resolved once and either
// honoured, accepted because its value asks for what the checkout does
// anyway, or refused with its name, the reason and what is supported.
func TestCheckoutInputs(t *testing.T) {
	t.Parallel()
	ec := &workflow.Context{Env: map[string]string{"EMPTY": "", "DIR": "sub"}}
	good := []map[string]string{
		nil,
		{"repository": "o/r", "ref": "main", "token": "t", "path": "${{ env.DIR }}", "fetch-depth": "0", "clean": "false", "github-server-url": "https://x"},
		{"persist-credentials": "false", "submodules": "False", "lfs": "false", "fetch-tags": "false", "show-progress": "false"},
		{"submodules": "recursive", "fetch-tags": "true"}, {"submodules": "true"},
		{"submodules": "${{ env.EMPTY }}", "sparse-checkout": "", "ssh-key": ""},
		{"set-safe-directory": "true", "sparse-checkout-cone-mode": "false", "ssh-strict": "false", "ssh-user": "me"},
	}
	for _, with := range good {
		if _, err := newCheckoutStep(ec, workflow.Step{With: with}); err != nil {
			t.Errorf("with %v: %v, want it accepted", with, err)
		}
	}
	c, err := newCheckoutStep(ec, workflow.Step{With: good[1]})
	if err != nil {
		t.Fatal(err)
	}
	if want := (checkoutStep{repository: "o/r", ref: "main", token: "t", path: "sub", server: "https://x", depth: 0, clean: false}); *c != want {
		t.Errorf("resolved %+v, want %+v", *c, want)
	}
	if c, _ := newCheckoutStep(ec, workflow.Step{}); c.depth != 1 || !c.clean {
		t.Errorf("defaults: depth %d clean %v, want 1 and true", c.depth, c.clean)
	}

	const supported = "Supported: repository, ref, token, path, fetch-depth, clean, github-server-url, submodules, fetch-tags, lfs"
	bad := []struct {
		with map[string]string
		want []string
	}{
		{map[string]string{"depth": "1"}, []string{"with.depth is not an input of actions/checkout; supported: repository, ref"}},
		{map[string]string{"submodules": "all"}, []string{`with.submodules "all" is not true, false or recursive`}},
		{map[string]string{"persist-credentials": "true"}, []string{"with.persist-credentials: true is not supported", "never writes the token", supported}},
		{map[string]string{"lfs": "yes"}, []string{`with.lfs "yes" is not true or false`}},
		{map[string]string{"fetch-tags": "yes"}, []string{`with.fetch-tags "yes" is not true or false`}},
		{map[string]string{"sparse-checkout": "src"}, []string{"with.sparse-checkout: src is not supported", "whole tree"}},
		{map[string]string{"filter": "blob:none"}, []string{"with.filter: blob:none"}},
		{map[string]string{"ssh-key": "${{ env.DIR }}"}, []string{"with.ssh-key: sub is not supported", "never over SSH"}},
		{map[string]string{"fetch-depth": "-1"}, []string{`with.fetch-depth "-1" is not a whole number >= 0`}},
		{map[string]string{"clean": "maybe"}, []string{`with.clean "maybe" is not true or false`}},
		{map[string]string{"path": "../out"}, []string{`with.path "../out" must be relative and stay inside the workspace`}},
		{map[string]string{"path": "/abs"}, []string{`with.path "/abs" must be relative`}},
		{map[string]string{"ref": "${{ nope( }}"}, []string{"with.ref: "}},
		// git would run ext:: URLs' commands, and read the host's own
		// repositories through file:// or a path.
		{map[string]string{"github-server-url": "ext::sh -c touch% /tmp/x"}, []string{`with.github-server-url "ext::sh -c touch% /tmp/x" is not an http:// or https:// URL`}},
		{map[string]string{"github-server-url": "file:///srv/git"}, []string{"with.github-server-url", "over HTTP(S) only"}},
		{map[string]string{"github-server-url": "/srv/git"}, []string{"with.github-server-url"}},
		{map[string]string{"github-server-url": "https://"}, []string{"with.github-server-url"}},
	}
	for _, tt := range bad {
		_, err := newCheckoutStep(ec, workflow.Step{With: tt.with})
		if err == nil {
			t.Errorf("with %v: accepted, want an error", tt.with)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("with %v: %v\nwant it to contain %q", tt.with, err, w)
			}
		}
	}
}

// TestCheckoutLFSNeedsGitLFS: lfs: true needs an executable git-lfs in
// an absolute directory of the daemon's PATH, and says how to get one
// when there is none. Before, lfs: true was refused whatever the host had.
func TestCheckoutLFSNeedsGitLFS(t *testing.T) {
	t.Parallel()
	empty, bin := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "git-lfs"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(empty, "git-lfs"), []byte("not executable"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := gitLFSPath(empty + string(os.PathListSeparator) + "relative")
	if err == nil || !strings.Contains(err.Error(), "needs git-lfs on the runner host") || !strings.Contains(err.Error(), "apt-get install git-lfs") {
		t.Fatalf("without git-lfs: %v, want an error naming the fix", err)
	}
	if p, err := gitLFSPath(empty + string(os.PathListSeparator) + bin); err != nil || p != filepath.Join(bin, "git-lfs") {
		t.Fatalf("with git-lfs in %s: %q, %v", bin, p, err)
	}
	if _, err := exec.LookPath("git-lfs"); err != nil {
		t.Fatal("git-lfs is not installed: apt-get install git-lfs (.ci/run installs it)")
	}
	c, err := newCheckoutStep(&workflow.Context{}, workflow.Step{With: map[string]string{"lfs": "True"}})
	if err != nil || !c.lfs {
		t.Fatalf("lfs: True with git-lfs installed: %+v, %v", c, err)
	}
}

// The checkout's git sees none of the daemon's git settings but its TLS
// trust: not its HOME, nor GIT_* variables that would point git at
// another repository, config or command.
func TestCheckoutGitEnv(t *testing.T) {
	t.Parallel()
	base := []string{"PATH=/usr/bin", "HOME=/root", "XDG_CONFIG_HOME=/root/.config", "GIT_DIR=/srv/repo.git", "GIT_SSH_COMMAND=touch /x", "GIT_CONFIG_PARAMETERS='core.pager'='x'", "GIT_CONFIG_COUNT=1", "GIT_SSL_CAINFO=/etc/forge-ca.pem", "https_proxy=http://proxy:3128"}
	env := checkoutGitEnv(base, "/private/git", "/private/wt", "/private/home", [][2]string{{"core.hooksPath", os.DevNull}})
	got := map[string][]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		got[k] = append(got[k], v)
	}
	want := map[string]string{
		"PATH": "/usr/bin", "HOME": "/private/home", "GIT_DIR": "/private/git", "GIT_WORK_TREE": "/private/wt",
		"GIT_SSL_CAINFO": "/etc/forge-ca.pem", "https_proxy": "http://proxy:3128",
		"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.DevNull, "GIT_ATTR_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0",
		"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "core.hooksPath", "GIT_CONFIG_VALUE_0": os.DevNull,
	}
	for k, v := range want {
		if len(got[k]) != 1 || got[k][0] != v {
			t.Errorf("%s = %q, want once %q", k, got[k], v)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s is in git's environment: %q", k, got[k])
		}
	}
}

// withConfig sets a command-line config key git already has (the hooks
// path of git lfs install) and adds one it has not (lfs.url), leaving g's
// own environment as it was.
func TestHostGitWithConfig(t *testing.T) {
	t.Parallel()
	g := &hostGit{env: checkoutGitEnv([]string{"PATH=/usr/bin"}, "/g", "/w", "/h", [][2]string{{"core.hooksPath", os.DevNull}, {"gc.auto", "0"}})}
	c := g.withConfig([2]string{"core.hooksPath", "/g/hooks"}, [2]string{"lfs.url", "http://forge/o/r.git/info/lfs"})
	got := map[string]string{}
	for _, kv := range c.env {
		k, v, _ := strings.Cut(kv, "=")
		if _, dup := got[k]; dup {
			t.Errorf("%s twice in the environment", k)
		}
		got[k] = v
	}
	for k, v := range map[string]string{
		"GIT_CONFIG_COUNT": "3", "GIT_CONFIG_KEY_0": "core.hooksPath", "GIT_CONFIG_VALUE_0": "/g/hooks",
		"GIT_CONFIG_KEY_1": "gc.auto", "GIT_CONFIG_VALUE_1": "0",
		"GIT_CONFIG_KEY_2": "lfs.url", "GIT_CONFIG_VALUE_2": "http://forge/o/r.git/info/lfs", "PATH": "/usr/bin",
	} {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if !slices.Contains(g.env, "GIT_CONFIG_VALUE_0="+os.DevNull) || !slices.Contains(g.env, "GIT_CONFIG_COUNT=2") {
		t.Errorf("g's own environment changed: %q", g.env)
	}
}

// TestHostGitLFSEndpoint: with withLFS, git-lfs's endpoint is the forge's
// LFS server even when the work tree's .lfsconfig names another (the
// checkout fetches before .lfsconfig is checked out; this holds for any
// git-lfs that reads it later, a smudge say). Without it, git-lfs would
// follow the .lfsconfig.
func TestHostGitLFSEndpoint(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git-lfs"); err != nil {
		t.Fatal("git-lfs is not installed: apt-get install git-lfs (.ci/run installs it)")
	}
	priv := t.TempDir()
	g := &hostGit{ctx: t.Context(), gitDir: filepath.Join(priv, "git"), workTree: filepath.Join(priv, "wt"), out: io.Discard}
	if err := os.Mkdir(g.workTree, 0o700); err != nil {
		t.Fatal(err)
	}
	g.env = checkoutGitEnv(os.Environ(), g.gitDir, g.workTree, priv, [][2]string{{"core.hooksPath", os.DevNull}})
	const forge = "http://forge.example/o/r.git"
	for _, a := range [][]string{{"init", "-q"}, {"remote", "add", "origin", forge}} {
		if err := g.run(a...); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(g.workTree, ".lfsconfig"), []byte("[lfs]\n\turl = http://elsewhere.example/lfs\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	endpoint := func(g *hostGit) string {
		t.Helper()
		out, err := g.output("lfs", "env")
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(out, "\n") {
			if e, ok := strings.CutPrefix(l, "Endpoint="); ok {
				return e
			}
		}
		t.Fatalf("git lfs env names no endpoint:\n%s", out)
		return ""
	}
	if got := endpoint(g); !strings.HasPrefix(got, "http://elsewhere.example/lfs ") {
		t.Fatalf("without withLFS the endpoint is %q, want the .lfsconfig's (the test's premise)", got)
	}
	if got := endpoint(g.withLFS(forge)); !strings.HasPrefix(got, forge+"/info/lfs ") {
		t.Errorf("with withLFS the endpoint is %q, want the forge's %s/info/lfs", got, forge)
	}
}
