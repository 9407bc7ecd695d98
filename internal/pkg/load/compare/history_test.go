package compare

import (
	"bytes"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/forgeload/forgeload/internal/pkg/load"
	"github.com/forgeload/forgeload/internal/pkg/load/outcome/summary"
	"github.com/forgeload/forgeload/internal/pkg/load/threshold"
)

// Noise of the seeded runs: every run draws a machine factor with a
// spread of machineNoise (run-to-run noise, as a shared CI runner has),
// then 6 s at about 300 requests per second whose latencies are 20 ms
// times the factor times a random service time with a long tail, and
// fails each request with probability 0.2%.
const (
	machineNoise = 0.05
	noisySeconds = 6
	noisyRPS     = 300
)

// noisyRun builds one seeded run, slow times slower than the others, as
// [Read] would give it back: the summary, the per-second counts and the
// latency histogram. (Building it through load.Result and its JSON, as
// run does, makes the trials too slow under the race detector.)
func noisyRun(t testing.TB, rng *rand.Rand, name string, slow float64) *Result {
	t.Helper()
	machine := math.Exp(machineNoise * rng.NormFloat64())
	res := &Result{Path: name, Hist: load.NewHistogram()}
	s := &res.Summary
	s.SchemaVersion, s.ElapsedSeconds = summary.SchemaVersion, noisySeconds
	for sec := range noisySeconds {
		n := noisyRPS + int(math.Round(3*rng.NormFloat64()))
		for range n {
			service := 0.5 + 0.5*rng.ExpFloat64()
			res.Hist.Record(time.Duration(float64(20*time.Millisecond) * machine * slow * service))
			if rng.Float64() < 0.002 {
				s.Errors++
			}
		}
		s.Requests += int64(n)
		s.Seconds = append(s.Seconds, summary.SecondSummary{Second: sec, Requests: int64(n)})
	}
	s.RPS = float64(s.Requests) / noisySeconds
	s.ErrorRate = float64(s.Errors) / float64(s.Requests)
	q := func(p float64) float64 { return ms(res.Hist.Quantile(p)) }
	s.Latency = summary.Latency{P50: q(0.5), P90: q(0.9), P95: q(0.95), P99: q(0.99), P999: q(0.999), Min: ms(res.Hist.Min()), Max: ms(res.Hist.Max()), Mean: ms(res.Hist.Mean())}
	return res
}

// noisyLimits are tighter than the run-to-run noise, as teams set them:
// one earlier run as the baseline then fails unchanged code often.
var noisyLimits = Limits{"rps": 0.05, "p50": 0.05, "p99": 0.05, "error_rate": 0.005}

// trials runs n seeded trials of a history of bases runs and a candidate
// slow times slower, and counts those that judged a regression against
// the history and against its newest run alone.
func trials(t testing.TB, n, bases int, slow float64) (history, single int) {
	t.Helper()
	for trial := range n {
		rng := rand.New(rand.NewPCG(29, uint64(trial)))
		runs := make([]*Result, bases)
		for i := range runs {
			runs[i] = noisyRun(t, rng, "base"+strconv.Itoa(i)+".json", 1)
		}
		cand := noisyRun(t, rng, "new.json", slow)
		if Regressed(Compare(History(runs), cand, noisyLimits)) {
			history++
		}
		if Regressed(Compare(runs[bases-1], cand, noisyLimits)) {
			single++
		}
	}
	return history, single
}

// TestHistoryFalseAlarms: with run-to-run noise larger than the limits,
// a history of 5 runs judges unchanged code a regression in at most 1 of
// 20 seeded trials (one earlier run as the baseline does so far more
// often) and catches a 2× slower candidate in all 20.
func TestHistoryFalseAlarms(t *testing.T) {
	t.Parallel()
	hist, single := trials(t, 20, 5, 1)
	t.Logf("unchanged candidate: %d of 20 regressed against 5 runs, %d of 20 against one", hist, single)
	if hist > 1 {
		t.Errorf("unchanged candidate regressed in %d of 20 trials against a history of 5 runs, want at most 1", hist)
	}
	if single <= hist {
		t.Errorf("one earlier run regressed in %d of 20 trials, no more than the history's %d: the seeded noise does not test the history", single, hist)
	}
	caught, _ := trials(t, 20, 5, 2)
	if caught != 20 {
		t.Errorf("a 2× slower candidate was caught in %d of 20 trials, want 20", caught)
	}
}

// TestHistoryFalseAlarmRates measures the rates docs/results.md quotes,
// over FORGELOAD_TRIALS trials (skipped when unset): it takes minutes.
func TestHistoryFalseAlarmRates(t *testing.T) {
	t.Parallel()
	n, _ := strconv.Atoi(os.Getenv("FORGELOAD_TRIALS"))
	if n <= 0 {
		t.Skip("set FORGELOAD_TRIALS=N to measure the false-alarm and detection rates over N trials")
	}
	for _, bases := range []int{3, 5, 10} {
		fa, single := trials(t, n, bases, 1)
		slow12, _ := trials(t, n, bases, 1.2)
		slow2, _ := trials(t, n, bases, 2)
		t.Logf("%d bases: false alarms %d/%d (one base: %d/%d); caught 1.2× %d/%d, 2× %d/%d", bases, fa, n, single, n, slow12, n, slow2, n)
	}
}

// TestHistoryOutlierRun: one earlier run three times slower than the
// others (a noisy neighbour) moves neither the baseline nor the noise
// bound much, so a 2× slower candidate is still a regression and an
// unchanged one is not.
func TestHistoryOutlierRun(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(29, 1000))
	runs := []*Result{noisyRun(t, rng, "a", 1), noisyRun(t, rng, "b", 3), noisyRun(t, rng, "c", 1), noisyRun(t, rng, "d", 1), noisyRun(t, rng, "e", 1)}
	h := History(runs)
	if d := find(t, Compare(h, noisyRun(t, rng, "slow", 2), noisyLimits), "p99"); !d.Regressed {
		t.Errorf("2× slower p99 against a history with one outlier = %+v, want a regression", d)
	}
	if d := find(t, Compare(h, noisyRun(t, rng, "same", 1), noisyLimits), "p99"); d.Regressed || d.Old > 1.2*runs[0].Latency.P99 {
		t.Errorf("unchanged p99 against a history with one outlier = %+v, want no regression and the median of the others", d)
	}
}

// TestHistoryTable: the comparison against a history says what it stands
// for and prints the run-to-run bound; one run is compared as before.
func TestHistoryTable(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(29, 2000))
	runs := []*Result{noisyRun(t, rng, "a.json", 1), noisyRun(t, rng, "b.json", 1), noisyRun(t, rng, "c.json", 1)}
	h := History(runs)
	if h.Path != "median of 3 runs (a.json, b.json, c.json)" {
		t.Errorf("History path = %q", h.Path)
	}
	if History(runs[:1]) != runs[0] || History(nil) != nil {
		t.Errorf("History of one run is not that run, or of none not nil")
	}
	ds := Compare(h, noisyRun(t, rng, "new.json", 1), noisyLimits)
	p99 := find(t, ds, "p99")
	vals := []float64{runs[0].Latency.P99, runs[1].Latency.P99, runs[2].Latency.P99}
	slices.Sort(vals)
	if p99.Old != vals[1] || p99.Runs != 3 || p99.RunBound <= 0 {
		t.Errorf("p99 delta = %+v, want the median %v of 3 runs and a run-to-run bound", p99, vals[1])
	}
	var b bytes.Buffer
	if err := WriteText(&b, h.Path, "new.json", ds); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"median of 3 runs", "runs ±", "× MAD"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	if d := find(t, Compare(runs[0], runs[1], nil), "p99"); d.Runs != 1 || d.RunBound != 0 || strings.Contains(d.Noise, "runs ±") {
		t.Errorf("one earlier run: %+v, want no run-to-run bound", d)
	}
}

// TestHistoryThresholds: a baseline threshold against a history is
// bounded by the median of the metric in each run, for any percentile.
func TestHistoryThresholds(t *testing.T) {
	t.Parallel()
	runs := []*Result{run(t, 5, 50, 10*time.Millisecond, 0), run(t, 5, 50, 30*time.Millisecond, 0), run(t, 5, 50, 20*time.Millisecond, 0)}
	ths, err := threshold.ParseAll([]string{"http_req_duration:p97 < baseline * 1.10", "http_req_failed:rate <= baseline"})
	if err != nil {
		t.Fatal(err)
	}
	outs := threshold.EvaluateBaseline(ths, run(t, 5, 50, 21*time.Millisecond, 0), History(runs))
	want := runs[2].Hist.Quantile(0.97).Seconds()
	if o := outs[0]; o.Err != nil || !o.Passed || o.BaselineValue != want {
		t.Errorf("p97 against the history = %+v, want a pass against the middle run's %v", o, want)
	}
	if o := outs[1]; o.Err != nil || !o.Passed {
		t.Errorf("error rate against the history = %+v, want a pass", o)
	}
}

// TestCriticalMADTable re-derives a few entries of the critical values by
// a smaller seeded simulation, within 10%.
func TestCriticalMADTable(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 7))
	for _, n := range []int{3, 5, 10} {
		const draws = 50000
		ts := make([]float64, draws)
		xs := make([]float64, n)
		for i := range ts {
			for j := range xs {
				xs[j] = rng.NormFloat64()
			}
			ts[i] = math.Abs(rng.NormFloat64()-median(xs)) / MAD(xs)
		}
		slices.Sort(ts)
		got := ts[draws*95/100]
		if want := CriticalMAD(n); math.Abs(got-want) > 0.1*want {
			t.Errorf("simulated critical value for %d runs = %.2f, table has %.2f", n, got, want)
		}
	}
	if !math.IsInf(CriticalMAD(1), 1) || CriticalMAD(50) != CriticalMAD(20) {
		t.Errorf("CriticalMAD(1) = %v, CriticalMAD(50) = %v", CriticalMAD(1), CriticalMAD(50))
	}
}

// TestLimitWithoutUnit: a limit without a unit is a percent, and is
// written back with its unit.
func TestLimitWithoutUnit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, echo string }{
		{"p99=10", "p99=10%"},
		{"p99=10%", "p99=10%"},
		{"error_rate=0.5", "error_rate=+0.5 pts"},
		{"rps=0.05", "rps=0.05%"},
	} {
		k, v, err := ParseLimit(tc.in)
		if err != nil {
			t.Fatalf("ParseLimit(%q): %v", tc.in, err)
		}
		if got := FormatLimit(k, v); got != tc.echo {
			t.Errorf("FormatLimit(ParseLimit(%q)) = %q, want %q", tc.in, got, tc.echo)
		}
	}
}

// TestErrorRateLimitInPoints: an error rate 0.2 points higher, beyond
// noise, is within a limit of half a point.
func TestErrorRateLimitInPoints(t *testing.T) {
	t.Parallel()
	old := run(t, 10, 500, 10*time.Millisecond, 0)
	cur := run(t, 10, 500, 10*time.Millisecond, 10) // 0.2% of 5000
	d := find(t, Compare(old, cur, Limits{"error_rate": 0.005}), "error_rate")
	if !d.Significant || d.Regressed {
		t.Errorf("error rate 0 → 0.2%% against a limit of 0.5 points = %+v, want beyond noise but within the limit", d)
	}
	d = find(t, Compare(old, cur, Limits{"error_rate": 0.001}), "error_rate")
	if !d.Regressed {
		t.Errorf("error rate 0 → 0.2%% against a limit of 0.1 points = %+v, want a regression", d)
	}
}
