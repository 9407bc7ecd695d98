package cmd

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestLoadCommandHTMLOutput(t *testing.T) {
	parallel(t)
	srv, _ := loadTarget(t)
	dir := t.TempDir()
	keyPath := filepath.Join(dir, "from-key.html")
	flagPath := filepath.Join(dir, "from-flag.html")
	u := strings.Replace(srv.URL, "http://", "http://user:pa55word@", 1)
	cfg := filepath.Join(dir, "cf.yaml")
	body := "target: " + u + "/\ntotal: 20\nhtml_output: " + keyPath + "\nheaders:\n  Authorization: Bearer s3cret-token\n  X-Trace: visible\n"
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	// Crankfire's html_output key writes the report.
	if code, _, stderr := runMain(t, "load", "-f", cfg, "-q"); code != ExitOK {
		t.Fatalf("exit = %d, want 0; stderr:\n%s", code, stderr)
	}
	b, err := os.ReadFile(keyPath)
	if err != nil {
		t.Fatalf("html_output: %v", err)
	}
	page := string(b)
	for _, want := range []string{"<!DOCTYPE html>", `data-k="requests" data-v="20"`, "Authorization: ***", "X-Trace: visible", "user:***@", `data-chart="spectrum"`} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	for _, secret := range []string{"s3cret-token", "pa55word"} {
		if strings.Contains(page, secret) {
			t.Errorf("report shows the secret %q", secret)
		}
	}
	// --html-output wins over the key.
	if code, _, stderr := runMain(t, "load", "-f", cfg, "-q", "--html-output", flagPath); code != ExitOK {
		t.Fatalf("exit = %d, want 0; stderr:\n%s", code, stderr)
	}
	if _, err := os.Stat(flagPath); err != nil {
		t.Errorf("--html-output: %v", err)
	}
}

// TestBaselineAndCompare runs a fast and a slow target through the real
// command: compare flags the slower p99 and exits 1, and a baseline
// threshold fails the slow run with the deltas printed; without a
// baseline the same threshold is skipped with a notice.
func TestBaselineAndCompare(t *testing.T) {
	parallel(t)
	var slow atomic.Int64 // the target's service time (ns)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(time.Duration(slow.Load()))
	}))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	fast, slowJSON := filepath.Join(dir, "fast.json"), filepath.Join(dir, "slow.json")
	th := "http_req_duration:p99 < baseline * 1.10"
	args := []string{"load", "--target", srv.URL + "/", "--total", "40", "-c", "20", "-q", "--threshold", th}

	code, _, stderr := runMain(t, append(args, "--json-output", fast)...)
	if code != ExitOK || !strings.Contains(stderr, "no --baseline given") {
		t.Fatalf("first run: exit %d, stderr %q; want 0 and a notice that baseline thresholds are skipped", code, stderr)
	}
	slow.Store(int64(slowerThan(jsonP99(t, fast), time.Second)))
	code, stdout, stderr := runMain(t, append(args, "--json-output", slowJSON, "--baseline", fast)...)
	if code != ExitFailure {
		t.Errorf("slow run against the fast baseline: exit %d, want 1; stderr:\n%s", code, stderr)
	}
	for _, want := range []string{"FAIL  " + th, "(baseline ", "Comparison: " + fast + " → this run", "p99"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}

	code, stdout, _ = runMain(t, "compare", fast, slowJSON, "--limit", "p99=10%")
	if code != ExitFailure || !strings.Contains(stdout, "REGRESSION") {
		t.Errorf("compare: exit %d, want 1 with a REGRESSION row:\n%s", code, stdout)
	}
	if code, stdout, _ = runMain(t, "compare", slowJSON, fast, "--limit", "p99=10%"); code != ExitOK {
		t.Errorf("compare faster against slower: exit %d, want 0:\n%s", code, stdout)
	}
	if code, _, stderr = runMain(t, "compare", fast, filepath.Join(dir, "missing.json")); code != ExitBadInput || !strings.Contains(stderr, "missing.json") {
		t.Errorf("compare with a missing file: exit %d, stderr %q; want 2 naming the file", code, stderr)
	}
	if code, _, stderr = runMain(t, "compare", fast, slowJSON, "--limit", "p98=1%"); code != ExitBadInput || !strings.Contains(stderr, "unknown metric") {
		t.Errorf("compare with a bad limit: exit %d, stderr %q; want 2", code, stderr)
	}
}

// TestLoadCommandDashboard runs a test with --dashboard and
// --dashboard-linger through the real command: the page is served while
// the test runs, the event stream ends with the final result, and the
// command keeps serving until its context ends (Ctrl-C), then exits with
// the run's code.
func TestLoadCommandDashboard(t *testing.T) {
	parallel(t)
	srv, _ := loadTarget(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- Main(ctx, []string{"load", "--target", srv.URL + "/", "--rate", "50", "-d", "3s", "-q", "--dashboard", "--dashboard-linger", "--validity", "warn"}, strings.NewReader(""), &stdout, &stderr)
	}()
	var url string
	deadline := time.Now().Add(time.Minute)
	for url == "" && time.Now().Before(deadline) {
		for line := range strings.SplitSeq(stderr.String(), "\n") {
			if u, ok := strings.CutPrefix(line, "dashboard: http://"); ok {
				url = "http://" + u
				break
			}
		}
		time.Sleep(10 * time.Millisecond) // polling interval
	}
	if url == "" {
		t.Fatalf("no dashboard address on stderr: %q", stderr.String())
	}
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(page), `new EventSource("events")`) || !strings.Contains(string(page), `data-state="running"`) {
		t.Errorf("dashboard page is not the live page of a running test:\n%.2000s", page)
	}
	resp, err = http.Get(url + "events")
	if err != nil {
		t.Fatal(err)
	}
	events, err := io.ReadAll(resp.Body) // ends after the final result
	resp.Body.Close()
	if err != nil || !strings.HasSuffix(string(events), "event: done\ndata: done\n\n") || !strings.Contains(string(events), `data-state="done"`) {
		t.Fatalf("event stream = %v, %.300q…, want updates ending with the final result", err, events)
	}
	select {
	case code := <-done:
		t.Fatalf("load exited (%d) before Ctrl-C; the dashboard should keep serving", code)
	default:
	}
	if !strings.Contains(stderr.String(), "press Ctrl-C to stop") {
		t.Errorf("stderr does not say how to stop: %q", stderr.String())
	}
	cancel()
	if code := <-done; code != ExitOK {
		t.Errorf("exit = %d after Ctrl-C at the end, want 0; stderr:\n%s", code, stderr.String())
	}
	if code, _, stderr := runMain(t, "load", "--target", srv.URL+"/", "--total", "1", "--dashboard=0.0.0.0:0"); code != ExitBadInput || !strings.Contains(stderr, "not a loopback address") {
		t.Errorf("--dashboard=0.0.0.0:0: exit %d, stderr %q; want 2 and a refusal", code, stderr)
	}
}

// jsonP99 is the p99 latency in a --json-output file.
func jsonP99(t *testing.T, path string) time.Duration {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return resultP99(t, path, f)
}
