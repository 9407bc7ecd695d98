package cmd

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestLoadCommandCancelIsNotAThresholdFailure: a run cancelled (Ctrl-C)
// after a failing threshold's data came in ends as the load step does
// for the same run, cancelled ("interrupted", exit 1), not judged on the
// partial data. Before package outcome gave both one order, the command
// judged the thresholds first and said "1 of 1 thresholds failed" where
// the step said cancelled.
func TestLoadCommandCancelIsNotAThresholdFailure(t *testing.T) {
	parallel(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var once sync.Once
	seen := make(chan struct{})
	var mu sync.Mutex
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(20 * time.Millisecond) // slower than the 1ms gate, by construction
		mu.Lock()
		n++
		if n >= 25 { // over a second of data: the threshold has something to fail on
			once.Do(func() { close(seen) })
		}
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	go func() {
		select {
		case <-seen:
		case <-time.After(30 * time.Second):
		}
		cancel()
	}()
	var out, errb bytes.Buffer
	code := Main(ctx, []string{"load", "--target", srv.URL + "/", "--rate", "20", "-d", "60s", "-c", "4", "-q",
		"--threshold", "http_req_duration:p99 < 1ms"}, strings.NewReader(""), &out, &errb)
	if code != ExitFailure {
		t.Fatalf("exit = %d, want 1; stderr:\n%s", code, errb.String())
	}
	if !strings.Contains(errb.String(), "interrupted before its end") || strings.Contains(errb.String(), "thresholds failed") {
		t.Fatalf("stderr does not say the run was interrupted (and only that):\n%s", errb.String())
	}
	if !strings.Contains(out.String(), "FAIL") {
		t.Errorf("the partial summary does not show the failing threshold:\n%s", out.String())
	}
}
