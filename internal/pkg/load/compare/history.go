package compare

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/forgeload/forgeload/internal/pkg/load"
	"github.com/forgeload/forgeload/internal/pkg/load/outcome/summary"
	"github.com/forgeload/forgeload/internal/pkg/load/threshold"
)

// criticalMAD[n-2] is the critical value of the run-to-run test with n
// earlier runs: the 95th percentile of |x − median|/MAD, where the n runs
// and the new run x are independent draws of one normal distribution and
// MAD is the median absolute deviation of the n runs from their median.
// It was found by simulation (a million draws per n, seeded; see
// TestCriticalMADTable) because the MAD of a few runs is far from its
// large-sample value: with 3 runs the MAD is the smaller of two distances
// and is often near zero, so the bound must be wide. Above 20 runs the
// value for 20 is used, which errs towards fewer alarms.
var criticalMAD = [...]float64{
	21.91, 32.09, 9.70, 8.86, 6.25, 5.99, 5.08, 4.96, 4.50, 4.44, // n = 2 … 11
	4.19, 4.14, 3.96, 3.92, 3.80, 3.78, 3.68, 3.67, 3.59, // n = 12 … 20
}

// CriticalMAD returns the run-to-run critical value for n earlier runs
// (n ≥ 2): a new run of unchanged code lies further than CriticalMAD(n)
// MADs from the runs' median in 5% of cases under normal run-to-run noise
// (2.5% on the worse side). It returns +Inf for n < 2, where the spread
// between runs is unknown.
func CriticalMAD(n int) float64 {
	switch {
	case n < 2:
		return math.Inf(1)
	case n-2 >= len(criticalMAD):
		return criticalMAD[len(criticalMAD)-1]
	}
	return criticalMAD[n-2]
}

// median returns the median of xs (the mean of the middle two for an even
// count), 0 for none. xs is not changed.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// MAD returns the median absolute deviation of xs from their median.
func MAD(xs []float64) float64 {
	m := median(xs)
	dev := make([]float64, len(xs))
	for i, x := range xs {
		dev[i] = math.Abs(x - m)
	}
	return median(dev)
}

func medianDuration(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// History returns the baseline that stands for several earlier runs (the
// newest last): its summary holds the median of each of their metrics, its
// Runs are the runs, and [Compare] judges a new run against it with their
// run-to-run spread as well as the within-run noise. As a threshold
// source it gives the median of a metric measured in each run. With one
// run, History returns that run; with none, nil.
func History(runs []*Result) *Result {
	switch len(runs) {
	case 0:
		return nil
	case 1:
		return runs[0]
	}
	names := make([]string, len(runs))
	for i, r := range runs {
		names[i] = r.Path
	}
	h := &Result{Path: fmt.Sprintf("median of %d runs (%s)", len(runs), strings.Join(names, ", ")), Runs: slices.Clone(runs)}
	s := &h.Summary
	s.SchemaVersion = summary.SchemaVersion
	of := func(get func(*Result) float64) float64 {
		vs := make([]float64, len(runs))
		for i, r := range runs {
			vs[i] = get(r)
		}
		return median(vs)
	}
	s.ElapsedSeconds = of(func(r *Result) float64 { return r.ElapsedSeconds })
	s.Requests = int64(math.Round(of(func(r *Result) float64 { return float64(r.Requests) })))
	s.Errors = int64(math.Round(of(func(r *Result) float64 { return float64(r.Errors) })))
	s.ErrorRate = of(func(r *Result) float64 { return r.ErrorRate })
	s.RPS = of(func(r *Result) float64 { return r.RPS })
	s.Latency = summary.Latency{
		P50: of(func(r *Result) float64 { return r.Latency.P50 }), P90: of(func(r *Result) float64 { return r.Latency.P90 }),
		P95: of(func(r *Result) float64 { return r.Latency.P95 }), P99: of(func(r *Result) float64 { return r.Latency.P99 }),
		P999: of(func(r *Result) float64 { return r.Latency.P999 }), Max: of(func(r *Result) float64 { return r.Latency.Max }),
		Min: of(func(r *Result) float64 { return r.Latency.Min }), Mean: of(func(r *Result) float64 { return r.Latency.Mean }),
	}
	s.SUT = historySUT(runs)
	return h
}

// historySUT is the median use of each system under test measured in
// every run.
func historySUT(runs []*Result) []load.ResourceSummary {
	var out []load.ResourceSummary
	for _, first := range runs[0].SUT {
		all := make([]load.ResourceSummary, 0, len(runs))
		for _, r := range runs {
			if i := slices.IndexFunc(r.SUT, func(s load.ResourceSummary) bool { return s.Target == first.Target }); i >= 0 {
				all = append(all, r.SUT[i])
			}
		}
		if len(all) < len(runs) {
			continue
		}
		of := func(get func(load.ResourceSummary) float64) float64 {
			vs := make([]float64, len(all))
			for i, s := range all {
				vs[i] = get(s)
			}
			return median(vs)
		}
		out = append(out, load.ResourceSummary{
			Target:        first.Target,
			CPUCoresMean:  of(func(s load.ResourceSummary) float64 { return s.CPUCoresMean }),
			CPUCoresMax:   of(func(s load.ResourceSummary) float64 { return s.CPUCoresMax }),
			CPUPctMean:    of(func(s load.ResourceSummary) float64 { return s.CPUPctMean }),
			CPUPctMax:     of(func(s load.ResourceSummary) float64 { return s.CPUPctMax }),
			MemBytesMax:   of(func(s load.ResourceSummary) float64 { return s.MemBytesMax }),
			MemBytesMean:  of(func(s load.ResourceSummary) float64 { return s.MemBytesMean }),
			MemLimitBytes: of(func(s load.ResourceSummary) float64 { return s.MemLimitBytes }),
		})
	}
	return out
}

// runs returns the earlier runs r stands for: its Runs, or r itself.
func (r *Result) runs() []*Result {
	if len(r.Runs) > 0 {
		return r.Runs
	}
	return []*Result{r}
}

var _ threshold.Runs = (*Result)(nil)

// BaselineRuns returns the runs a history baseline stands for, so that a
// baseline threshold is the median of the metric measured in each; nil
// for a single run.
func (r *Result) BaselineRuns() []threshold.Source {
	if len(r.Runs) == 0 {
		return nil
	}
	out := make([]threshold.Source, len(r.Runs))
	for i, x := range r.Runs {
		out[i] = x
	}
	return out
}

// runNoise applies the run-to-run test to d, whose Old is the median of
// vals (the metric in each earlier run, in d's unit): the change is beyond
// run-to-run noise when it exceeds CriticalMAD(n) times their MAD. With
// one run there is no spread to judge and d is left as it is.
func runNoise(d *Delta, vals []float64) {
	d.Runs = len(vals)
	if len(vals) < 2 {
		return
	}
	mad := MAD(vals)
	d.RunBound = CriticalMAD(len(vals)) * mad
	beyond := math.Abs(d.New-d.Old) > d.RunBound
	d.Significant = d.Significant && beyond
	d.Noise += fmt.Sprintf("; runs ±%s (%.2f × MAD %s of %d)", strings.TrimPrefix(fmtVal(*d, d.RunBound), "+"), CriticalMAD(len(vals)), fmtVal(*d, mad), len(vals))
}
