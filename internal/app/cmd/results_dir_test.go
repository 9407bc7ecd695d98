package cmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/forgeload/forgeload/internal/pkg/load"
)

// TestLoadWritesResultsByDefault: a plain `forgeload load` leaves its HTML
// report and JSON result in a directory of its own under --results-dir
// and prints where (it left nothing to look at); a file named by a flag
// or key is written instead, and --results-dir ” writes none.
func TestLoadWritesResultsByDefault(t *testing.T) {
	parallel(t)
	srv, _ := loadTarget(t)
	dir := t.TempDir()
	code, _, stderr := runMain(t, "load", "--target", srv.URL+"/", "--total", "3", "-q", "--results-dir", dir)
	if code != ExitOK {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	report, result := announced(t, stderr, "report"), announced(t, stderr, "result")
	if filepath.Dir(report) != filepath.Dir(result) || filepath.Dir(filepath.Dir(report)) != dir || !strings.HasPrefix(filepath.Base(filepath.Dir(report)), "load-") {
		t.Errorf("report %s and result %s, want both in one load-* directory under %s", report, result, dir)
	}
	if b, err := os.ReadFile(report); err != nil || !strings.Contains(string(b), "<html") {
		t.Errorf("report %s: %v, %.100q; want the HTML report", report, err, b)
	}
	var sum struct {
		Requests int64 `json:"requests"`
	}
	if b, err := os.ReadFile(result); err != nil || json.Unmarshal(b, &sum) != nil || sum.Requests != 3 {
		t.Errorf("result %s: %v, %+v; want the JSON result of 3 requests", result, err, sum)
	}
	// Files named by the flags replace the defaults: no directory is made.
	named := t.TempDir()
	code, _, stderr = runMain(t, "load", "--target", srv.URL+"/", "--total", "1", "-q", "--results-dir", filepath.Join(named, "unused"),
		"--html-output", filepath.Join(named, "r.html"), "--json-output", filepath.Join(named, "r.json"))
	if _, err := os.Stat(filepath.Join(named, "unused")); code != ExitOK || err == nil || strings.Contains(stderr, "report: ") {
		t.Errorf("with --html-output and --json-output: exit %d, results dir made: %v; stderr:\n%s", code, err == nil, stderr)
	}
	code, _, stderr = runMain(t, "load", "--target", srv.URL+"/", "--total", "1", "-q", "--results-dir", "")
	if code != ExitOK || strings.Contains(stderr, "report: ") {
		t.Errorf("--results-dir '': exit %d, want 0 and no report; stderr:\n%s", code, stderr)
	}
}

// TestLoadDashboardEndsWithTheRun: without --dashboard-linger, a run with
// the dashboard (the flag or the config's dashboard: true) exits when the
// run ends, so that a script does not hang (it served until Ctrl-C).
func TestLoadDashboardEndsWithTheRun(t *testing.T) {
	parallel(t)
	srv, _ := loadTarget(t)
	cfg := filepath.Join(t.TempDir(), "dash.yaml")
	if err := os.WriteFile(cfg, []byte("target: "+srv.URL+"/\ntotal: 3\ndashboard: true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"load", "--target", srv.URL + "/", "--total", "3", "-q", "--dashboard"},
		{"load", cfg, "-q"},
	} {
		code, _, stderr := runMain(t, args...) // returns: the test's deadline bounds a hang
		if code != ExitOK || !strings.Contains(stderr, "dashboard: http://127.0.0.1:") || strings.Contains(stderr, "press Ctrl-C") {
			t.Errorf("forgeload %v: exit %d, want 0 with a dashboard and no wait; stderr:\n%s", args, code, stderr)
		}
	}
}

// announced is the path printed on stderr as "<what>: <path>".
func announced(t *testing.T, stderr, what string) string {
	t.Helper()
	for line := range strings.SplitSeq(stderr, "\n") {
		if p, ok := strings.CutPrefix(line, what+": "); ok {
			return p
		}
	}
	t.Fatalf("stderr does not say where the %s is:\n%s", what, stderr)
	return ""
}

func TestPlannedDuration(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		o    load.Options
		want time.Duration
	}{
		{load.Options{Duration: 30 * time.Second, Rate: 5}, 30 * time.Second},
		{load.Options{Stages: []load.Stage{{Duration: 10 * time.Second}, {Duration: 5 * time.Second}}}, 15 * time.Second},
		{load.Options{Stages: []load.Stage{{Duration: 10 * time.Second}}, Rate: 5}, 0}, // runs on at the rate after them
		{load.Options{VUStages: []load.VUStage{{Duration: 20 * time.Second}}}, 20 * time.Second},
		{load.Options{Total: 100}, 0},
	} {
		if got := plannedDuration(&tc.o); got != tc.want {
			t.Errorf("plannedDuration(%+v) = %v, want %v", tc.o, got, tc.want)
		}
	}
}
