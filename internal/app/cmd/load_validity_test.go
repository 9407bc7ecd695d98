package cmd

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// countingSlowTarget is a real server on 127.0.0.1 that answers each
// request after latency and counts the requests it received.
func countingSlowTarget(t *testing.T, latency time.Duration) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		n.Add(1)
		timer := time.NewTimer(latency)
		defer timer.Stop()
		select {
		case <-timer.C:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// readSummary reads a --json-output file.
func readSummary(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestLoadCommandRateFindsItsConcurrency is issue 31's first case: a rate
// of 200 req/s against a 50 ms target needs about 10 requests in flight.
// With the old fixed default of one worker the run sent 66 of 1,000
// requests and exited 0; now the pool grows on demand (max_concurrency
// defaults to min(1000, rate × timeout)) and every arrival is sent.
func TestLoadCommandRateFindsItsConcurrency(t *testing.T) {
	parallel(t)
	srv, n := countingSlowTarget(t, 50*time.Millisecond)
	out := filepath.Join(t.TempDir(), "r.json")
	// validity warns: on a loaded test box the generator itself may fall
	// behind (generator_bound, rightly INVALID), which is not what this
	// test is about; every other reason must be absent.
	code, stdout, stderr := runMain(t, "load", "--target", srv.URL, "--rate", "200", "-d", "5s", "-q", "--json-output", out, "--validity", "warn")
	if code != ExitOK {
		t.Fatalf("exit = %d, want 0\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	s := readSummary(t, out)
	if got := int64(s["requests"].(float64)); got != n.Load() || got < 990 {
		t.Errorf("requests = %d, target saw %d; want all of about 1000", got, n.Load())
	}
	if s["dropped"].(float64) != 0 {
		t.Errorf("dropped = %v; want nothing dropped", s["dropped"])
	}
	invalid, _ := s["invalid"].([]any)
	for _, x := range invalid {
		if r := x.(map[string]any)["reason"]; r != "generator_bound" {
			t.Errorf("invalid for %v (%v); want the rate delivered by a grown pool", r, x)
		}
	}
	if w := s["workers"].(float64); w < 5 || w > s["max_workers"].(float64) {
		t.Errorf("workers = %v of max %v, want the pool grown to about 10", w, s["max_workers"])
	}
	if s["valid"] == true && !strings.Contains(stdout, "Validity                  valid") {
		t.Errorf("summary does not say the run was valid:\n%s", stdout)
	}
}

// TestLoadCommandOverloadIsInvalid: a run capped below what the rate
// needs does not deliver the load asked for: it is INVALID, fails with
// the reason and the fix, and `--validity warn` turns that into a warning.
func TestLoadCommandOverloadIsInvalid(t *testing.T) {
	parallel(t)
	srv, n := countingSlowTarget(t, 50*time.Millisecond)
	out := filepath.Join(t.TempDir(), "r.json")
	args := []string{"load", "--target", srv.URL, "--rate", "200", "-d", "1s", "--max-concurrency", "2", "-q", "--json-output", out}
	code, stdout, stderr := runMain(t, args...)
	if code != ExitFailure {
		t.Fatalf("exit = %d, want 1\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "Validity                  INVALID: ") || !strings.Contains(stderr, "INVALID: ") ||
		!strings.Contains(stdout+stderr, "raise max_concurrency") {
		t.Errorf("the run is not reported INVALID with its fix\nstdout:\n%s\nstderr:\n%s", stdout, stderr)
	}
	s := readSummary(t, out)
	if s["valid"] != false || int64(s["requests"].(float64)) != n.Load() {
		t.Errorf("valid = %v, requests = %v, target saw %d", s["valid"], s["requests"], n.Load())
	}
	code, _, stderr = runMain(t, append(args, "--validity", "warn")...)
	if code != ExitOK || !strings.Contains(stderr, "warning: INVALID: ") {
		t.Errorf("--validity warn: exit = %d, want 0 with a warning; stderr:\n%s", code, stderr)
	}
}
