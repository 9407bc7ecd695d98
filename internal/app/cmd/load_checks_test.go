package cmd

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadCommandChecksFailErrorBodies is issue 28's case through
// `forgeload load`: a target that answers 200 with {"error": …} passed
// every threshold and exited 0. With a body check, the requests fail, the
// summary names the check, the JSON result counts it, and the run exits 1.
func TestLoadCommandChecksFailErrorBodies(t *testing.T) {
	parallel(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"error": "database is down"}`)
	}))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "api.yaml")
	if err := os.WriteFile(cfg, []byte("target: "+srv.URL+"/\nconcurrency: 2\ntotal: 20\nchecks:\n  - status: 200\n  - body_not_contains: error\nthresholds:\n  - checks:rate > 99%\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	jsonOut := filepath.Join(dir, "summary.json")
	code, stdout, stderr := runMain(t, "load", "-f", cfg, "--json-output", jsonOut, "-q")
	if code != ExitFailure {
		t.Fatalf("exit code = %d, want 1; stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, want := range []string{
		"Checks: 50.00% passed (20 of 40)",
		`FAIL  checks[1] body does not contain "error"`,
		"FAIL  checks:rate > 99% (0.99)",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	b, err := os.ReadFile(jsonOut)
	if err != nil {
		t.Fatal(err)
	}
	var sum struct {
		Errors       int64            `json:"errors"`
		ErrorClasses map[string]int64 `json:"error_classes"`
		Checks       struct {
			Checks []struct {
				Name           string
				Passed, Failed int64
			}
		}
	}
	if err := json.Unmarshal(b, &sum); err != nil || sum.Errors != 20 || sum.ErrorClasses["check"] != 20 || len(sum.Checks.Checks) != 2 || sum.Checks.Checks[1].Failed != 20 {
		t.Errorf("json summary = %s (err %v), want 20 failed requests of class check and the checks counted", b, err)
	}
}
