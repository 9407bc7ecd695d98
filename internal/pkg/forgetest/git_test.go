package forgetest_test

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/forgeload/forgeload/internal/pkg/forgetest"
)

func TestAddRepoServesGitToTaskTokensOnly(t *testing.T) {
	t.Parallel()
	f := forgetest.New(t)
	sha, err := f.AddRepo("o/r", map[string]string{"a.txt": "A"})
	if err != nil {
		t.Fatal(err)
	}
	id := f.QueueJob(forgetest.Job{RunsOn: []string{"x"}, Payload: []byte("jobs:\n  j:\n    runs-on: x\n    steps:\n      - run: echo\n")})
	v := f.Task(id)
	clone := func(pass, path string) error {
		dir := t.TempDir()
		u := strings.Replace(f.URL(), "http://", "http://x:"+pass+"@", 1) + path
		cmd := exec.Command("git", "clone", "-q", u, dir)
		cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0")
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		head, err := exec.Command("git", "-C", dir, "rev-parse", "HEAD").Output()
		if err != nil || strings.TrimSpace(string(head)) != sha {
			return fmt.Errorf("cloned HEAD %q, want %s", head, sha)
		}
		return nil
	}
	if err := clone(v.Token, "/o/r.git"); err != nil {
		t.Fatalf("clone with the task token: %v", err)
	}
	if err := clone("wrong", "/o/r.git"); err == nil {
		t.Fatal("clone with a wrong token succeeded")
	}
	// As Gitea, the repository's URL without .git serves it too
	// (actions/checkout fetches from that one).
	if err := clone(v.Token, "/o/r"); err != nil {
		t.Fatalf("clone of /o/r, without .git: %v", err)
	}
	if err := clone("wrong", "/o/r"); err == nil {
		t.Fatal("clone of /o/r with a wrong token succeeded")
	}
}
