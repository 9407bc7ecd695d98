package compare

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/forgeload/forgeload/internal/pkg/load/changepoint"
)

// Change is where one metric's level shifted over a history of results.
type Change struct {
	// Metric names it, as a [Delta] does; Unit is its unit.
	Metric, Unit   string
	HigherIsBetter bool
	// Path names the first result of the new level.
	Path string
	// Point is the change point: its index in the history, the mean level
	// before and after, and its p-value.
	Point changepoint.Point
}

// Worse reports whether the new level is worse than the one before.
func (c Change) Worse() bool {
	if c.HigherIsBetter {
		return c.Point.After < c.Point.Before
	}
	return c.Point.After > c.Point.Before
}

var historyMetrics = []struct {
	name, unit string
	higher     bool
	get        func(*Result) float64
}{
	{"rps", "req/s", true, func(r *Result) float64 { return r.RPS }},
	{"p50", "ms", false, func(r *Result) float64 { return r.Latency.P50 }},
	{"p90", "ms", false, func(r *Result) float64 { return r.Latency.P90 }},
	{"p95", "ms", false, func(r *Result) float64 { return r.Latency.P95 }},
	{"p99", "ms", false, func(r *Result) float64 { return r.Latency.P99 }},
	{"p99.9", "ms", false, func(r *Result) float64 { return r.Latency.P999 }},
	{"error_rate", "%", false, func(r *Result) float64 { return 100 * r.ErrorRate }},
}

// ChangePoints returns where the rate, each percentile and the error rate
// shifted level over runs (oldest first), found by [changepoint.Detect]
// with o, by metric and then by position.
func ChangePoints(runs []*Result, o changepoint.Options) []Change {
	var out []Change
	for _, m := range historyMetrics {
		xs := make([]float64, len(runs))
		for i, r := range runs {
			xs[i] = m.get(r)
		}
		for _, p := range changepoint.Detect(xs, o) {
			out = append(out, Change{Metric: m.name, Unit: m.unit, HigherIsBetter: m.higher, Path: runs[p.Index].Path, Point: p})
		}
	}
	return out
}

// MaxHistory bounds how many results LoadHistory reads.
const MaxHistory = 2000

// LoadHistory reads every *.json result in dir, in the order of their
// names with runs of digits compared as numbers (run-9.json before
// run-10.json): name them by run number or date, oldest first.
func LoadHistory(dir string) ([]*Result, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read history: %w", err)
	}
	var names []string
	for _, e := range ents {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".json") {
			names = append(names, e.Name())
		}
	}
	if len(names) == 0 {
		return nil, errors.New("read history: " + dir + " holds no *.json results: put the JSON results of earlier runs there (forgeload load --json-output, or result.json from the run artifacts)")
	}
	if len(names) > MaxHistory {
		return nil, fmt.Errorf("read history: %s holds %d results, more than %d: keep the newest", dir, len(names), MaxHistory)
	}
	slices.SortFunc(names, func(a, b string) int { return cmp.Or(naturalCompare(a, b), strings.Compare(a, b)) })
	runs := make([]*Result, 0, len(names))
	for _, n := range names {
		r, err := Load(filepath.Join(dir, n))
		if err != nil {
			return nil, err
		}
		runs = append(runs, r)
	}
	return runs, nil
}

// naturalCompare orders names with their runs of digits compared as
// numbers.
func naturalCompare(a, b string) int {
	for a != "" && b != "" {
		da, db := digitsPrefix(a), digitsPrefix(b)
		if da != "" && db != "" {
			na, _ := strconv.ParseUint(strings.TrimLeft(da, "0"), 10, 64)
			nb, _ := strconv.ParseUint(strings.TrimLeft(db, "0"), 10, 64)
			if c := compareUint(na, nb); c != 0 {
				return c
			}
			a, b = a[len(da):], b[len(db):]
			continue
		}
		if a[0] != b[0] {
			return compareUint(uint64(a[0]), uint64(b[0]))
		}
		a, b = a[1:], b[1:]
	}
	return len(a) - len(b)
}

func digitsPrefix(s string) string {
	i := strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' })
	if i < 0 {
		return s
	}
	return s[:i]
}

func compareUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// WriteChanges writes the change points found over runs as a table.
func WriteChanges(w io.Writer, runs []*Result, cs []Change) error {
	if len(cs) == 0 {
		_, err := fmt.Fprintf(w, "No change points: every metric kept its level over the %d results.\n", len(runs))
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "Change points over %d results (%s … %s):\n", len(runs), runs[0].Path, runs[len(runs)-1].Path)
	fmt.Fprintln(tw, "  metric\tfrom\tbefore\tafter\tchange\tverdict\tp")
	for _, c := range cs {
		d := Delta{Metric: c.Metric, Unit: c.Unit, Old: c.Point.Before, New: c.Point.After, Change: c.Point.After - c.Point.Before, Rel: c.Point.Rel()}
		v := "better"
		if c.Worse() {
			v = "worse"
		}
		fmt.Fprintf(tw, "  %s\t%s (#%d)\t%s\t%s\t%s\t%s\t%.1g\n", c.Metric, c.Path, c.Point.Index+1, fmtVal(d, d.Old), fmtVal(d, d.New), fmtChange(d), v, c.Point.P)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write change points: %w", err)
	}
	return nil
}
