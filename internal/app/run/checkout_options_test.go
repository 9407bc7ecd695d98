package run

import (
	"strings"
	"testing"

	runnerv1 "gitea.dev/actions-proto-go/runner/v1"

	"github.com/forgeload/forgeload/internal/pkg/forgetest"
)

// TestCheckoutBranchAndTags: a branch event's checkout is on the branch
// (tracking origin's), not a detached HEAD, as actions/checkout leaves it;
// with.ref naming a branch is the same; fetch-tags: true brings the tags.
// Before, HEAD was detached and fetch-tags: true was refused.
func TestCheckoutBranchAndTags(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	sha, err := h.forge.AddRepo("owner/repo", map[string]string{"README": "hello\n"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.forge.AddActionRepo("owner/tagged",
		forgetest.Commit{Files: map[string]string{"f": "1"}, Tags: []string{"v1"}},
		forgetest.Commit{Files: map[string]string{"f": "2"}, AnnotatedTags: []string{"v2"}, Branches: []string{"dev"}}); err != nil {
		t.Fatal(err)
	}
	v := h.run(`
on: push
jobs:
  a:
    runs-on: forgeload
    steps:
      - uses: actions/checkout@v4
      - run: echo "head=$(git rev-parse --abbrev-ref HEAD) at $(git rev-parse HEAD) upstream=$(git rev-parse --abbrev-ref '@{upstream}')"
      - uses: actions/checkout@v4
        with:
          repository: owner/tagged
          ref: dev
          path: t
          fetch-tags: true
      - run: echo "t head=$(git -C t rev-parse --abbrev-ref HEAD) tags=$(git -C t tag | tr '\n' ,)"
      - uses: actions/checkout@v4
        with:
          repository: owner/tagged
          ref: v1
          path: d
      - run: echo "d head=$(git -C d rev-parse --abbrev-ref HEAD) tags=$(git -C d tag | wc -l)"
`, Options{})
	log := logText(v)
	if v.Result != runnerv1.Result_RESULT_SUCCESS {
		t.Fatalf("result = %v; log:\n%s", v.Result, log)
	}
	for _, want := range []string{
		"head=main at " + sha + " upstream=origin/main",
		"t head=dev tags=v1,v2,",
		"d head=HEAD tags=0",
	} {
		wantContains(t, "log", log, want)
	}
}

// TestCheckoutSubmodules: submodules: recursive checks out the submodules
// (a relative URL, an absolute one on the forge, and one nested in it),
// each a working repository in the workspace; submodules: true leaves the
// nested one out. A submodule on another host gets no token (the forge
// refuses it), and one that is not http(s) is refused naming it. Before,
// submodules: other than false was refused.
func TestCheckoutSubmodules(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	if _, err := h.forge.AddRepo("owner/repo", map[string]string{"README": "hello\n"}); err != nil {
		t.Fatal(err)
	}
	lib, err := h.forge.AddActionRepo("owner/lib", forgetest.Commit{Files: map[string]string{"lib.txt": "lib-content\n"}})
	if err != nil {
		t.Fatal(err)
	}
	nested, err := h.forge.AddActionRepo("owner/nested", forgetest.Commit{Files: map[string]string{"n.txt": "nested-content\n"},
		Submodules: []forgetest.Submodule{{Path: "deep", URL: "../lib.git", Commit: lib[0]}}})
	if err != nil {
		t.Fatal(err)
	}
	addApp := func(name string, subs ...forgetest.Submodule) {
		t.Helper()
		if _, err := h.forge.AddActionRepo(name, forgetest.Commit{Files: map[string]string{"app.txt": "app\n"}, Submodules: subs}); err != nil {
			t.Fatal(err)
		}
	}
	addApp("owner/app", forgetest.Submodule{Path: "libdir", URL: "../lib.git", Commit: lib[0]},
		forgetest.Submodule{Path: "nest", URL: h.forge.URL() + "/owner/nested.git", Commit: nested[0]})
	v := h.run(`
on: push
jobs:
  a:
    runs-on: forgeload
    steps:
      - uses: actions/checkout@v4
        with:
          repository: owner/app
          ref: main
          submodules: recursive
      - run: |
          echo "got $(cat libdir/lib.txt) $(cat nest/n.txt) $(cat nest/deep/lib.txt)"
          git submodule status --recursive
          git -C nest/deep rev-parse HEAD
          test -z "$(git status --porcelain)" && echo clean-tree
      - uses: actions/checkout@v4
        with:
          repository: owner/app
          ref: main
          submodules: true
          path: top
      - run: echo "top has $(cat top/nest/n.txt), deep has $(ls top/nest/deep | wc -l) files"
`, Options{})
	log := logText(v)
	if v.Result != runnerv1.Result_RESULT_SUCCESS {
		t.Fatalf("result = %v; log:\n%s", v.Result, log)
	}
	for _, want := range []string{"got lib-content nested-content lib-content", " nest/deep (", "clean-tree", "top has nested-content, deep has 0 files"} {
		wantContains(t, "log", log, want)
	}
	if strings.Contains(log, v.Token) {
		t.Fatal("the token is in the log")
	}

	// The same forge under another host name is another host: no token.
	other := strings.Replace(h.forge.URL(), "127.0.0.1", "localhost", 1)
	addApp("owner/foreign", forgetest.Submodule{Path: "libdir", URL: other + "/owner/lib.git", Commit: lib[0]})
	addApp("owner/local", forgetest.Submodule{Path: "libdir", URL: "file:///etc", Commit: lib[0]})
	auths := map[string]int{}
	for _, tc := range []struct{ repo, want string }{
		{"owner/foreign", "The token goes only to the forge's own URLs"},
		{"owner/local", `.gitmodules submodule.libdir.url: "file:///etc" is not an http:// or https:// URL`},
	} {
		before := len(h.forge.GitAuths())
		v := h.run(`
on: push
jobs:
  a:
    runs-on: forgeload
    steps:
      - uses: actions/checkout@v4
        with:
          repository: `+tc.repo+`
          ref: main
          submodules: true
`, Options{})
		log := logText(v)
		if v.Result != runnerv1.Result_RESULT_FAILURE {
			t.Fatalf("%s: result = %v; log:\n%s", tc.repo, v.Result, log)
		}
		wantContains(t, tc.repo+" log", log, tc.want)
		auths[tc.repo] = len(h.forge.GitAuths()) - before
	}
	// The foreign submodule was asked for without the token: as many
	// authenticated requests as for the refused one, which sent none.
	if auths["owner/foreign"] != auths["owner/local"] {
		t.Errorf("authenticated git requests %v: the foreign submodule's carried the token", auths)
	}
}
