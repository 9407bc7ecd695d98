package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// loadTarget is a real server on 127.0.0.1 that counts requests and fails
// the /fail path.
func loadTarget(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		if r.URL.Path == "/fail" {
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func runMain(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Main(context.Background(), args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

func TestLoadCommandFileAndFlags(t *testing.T) {
	t.Parallel()
	srv, n := loadTarget(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "api.yaml")
	// The file asks for 10 requests; --total overrides it.
	if err := os.WriteFile(cfg, []byte("target: "+srv.URL+"/\nconcurrency: 2\ntotal: 10\nthresholds:\n  - \"http_req_failed:rate < 1%\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	jsonOut := filepath.Join(dir, "summary.json")
	code, stdout, stderr := runMain(t, "load", "-f", cfg, "--total", "25", "-c", "3", "--json-output", jsonOut, "-q")
	if code != ExitOK {
		t.Fatalf("exit code = %d, want 0; stderr:\n%s", code, stderr)
	}
	if n.Load() != 25 {
		t.Errorf("target saw %d requests, want 25 (--total overrides the file)", n.Load())
	}
	if !strings.Contains(stdout, "Load test summary") || !strings.Contains(stdout, "Thresholds: PASS") {
		t.Errorf("stdout lacks the summary:\n%s", stdout)
	}
	b, err := os.ReadFile(jsonOut)
	if err != nil {
		t.Fatal(err)
	}
	var sum struct {
		Requests         int64 `json:"requests"`
		ThresholdsPassed bool  `json:"thresholds_passed"`
	}
	if err := json.Unmarshal(b, &sum); err != nil || sum.Requests != 25 || !sum.ThresholdsPassed {
		t.Errorf("json summary = %s (err %v), want 25 requests, passed", b, err)
	}
}

func TestLoadCommandThresholdFailureExits1(t *testing.T) {
	t.Parallel()
	srv, _ := loadTarget(t)
	code, stdout, stderr := runMain(t, "load", "--target", srv.URL+"/fail", "--total", "20", "--concurrency", "2",
		"--threshold", "http_req_failed:rate < 1%", "--threshold", "http_req_duration:p99 < 10s", "-q")
	if code != ExitFailure {
		t.Fatalf("exit code = %d, want 1; stderr:\n%s", code, stderr)
	}
	if !strings.Contains(stdout, "FAIL  http_req_failed:rate < 1%") || !strings.Contains(stderr, "1 of 2 thresholds failed") {
		t.Errorf("stdout:\n%s\nstderr:\n%s\nwant the failing threshold named", stdout, stderr)
	}
}

func TestLoadCommandProgressAndRate(t *testing.T) {
	t.Parallel()
	srv, n := loadTarget(t)
	code, stdout, stderr := runMain(t, "load", "--target", srv.URL, "--rate", "50", "-d", "1200ms", "--concurrency", "4",
		"--arrival-model", "poisson", "--progress-interval", "1s")
	if code != ExitOK {
		t.Fatalf("exit code = %d; stderr:\n%s", code, stderr)
	}
	if got := n.Load(); got < 30 || got > 90 {
		t.Errorf("target saw %d requests, want about 60", got)
	}
	if !strings.Contains(stderr, "req/s  p50") {
		t.Errorf("stderr has no progress line:\n%s", stderr)
	}
	if !strings.Contains(stdout, "open model") {
		t.Errorf("stdout:\n%s", stdout)
	}
}

func TestLoadCommandBadInputExits2(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("target: http://127.0.0.1:1/\nratee: 5\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"load", "-f", bad}, "ratee"},
		{[]string{"load", "-f", filepath.Join(dir, "missing.yaml")}, "missing.yaml"},
		{[]string{"load", "--target", "http://127.0.0.1:1/", "--total", "5", "--arrival-model", "bursty"}, "bursty"},
		{[]string{"load", "--target", "http://127.0.0.1:1/", "--total", "5", "--threshold", "nonsense"}, "nonsense"},
		{[]string{"load", "--rate", "5"}, "target"},
	} {
		code, _, stderr := runMain(t, tc.args...)
		if code != ExitBadInput || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and a message naming %q", tc.args, code, stderr, tc.want)
		}
	}
}

func TestLoadCommandCrankfireOutputKeys(t *testing.T) {
	t.Parallel()
	srv, _ := loadTarget(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "cf.yaml")
	if err := os.WriteFile(cfg, []byte("target: "+srv.URL+"/fail\ntotal: 3\njson_output: true\nlog_errors: true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runMain(t, "load", "-f", cfg, "-q")
	if code != ExitOK {
		t.Fatalf("exit = %d, want 0 (no thresholds); stderr:\n%s", code, stderr)
	}
	var sum struct {
		Requests int64 `json:"requests"`
		Errors   int64 `json:"errors"`
	}
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil || sum.Requests != 3 || sum.Errors != 3 {
		t.Errorf("stdout = %q (err %v), want a JSON summary of 3 failed requests", stdout, err)
	}
	if strings.Count(stderr, "request failed:") != 3 || !strings.Contains(stderr, "status 500") {
		t.Errorf("stderr = %q, want the 3 failures logged", stderr)
	}
}
