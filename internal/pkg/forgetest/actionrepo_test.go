package forgetest

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestAddActionRepo: the commits are made in order with their tags and
// branches (a moved tag on the later one), and the jobs' repository stays
// the one AddRepo made.
func TestAddActionRepo(t *testing.T) {
	t.Parallel()
	f := New(t)
	if _, err := f.AddRepo("o/app", map[string]string{"a": "b"}); err != nil {
		t.Fatal(err)
	}
	ids, err := f.AddActionRepo("acts/x",
		Commit{Files: map[string]string{"action.yml": "one"}, Tags: []string{"v1"}},
		Commit{Files: map[string]string{"action.yml": "two"}, AnnotatedTags: []string{"v2"}, Branches: []string{"release"}})
	if err != nil || len(ids) != 2 || ids[0] == ids[1] {
		t.Fatalf("AddActionRepo = %v, %v", ids, err)
	}
	out, err := exec.Command("git", "ls-remote", filepath.Join(f.gitRoot, "acts", "x.git")).CombinedOutput()
	if err != nil {
		t.Fatalf("ls-remote: %v: %s", err, out)
	}
	refs := string(out)
	for _, want := range []string{ids[0] + "\trefs/tags/v1", ids[1] + "\trefs/tags/v2^{}", ids[1] + "\trefs/heads/release", ids[1] + "\trefs/heads/main"} {
		if !strings.Contains(refs, want) {
			t.Errorf("refs lack %q:\n%s", want, refs)
		}
	}
	f.mu.Lock()
	repo := f.repo
	f.mu.Unlock()
	if repo != "o/app" {
		t.Errorf("the jobs' repository became %q", repo)
	}
	if _, err := f.AddActionRepo("bad", Commit{}); err == nil {
		t.Error("AddActionRepo(\"bad\") did not fail")
	}
}
