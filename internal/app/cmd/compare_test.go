package cmd

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/forgeload/forgeload/internal/pkg/load"
	"github.com/forgeload/forgeload/internal/pkg/load/outcome/summary"
)

// writeResult writes the JSON result of a 10 s run at 100 requests per
// second whose latencies spread evenly over base…base+10 ms.
func writeResult(t *testing.T, dir, name string, base time.Duration) string {
	t.Helper()
	r := &load.Result{Open: true, TargetRPS: 100}
	for s := range 10 {
		snap := &load.Snapshot{Second: s, TargetRPS: 100}
		es := load.EndpointStats{Name: "home", Stats: load.Stats{Latency: load.NewHistogram()}}
		for i := range 100 {
			es.Latency.Record(base + time.Duration(i*100)*time.Microsecond)
			es.Requests++
		}
		snap.Endpoints = []load.EndpointStats{es}
		snap.Stats.Merge(&es.Stats)
		r.AddSnapshot(snap)
	}
	r.Elapsed = 10 * time.Second
	r.Finish()
	path := filepath.Join(dir, name)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sum := summary.Of(r, nil)
	if err := sum.WriteJSON(f); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestCompareHistory: compare takes several earlier results and the new
// one last, judges against their median and spread, and reads a limit
// without a unit as a percent, saying so.
func TestCompareHistory(t *testing.T) {
	parallel(t)
	dir := t.TempDir()
	b1 := writeResult(t, dir, "b1.json", 20*time.Millisecond)
	b2 := writeResult(t, dir, "b2.json", 24*time.Millisecond)
	b3 := writeResult(t, dir, "b3.json", 22*time.Millisecond)
	b4 := writeResult(t, dir, "b4.json", 21*time.Millisecond)
	b5 := writeResult(t, dir, "b5.json", 23*time.Millisecond)
	same := writeResult(t, dir, "same.json", 25*time.Millisecond)
	slow := writeResult(t, dir, "slow.json", 60*time.Millisecond)

	// 25 ms is 9% over the newest run and beyond its within-run noise,
	// but within the five runs' spread.
	code, stdout, stderr := runMain(t, "compare", b1, b2, b3, b4, b5, same, "--limit", "p99=5")
	if code != ExitOK || !strings.Contains(stdout, "median of 5 runs ("+b1+", "+b2+", "+b3+", "+b4+", "+b5+")") || !strings.Contains(stdout, "runs ±") {
		t.Errorf("compare 5 runs with an unchanged one: exit %d, want 0 and a table against their median:\n%s%s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "--limit p99=5 read as p99=5%") {
		t.Errorf("stderr lacks the limit echoed with its unit: %q", stderr)
	}
	if code, stdout, _ = runMain(t, "compare", b5, same, "--limit", "p99=5"); code != ExitFailure {
		t.Errorf("compare one run with a 9%% slower one: exit %d, want 1:\n%s", code, stdout)
	}
	if code, stdout, _ = runMain(t, "compare", b1, b2, b3, b4, b5, slow, "--limit", "p99=10%"); code != ExitFailure || !strings.Contains(stdout, "REGRESSION") {
		t.Errorf("compare 5 runs with a 2× slower one: exit %d, want 1 with a REGRESSION row:\n%s", code, stdout)
	}
	// Three runs say little about their spread, and the table says so.
	if code, stdout, _ = runMain(t, "compare", b1, b2, b3, slow); code != ExitOK || !strings.Contains(stdout, "only 3 earlier runs") {
		t.Errorf("compare 3 runs: exit %d, want 0 and a note on the few runs:\n%s", code, stdout)
	}
	if code, _, stderr = runMain(t, "compare", b1); code != ExitBadInput {
		t.Errorf("compare with one file: exit %d, want 2; stderr %q", code, stderr)
	}
}

// TestCompareHistoryDir: compare --history DIR reports where p99 stepped
// up, naming the first result of the new level, from results read in the
// order of their names; it takes no files beside the directory.
func TestCompareHistoryDir(t *testing.T) {
	parallel(t)
	dir := t.TempDir()
	for i := 1; i <= 24; i++ {
		base := 20*time.Millisecond + time.Duration(i%3)*300*time.Microsecond
		if i >= 17 {
			base += 8 * time.Millisecond
		}
		writeResult(t, dir, fmt.Sprintf("run-%d.json", i), base)
	}
	code, stdout, stderr := runMain(t, "compare", "--history", dir)
	if code != ExitOK || !strings.Contains(stdout, "Change points over 24 results") || !regexp.MustCompile(`p99\s+\S*run-17\.json \(#17\).*worse`).MatchString(stdout) {
		t.Errorf("compare --history: exit %d, want 0 and a worse p99 from run-17.json:\n%s%s", code, stdout, stderr)
	}
	if code, _, stderr = runMain(t, "compare", "--history", dir, filepath.Join(dir, "run-1.json")); code != ExitBadInput || !strings.Contains(stderr, "give no files") {
		t.Errorf("compare --history with a file: exit %d, stderr %q; want 2", code, stderr)
	}
	if code, _, stderr = runMain(t, "compare", "--history", t.TempDir()); code != ExitBadInput || !strings.Contains(stderr, "holds no *.json results") {
		t.Errorf("compare --history of an empty directory: exit %d, stderr %q; want 2", code, stderr)
	}
}

// TestLoadBaselineHistory: --baseline repeated makes the median of the
// results the baseline of the run's thresholds and comparison.
func TestLoadBaselineHistory(t *testing.T) {
	parallel(t)
	tg := newTarget(t)
	dir := t.TempDir()
	var args []string
	for i, base := range []time.Duration{200, 240, 220} {
		args = append(args, "--baseline", writeResult(t, dir, fmt.Sprintf("b%d.json", i+1), base*time.Millisecond))
	}
	code, stdout, stderr := runMain(t, append([]string{"load", "--target", tg.URL + "/", "--total", "20", "-q", "--threshold", "http_req_duration:p99 < baseline * 1.10"}, args...)...)
	if code != ExitOK || !strings.Contains(stdout, "Comparison: median of 3 runs ("+filepath.Join(dir, "b1.json")) || !strings.Contains(stdout, "(baseline 229.") {
		t.Errorf("load against 3 baselines: exit %d, want 0 and the median of the three as the baseline:\n%s%s", code, stdout, stderr)
	}
}
