package compare

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/forgeload/forgeload/internal/pkg/load"
	"github.com/forgeload/forgeload/internal/pkg/load/changepoint"
	"github.com/forgeload/forgeload/internal/pkg/load/outcome/summary"
)

// TestChangePointsStep: over 40 seeded noisy runs whose latencies rose
// by a quarter from run 25, the percentiles' change points are at run 25
// and worse, and the rate and error rate have none.
func TestChangePointsStep(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(29, 3000))
	var runs []*Result
	for i := range 40 {
		slow := 1.0
		if i >= 24 {
			slow = 1.25
		}
		runs = append(runs, noisyRun(t, rng, "run-"+strconv.Itoa(i+1)+".json", slow))
	}
	cs := ChangePoints(runs, changepoint.Options{})
	got := map[string]Change{}
	for _, c := range cs {
		got[c.Metric] = c
	}
	for _, m := range []string{"p50", "p90", "p99"} {
		c, ok := got[m]
		if !ok || c.Point.Index < 23 || c.Point.Index > 25 || !c.Worse() {
			t.Errorf("%s: change %+v, want one at run 25, worse", m, c)
		}
	}
	for _, m := range []string{"rps", "error_rate"} {
		if c, ok := got[m]; ok {
			t.Errorf("%s: change %+v in a metric that kept its level", m, c)
		}
	}
	var b strings.Builder
	if err := WriteChanges(&b, runs, cs); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "Change points over 40 results (run-1.json … run-40.json)") || !strings.Contains(b.String(), "run-25.json (#25)") {
		t.Errorf("table:\n%s", b.String())
	}
	b.Reset()
	_ = WriteChanges(&b, runs[:20], ChangePoints(runs[:20], changepoint.Options{}))
	if !strings.HasPrefix(b.String(), "No change points") {
		t.Errorf("first 20 runs, before the step:\n%s", b.String())
	}
}

// TestLoadHistory: the results of a directory are read in the order of
// their names, numbers compared as numbers; a directory without results
// is bad input that says what to put there.
func TestLoadHistory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, n := range []string{"run-10.json", "run-9.json", "run-100.json", "notes.txt"} {
		r := &load.Result{}
		r.Finish()
		f, err := os.Create(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		sum := summary.Of(r, nil)
		if err := sum.WriteJSON(f); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	runs, err := LoadHistory(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range runs {
		names = append(names, filepath.Base(r.Path))
	}
	if want := []string{"run-9.json", "run-10.json", "run-100.json"}; !slices.Equal(names, want) {
		t.Errorf("history order = %v, want %v", names, want)
	}
	if _, err := LoadHistory(t.TempDir()); err == nil || !strings.Contains(err.Error(), "holds no *.json results") {
		t.Errorf("empty history = %v", err)
	}
}

func TestNaturalCompare(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"a2", "a10", -1}, {"a10", "a2", 1}, {"a02", "a2", 0}, {"b1", "a2", 1}, {"2026-01-09", "2026-01-10", -1}, {"x", "x1", -1},
	} {
		if got := naturalCompare(tc.a, tc.b); got != tc.want && !(tc.want != 0 && got*tc.want > 0) {
			t.Errorf("naturalCompare(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}
