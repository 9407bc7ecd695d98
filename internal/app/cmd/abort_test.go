package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// abortConfig is a 30 s plan at 50 req/s against url whose failure-rate
// threshold aborts the run after its first second.
func abortConfig(url string) string {
	return "target: " + url + "\nrate: 50\nduration: 30s\nthresholds:\n  - http_req_duration:p99 < 10s\n" +
		"  - expr: http_req_failed:rate < 1%\n    abort_on_fail: true\n    delay: 1s\n"
}

// TestLoadCommandAbortOnFail: every request fails; `forgeload load` stops
// the 30 s run soon after the first second, says aborted in its summary
// and exits 1.
func TestLoadCommandAbortOnFail(t *testing.T) {
	parallel(t)
	srv, n := loadTarget(t)
	cfg := filepath.Join(t.TempDir(), "abort.yaml")
	if err := os.WriteFile(cfg, []byte(abortConfig(srv.URL+"/fail")), 0o600); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runMain(t, "load", "-f", cfg, "-q")
	if code != ExitFailure {
		t.Fatalf("exit code = %d, want 1; stderr:\n%s", code, stderr)
	}
	if !strings.Contains(stdout, "aborted: http_req_failed:rate < 1% (0.01) at ") || !strings.Contains(stderr, "aborted: http_req_failed:rate < 1%") {
		t.Errorf("stdout:\n%s\nstderr:\n%s\nwant the abort named in the summary and the error", stdout, stderr)
	}
	if planned := int64(50 * 30); n.Load() > planned/5 {
		t.Errorf("the target saw %d of %d planned requests: the run was not stopped early", n.Load(), planned)
	}
}

// TestE2EExecLoadStepAbortOnFail: the same config in a job's load step
// fails the step with the abort.
func TestE2EExecLoadStepAbortOnFail(t *testing.T) {
	parallel(t)
	srv, n := loadTarget(t)
	node := newNode(t, "")
	wf := filepath.Join(node.dir, "wf.yml")
	script := "cat > abort.yaml <<'EOF'\n" + abortConfig(srv.URL+"/fail") + "EOF\n"
	script = "          " + strings.ReplaceAll(strings.TrimSuffix(script, "\n"), "\n", "\n          ") + "\n"
	if err := os.WriteFile(wf, []byte("on: push\njobs:\n  perf:\n    runs-on: forgeload\n    steps:\n"+
		"      - run: |\n"+script+
		"      - uses: forgeload/load@v1\n        with:\n          config: abort.yaml\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := node.start("-c", node.cfg, "exec", wf)
	if code := p.wait(t, 60*time.Second); code != ExitFailure {
		t.Fatalf("exec: exit %d, want 1; output:\n%s", code, p.out.String())
	}
	out := p.out.String()
	for _, want := range []string{"::error::forgeload/load: aborted: http_req_failed:rate < 1% (0.01) at ", "job perf: failure"} {
		if !strings.Contains(out, want) {
			t.Errorf("exec output lacks %q:\n%s", want, out)
		}
	}
	if planned := int64(50 * 30); n.Load() > planned/5 {
		t.Errorf("the target saw %d of %d planned requests: the step was not stopped early", n.Load(), planned)
	}
}
