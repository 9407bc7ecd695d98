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
	"testing"
	"time"
)

// TestLoadCommandBaselineTarget: `forgeload load --baseline-target`
// against a candidate twice as slow as the baseline exits 1 with the
// paired regression, prints both sides, and writes the verdict into the
// JSON result; a bad --baseline-limit is bad input (exit 2).
func TestLoadCommandBaselineTarget(t *testing.T) {
	parallel(t)
	slow := func(d time.Duration) *httptest.Server {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-time.After(d): // the target's own latency
			case <-r.Context().Done():
			}
		}))
		t.Cleanup(srv.Close)
		return srv
	}
	// 2× slower, with service times long enough that a loaded machine's
	// scheduling delay (added to both sides: up to 300 ms was seen with a
	// load average of 15 on two cores) does not hide the ratio; 30
	// workers from the start, so that the pool need not grow on a starved
	// CPU (where it rightly does not). 10 s, not 6: a starved collector
	// can close a second with no completion of one side, and the verdict
	// needs 5 paired seconds.
	cand, base := slow(250*time.Millisecond), slow(125*time.Millisecond)
	jsonPath := filepath.Join(t.TempDir(), "r.json")
	var out, errb bytes.Buffer
	code := Main(context.Background(), []string{"load", "--target", cand.URL + "/", "--rate", "30", "-d", "10s", "-c", "30", "-q",
		"--baseline-target", base.URL, "--baseline-limit", "p99=25", "--json-output", jsonPath, "--validity", "warn"}, strings.NewReader(""), &out, &errb) // validity warns: a starved generator on a loaded test box is not what this test is about
	if code != ExitFailure {
		t.Fatalf("exit = %d, want 1; stdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
	}
	if !strings.Contains(errb.String(), "regressed against the baseline target") {
		t.Errorf("stderr does not give the paired regression:\n%s", errb.String())
	}
	for _, w := range []string{"baseline:GET /", "Paired A/B run: REGRESSION", "p99=25%"} {
		if !strings.Contains(out.String()+errb.String(), w) {
			t.Errorf("the output does not show %q:\n%s", w, out.String())
		}
	}
	if strings.Contains(errb.String(), "no thresholds") {
		t.Errorf("a paired run, judged by its verdict, is warned that it has no thresholds:\n%s", errb.String())
	}
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Requests int64 `json:"requests"`
		Duet     struct {
			Regressed bool `json:"regressed"`
			Seconds   int  `json:"seconds"`
		} `json:"duet"`
	}
	if err := json.Unmarshal(b, &res); err != nil || !res.Duet.Regressed || res.Duet.Seconds < 5 || res.Requests == 0 {
		t.Errorf("JSON result: %+v, %v; want the paired verdict, regressed", res, err)
	}

	errb.Reset()
	code = Main(context.Background(), []string{"load", "--target", cand.URL + "/", "-d", "1s", "--baseline-target", base.URL, "--baseline-limit", "p42=1"},
		strings.NewReader(""), &out, &errb)
	if code != ExitBadInput || !strings.Contains(errb.String(), "baseline_limits") {
		t.Errorf("--baseline-limit p42=1: exit %d, stderr %s; want 2 naming baseline_limits", code, errb.String())
	}
}
