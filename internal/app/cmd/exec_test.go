package cmd

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		t.Fatalf("repo root not found from the test's directory: %v", err)
	}
	return dir
}

// TestE2EQuickstart runs the README's first command: the quickstart
// workflow against the embedded demo target, through the real binary.
func TestE2EQuickstart(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binPath, "exec", "--demo", "examples/quickstart.yml")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("forgeload exec --demo examples/quickstart.yml: %v\n%s", err, out)
	}
	text := string(out)
	for _, want := range []string{
		"demo target listening on http://127.0.0.1:",
		"Load test summary",
		"Thresholds: PASS",
		"thresholds passed: true",
		"job perf: success",
	} {
		if !strings.Contains(text, want) {
			t.Fatalf("output lacks %q:\n%s", want, text)
		}
	}
	if !regexp.MustCompile(`over 2000 requests`).MatchString(text) {
		t.Fatalf("the quickstart did not send exactly 2000 requests (200/s for 10s):\n%s", text)
	}
}

func TestE2EExecFailingJobAndBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	wf := filepath.Join(dir, "wf.yml")
	if err := os.WriteFile(wf, []byte("on: push\njobs:\n  a:\n    runs-on: x\n    steps:\n      - run: exit 4\n  b:\n    needs: a\n    runs-on: x\n    steps:\n      - run: echo never\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (int, string) {
		cmd := exec.Command(binPath, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+t.TempDir())
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		return code, string(out)
	}
	code, out := run("exec", wf)
	if code != ExitFailure || !strings.Contains(out, "[b] skipped") || strings.Contains(out, "never\n") {
		t.Fatalf("exec of a failing job: exit %d\n%s", code, out)
	}
	code, out = run("exec", "-j", "nope", wf)
	if code != ExitBadInput || !strings.Contains(out, "no such job; the workflows have: a, b") {
		t.Fatalf("exec -j nope: exit %d\n%s", code, out)
	}
}
