package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
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

// slowTarget is a real server on 127.0.0.1 that answers each request after
// about latency. Tests of absurd rates use it: what they check (the run ends
// on time, signals stop it) does not depend on how fast the target answers,
// and against loadTarget two connections at full speed burned about 5 CPU
// seconds per test, in the race-built test process, beside every other
// test of the package.
func slowTarget(t *testing.T, latency time.Duration) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		timer := time.NewTimer(latency)
		defer timer.Stop()
		select {
		case <-timer.C:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func runMain(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Main(context.Background(), args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

func TestLoadCommandFileAndFlags(t *testing.T) {
	parallel(t)
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
	parallel(t)
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
	parallel(t)
	srv, n := loadTarget(t)
	// The graceful stop lets arrivals that a stall of a loaded machine
	// held back still go out after the end, instead of being dropped, so
	// the count is the Poisson plan's.
	code, stdout, stderr := runMain(t, "load", "--target", srv.URL, "--rate", "50", "-d", "1200ms", "--concurrency", "4",
		"--arrival-model", "poisson", "--progress-interval", "1s", "--graceful-shutdown", "30s")
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
	parallel(t)
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("target: http://127.0.0.1:1/\nratee: 5\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// load runs on this machine only: a distributed block must not
	// silently become a one-host test.
	dist := filepath.Join(dir, "dist.yaml")
	if err := os.WriteFile(dist, []byte("target: http://127.0.0.1:1/\nrate: 5\nduration: 1s\ndistributed: {workers: 3}\n"), 0o600); err != nil {
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
		{[]string{"load", "-f", dist}, "distributed.workers is 3"},
	} {
		code, _, stderr := runMain(t, tc.args...)
		if code != ExitBadInput || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and a message naming %q", tc.args, code, stderr, tc.want)
		}
	}
}

func TestLoadCommandCrankfireOutputKeys(t *testing.T) {
	parallel(t)
	srv, _ := loadTarget(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "cf.yaml")
	if err := os.WriteFile(cfg, []byte("target: "+srv.URL+"/fail\ntotal: 3\njson_output: true\nlog_errors: true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runMain(t, "load", "-f", cfg, "-q")
	if code != ExitFailure || !strings.Contains(stderr, "measured nothing") {
		t.Fatalf("exit = %d, want 1 (every request failed: nothing measured); stderr:\n%s", code, stderr)
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

// TestE2ELoadAbsurdRateStops runs the binary at 1e12 req/s: it ends on time
// by itself, and SIGINT or SIGTERM stop it within a second or so (before,
// counting the arrivals it never sent took minutes and ignored signals).
func TestE2ELoadAbsurdRateStops(t *testing.T) {
	parallel(t)
	srv := slowTarget(t, 5*time.Millisecond)
	n := newNode(t, "")
	// Two workers, deliberately overloaded: the run ends on time and is
	// INVALID (it sent a sliver of what it asked for), exit 1.
	p := n.start("load", "--target", srv.URL, "--rate", "1e12", "-d", "1s", "--concurrency", "2", "--max-concurrency", "2", "-q")
	if code := p.wait(t, 30*time.Second); code != ExitFailure || !strings.Contains(p.out.String(), "Dropped") ||
		!strings.Contains(p.out.String(), "Validity                  INVALID: sent ") {
		t.Errorf("1 s run: exit %d, want 1, a summary and the run INVALID; output:\n%s", code, p.out.String())
	}
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		p := n.start("load", "--target", srv.URL, "--rate", "1e12", "-d", "10m", "--concurrency", "2", "--max-concurrency", "2", "--progress-interval", "1s")
		waitFor(t, "a progress line", 30*time.Second, func() bool { return strings.Contains(p.out.String(), "req/s") })
		p.signal(t, sig)
		// Generous for a loaded machine; the run itself stops within
		// load.MaxInterruptGrace.
		if code := p.wait(t, 15*time.Second); code != ExitFailure || !strings.Contains(p.out.String(), "interrupted") {
			t.Errorf("%v: exit %d, want 1 and the run reported interrupted; output:\n%s", sig, code, p.out.String())
		}
	}
}

// closedPort returns the URL of a loopback port that nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return "http://" + addr + "/"
}

// TestE2ENothingMeasuredFails runs the binary against a closed port with no
// thresholds: `load` and a workflow's load step (through `exec`) fail, with
// the reason, and warn that there are no thresholds. Before, both passed
// with 100% errors.
func TestE2ENothingMeasuredFails(t *testing.T) {
	parallel(t)
	url := closedPort(t)
	n := newNode(t, "")
	p := n.start("load", "--target", url, "--total", "5", "-q")
	if code := p.wait(t, 60*time.Second); code != ExitFailure {
		t.Errorf("load: exit %d, want 1; output:\n%s", code, p.out.String())
	}
	out := p.out.String()
	for _, want := range []string{"warning: no thresholds", "no request succeeded, so this run measured nothing", "5 of 5 requests failed"} {
		if !strings.Contains(out, want) {
			t.Errorf("load output lacks %q:\n%s", want, out)
		}
	}

	wf := filepath.Join(n.dir, "wf.yml")
	if err := os.WriteFile(wf, []byte("on: push\njobs:\n  perf:\n    runs-on: forgeload\n    steps:\n      - uses: forgeload/load@v1\n        with:\n          target: "+url+"\n          total: 5\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p = n.start("-c", n.cfg, "exec", wf)
	if code := p.wait(t, 60*time.Second); code != ExitFailure {
		t.Errorf("exec: exit %d, want 1; output:\n%s", code, p.out.String())
	}
	out = p.out.String()
	for _, want := range []string{"::warning::forgeload/load: no thresholds", "::error::forgeload/load: no request succeeded", "job perf: failure"} {
		if !strings.Contains(out, want) {
			t.Errorf("exec output lacks %q:\n%s", want, out)
		}
	}
}

// TestE2EExecUnlimitedRateStops runs a load step at 1e12 req/s through
// `exec` on a runner whose admin lifted the rate limit (load.max_rate: 0):
// the step ends on time, and SIGINT stops a long one promptly.
func TestE2EExecUnlimitedRateStops(t *testing.T) {
	parallel(t)
	srv := slowTarget(t, 5*time.Millisecond)
	n := newNode(t, "load:\n  max_rate: 0\n")
	job := func(d string) string {
		wf := filepath.Join(n.dir, "wf-"+d+".yml")
		text := "on: push\njobs:\n  perf:\n    runs-on: forgeload\n    steps:\n      - uses: forgeload/load@v1\n        with:\n          target: " + srv.URL + "\n          rate: 1e12\n          concurrency: 2\n          max_concurrency: 2\n          duration: " + d + "\n"
		if err := os.WriteFile(wf, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return wf
	}
	// Deliberately overloaded: the step ends on time and fails INVALID.
	p := n.start("-c", n.cfg, "exec", job("1s"))
	if code := p.wait(t, 60*time.Second); code != ExitFailure || !strings.Contains(p.out.String(), "job perf: failure") ||
		!strings.Contains(p.out.String(), "::error::forgeload/load: INVALID: sent ") {
		t.Errorf("1 s step: exit %d, want 1, the step failed INVALID; output:\n%s", code, p.out.String())
	}
	p = n.start("-c", n.cfg, "exec", job("10m"))
	waitFor(t, "the load step to start", 30*time.Second, func() bool { return strings.Contains(p.out.String(), "load test: GET") })
	p.signal(t, syscall.SIGINT)
	if code := p.wait(t, 20*time.Second); code == ExitOK {
		t.Errorf("interrupted exec: exit 0; output:\n%s", p.out.String())
	}
}
