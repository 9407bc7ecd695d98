package duet

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/forgeload/forgeload/internal/pkg/load/compare"
)

// The bootstrap's settings: fixed, so that a run's verdict is
// reproducible from its seconds.
const (
	// Seed seeds the bootstrap's resampling.
	Seed = 29
	// Resamples is the number of bootstrap resamples.
	Resamples = 2000
	// MinSeconds is the fewest paired seconds that are judged.
	MinSeconds = 5
)

// DefaultLimits are the limits of a paired run that sets none: 10%
// slower at p50, p95 or p99, or one percentage point more errors.
func DefaultLimits() compare.Limits {
	return compare.Limits{"p50": 0.10, "p95": 0.10, "p99": 0.10, "error_rate": 0.01}
}

// Verdict is the judgement of a paired run.
type Verdict struct {
	// Deltas are p50, p95, p99 and the error rate: Old is the baseline
	// side's whole-run value, New the candidate's; Significant and
	// Regressed are decided on the paired seconds, whose estimate and
	// interval Noise states.
	Deltas []compare.Delta
	// Seconds is the number of paired seconds judged: those in which
	// both sides completed a request successfully.
	Seconds int
	// Candidate and Baseline name the two targets (their origins).
	Candidate, Baseline string
	// TooShort is set when there were fewer than MinSeconds of them:
	// nothing was judged and the run must not pass.
	TooShort bool
}

// Regressed reports whether any metric regressed beyond its limit.
func (v Verdict) Regressed() bool { return compare.Regressed(v.Deltas) }

// Err says why the paired run fails, or nil.
func (v Verdict) Err() error {
	if v.TooShort {
		return fmt.Errorf("paired A/B run: only %d seconds in which both targets answered a request successfully (want at least %d): run longer, or check the summary's errors for the target that answered nothing", v.Seconds, MinSeconds)
	}
	var names []string
	for _, d := range v.Deltas {
		if d.Regressed {
			names = append(names, fmt.Sprintf("%s %s, beyond the limit %s", d.Metric, d.Noise, compare.FormatLimit(d.Metric, d.Limit)))
		}
	}
	if len(names) == 0 {
		return nil
	}
	return fmt.Errorf("paired A/B run: the candidate regressed against the baseline target: %s", joinSemi(names))
}

func joinSemi(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += "; "
		}
		out += x
	}
	return out
}

// Judge judges a paired run's seconds against limits (nil: DefaultLimits);
// cand and base are the sides' whole-run values shown beside the verdict.
func Judge(secs []Second, cand, base Point, limits compare.Limits) Verdict {
	if limits == nil {
		limits = DefaultLimits()
	}
	var paired []Second
	for _, s := range secs {
		// Both sides must have measured something: a target that answered
		// nothing successfully is no baseline (nor candidate).
		if s.Candidate.Requests > s.Candidate.Errors && s.Baseline.Requests > s.Baseline.Errors {
			paired = append(paired, s)
		}
	}
	v := Verdict{Seconds: len(paired)}
	if len(paired) < MinSeconds {
		v.TooShort = true
	}
	for _, m := range []struct {
		name string
		get  func(Point) time.Duration
	}{
		{"p50", func(p Point) time.Duration { return p.P50 }},
		{"p95", func(p Point) time.Duration { return p.P95 }},
		{"p99", func(p Point) time.Duration { return p.P99 }},
	} {
		xs := make([]float64, 0, len(paired))
		for _, s := range paired {
			c, b := m.get(s.Candidate), m.get(s.Baseline)
			xs = append(xs, math.Log(float64(max(c, time.Microsecond)))-math.Log(float64(max(b, time.Microsecond))))
		}
		d := compare.Delta{Metric: m.name, Old: ms(m.get(base)), New: ms(m.get(cand)), Unit: "ms", Runs: 1}
		if !v.TooShort {
			est, lo, hi := Bootstrap(xs)
			ratio := math.Exp(est) - 1
			d.Significant = (lo > 0 || hi < 0) && math.Abs(ratio) > compare.MinChange
			d.Noise = fmt.Sprintf("paired %+.1f%% (95%% CI %+.1f%%…%+.1f%%, %d s)", 100*ratio, 100*(math.Exp(lo)-1), 100*(math.Exp(hi)-1), len(paired))
			judgeLimit(&d, limits, ratio)
		}
		v.Deltas = append(v.Deltas, d)
	}
	v.Deltas = append(v.Deltas, errorDelta(paired, cand, base, limits, v.TooShort))
	return v
}

// errorDelta judges the error rate on the seconds' paired differences.
func errorDelta(paired []Second, cand, base Point, limits compare.Limits, short bool) compare.Delta {
	d := compare.Delta{Metric: "error_rate", Old: 100 * rate(base), New: 100 * rate(cand), Unit: "%", Runs: 1}
	if short {
		return d
	}
	xs := make([]float64, 0, len(paired))
	for _, s := range paired {
		xs = append(xs, rate(s.Candidate)-rate(s.Baseline))
	}
	est, lo, hi := Bootstrap(xs)
	d.Significant = lo > 0 || hi < 0
	d.Noise = fmt.Sprintf("paired %+.2f pts (95%% CI %+.2f…%+.2f, %d s)", 100*est, 100*lo, 100*hi, len(paired))
	judgeLimit(&d, limits, est)
	return d
}

// judgeLimit fills d's change and limit; worse is the paired estimate of
// the worsening (relative, or points as a fraction for error_rate).
func judgeLimit(d *compare.Delta, limits compare.Limits, worse float64) {
	d.Change = d.New - d.Old
	if d.Old != 0 {
		d.Rel = d.Change / d.Old
	}
	lim, ok := limits[d.Metric]
	if !ok {
		return
	}
	d.Limit, d.HasLimit = lim, true
	d.Regressed = d.Significant && worse > 0 && worse > lim
}

func rate(p Point) float64 {
	if p.Requests == 0 {
		return 0
	}
	return float64(p.Errors) / float64(p.Requests)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// Bootstrap returns the mean of xs and its 95% percentile-bootstrap
// interval, from Resamples resamples drawn with the fixed Seed.
func Bootstrap(xs []float64) (mean, lo, hi float64) {
	n := len(xs)
	if n == 0 {
		return 0, 0, 0
	}
	mean = avg(xs)
	rng := rand.New(rand.NewPCG(Seed, Seed))
	means := make([]float64, Resamples)
	for i := range means {
		var sum float64
		for range n {
			sum += xs[rng.IntN(n)]
		}
		means[i] = sum / float64(n)
	}
	slices.Sort(means)
	return mean, means[int(0.025*Resamples)], means[int(0.975*Resamples)-1]
}

func avg(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}
