package compare

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/forgeload/forgeload/internal/pkg/load"
	"github.com/forgeload/forgeload/internal/pkg/load/outcome/summary"
	"github.com/forgeload/forgeload/internal/pkg/load/threshold"
)

// Noise rules; see the package documentation.
const (
	// MinChange is the smallest relative change reported as beyond noise,
	// whatever the statistics say: runs on shared machines differ by this
	// much without any change in the code.
	MinChange = 0.02
	// FallbackChange is the relative change counted as beyond noise when
	// a result has no histogram or per-second series to measure its noise
	// (schema 1 results).
	FallbackChange = 0.05
	// z95 is the two-sided 95% normal quantile.
	z95 = 1.96
)

// Result is a JSON result read back, of any schema version. It is a
// [threshold.Source], so it can serve as a baseline.
type Result struct {
	summary.Summary
	// Path names where it was read from, for messages.
	Path string
	// Hist is the overall latency histogram; nil for schema 1 results
	// and for a [History].
	Hist *load.Histogram
	// Runs are the earlier runs a [History] stands for, oldest first; nil
	// for a single run.
	Runs []*Result
}

// Read decodes a JSON result written by `forgeload load --json-output` (or
// a job's load step) of any schema version up to
// [summary.SchemaVersion]. name is used in errors.
func Read(r io.Reader, name string) (*Result, error) {
	b, err := io.ReadAll(io.LimitReader(r, 256<<20))
	if err != nil {
		return nil, fmt.Errorf("read result %s: %w", name, err)
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(b, &probe); err != nil {
		return nil, fmt.Errorf("read result %s: %w: want the JSON written by forgeload load --json-output", name, err)
	}
	if _, ok := probe["requests"]; !ok {
		return nil, fmt.Errorf("read result %s: no \"requests\" field: this is not a forgeload JSON result (write one with forgeload load --json-output)", name)
	}
	res := &Result{Path: name}
	if err := json.Unmarshal(b, &res.Summary); err != nil {
		return nil, fmt.Errorf("read result %s: %w", name, err)
	}
	switch v := res.SchemaVersion; {
	case v == 0:
		res.SchemaVersion = 1 // written before the field existed
	case v > summary.SchemaVersion:
		return nil, fmt.Errorf("read result %s: schema version %d is newer than this forgeload understands (%d): upgrade forgeload", name, v, summary.SchemaVersion)
	}
	if len(res.LatencyHist) > 0 {
		h, err := load.DecodeHistogram(res.LatencyHist)
		if err != nil {
			return nil, fmt.Errorf("read result %s: latency_hist: %w", name, err)
		}
		res.Hist = h
	}
	return res, nil
}

// Load reads the JSON result in the file at path.
func Load(path string) (*Result, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open result: %w", err)
	}
	defer f.Close()
	return Read(f, path)
}

// Delta is one compared metric.
type Delta struct {
	// Metric names it: rps, p50 … p99.9, error_rate, or sut_cpu:NAME and
	// sut_mem:NAME.
	Metric string
	// Old and New are the values, in Unit; Old is the median of the
	// earlier runs when there are several.
	Old, New float64
	Unit     string
	// Change is New-Old; Rel is Change/Old (0 when Old is 0).
	Change, Rel float64
	// HigherIsBetter is true for rates.
	HigherIsBetter bool
	// Significant is set when the change exceeds the within-run noise
	// and, with several earlier runs, the run-to-run noise; Noise says
	// how that was decided.
	Significant bool
	Noise       string
	// Runs is how many earlier runs Old stands for. RunBound is the
	// run-to-run noise bound in Unit, CriticalMAD(Runs) times their MAD;
	// 0 with one run.
	Runs     int
	RunBound float64
	// Limit is the allowed worsening (relative, or percentage points for
	// error_rate); Regressed is set when the change is significant, worse,
	// and beyond Limit.
	Limit     float64
	HasLimit  bool
	Regressed bool
}

// Worse reports whether the change goes the wrong way.
func (d Delta) Worse() bool {
	if d.HigherIsBetter {
		return d.Change < 0
	}
	return d.Change > 0
}

// Limits are the allowed worsening per metric: a relative change (0.10 is
// 10% worse) for rates, latencies and resources, and percentage points as
// a fraction (0.01 is one point) for error_rate.
type Limits map[string]float64

// ParseLimit parses "METRIC=VALUE" such as "p99=10%" or "error_rate=0.5%".
// The value is a percentage with or without its % sign: "p99=10" is 10%.
func ParseLimit(s string) (metric string, v float64, err error) {
	k, val, ok := strings.Cut(s, "=")
	k, val = strings.TrimSpace(k), strings.TrimSpace(val)
	if !ok || k == "" || val == "" {
		return "", 0, fmt.Errorf("limit %q: want METRIC=PERCENT, e.g. p99=10%% or error_rate=0.5%%", s)
	}
	if !slices.Contains(limitMetrics, k) && !strings.HasPrefix(k, "sut_cpu") && !strings.HasPrefix(k, "sut_mem") {
		return "", 0, fmt.Errorf("limit %q: unknown metric %q: want one of %s", s, k, strings.Join(limitMetrics, ", "))
	}
	f, err := strconv.ParseFloat(strings.TrimSuffix(val, "%"), 64)
	if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) {
		return "", 0, fmt.Errorf("limit %q: %q is not a non-negative percentage: want e.g. 10%%", s, val)
	}
	return k, f / 100, nil
}

// FormatLimit writes a parsed limit back with its unit: "p99=10%" (worse
// by at most 10%), "error_rate=+0.5 pts" (at most half a percentage point
// more errors).
func FormatLimit(metric string, v float64) string {
	return metric + "=" + limitText(Delta{Metric: metric, Limit: v, HasLimit: true})
}

var limitMetrics = []string{"rps", "p50", "p90", "p95", "p99", "p99.9", "error_rate", "sut_cpu", "sut_mem"}

// Compare returns the deltas from base to new, with limits applied. base
// is one earlier run, or several made into one by [History]: then the old
// value of each metric is their median, and a change is beyond noise only
// when it also exceeds their run-to-run spread (see the package
// documentation).
func Compare(base, new *Result, limits Limits) []Delta {
	runs := base.runs()
	vals := func(get func(*Result) float64) []float64 {
		vs := make([]float64, len(runs))
		for i, r := range runs {
			vs[i] = get(r)
		}
		return vs
	}
	rps := func(r *Result) float64 { return r.RPS }
	rate := Delta{Metric: "rps", Old: median(vals(rps)), New: new.RPS, Unit: "req/s", HigherIsBetter: true}
	rateNoise(&rate, runs, new)
	runNoise(&rate, vals(rps))
	ds := []Delta{rate}
	for _, p := range percentiles {
		get := func(r *Result) float64 { return p.get(r.Latency) }
		d := Delta{Metric: p.name, Old: median(vals(get)), New: get(new), Unit: "ms"}
		percentileNoise(&d, p.q, runs, new)
		runNoise(&d, vals(get))
		ds = append(ds, d)
	}
	errPct := func(r *Result) float64 { return 100 * r.ErrorRate }
	er := Delta{Metric: "error_rate", Old: median(vals(errPct)), New: errPct(new), Unit: "%"}
	errorNoise(&er, runs, new)
	runNoise(&er, vals(errPct))
	ds = append(ds, er)
	ds = append(ds, resourceDeltas(runs, new)...)
	for i := range ds {
		applyLimit(&ds[i], limits)
	}
	return ds
}

var percentiles = []struct {
	name string
	q    float64
	get  func(summary.Latency) float64
}{
	{"p50", 0.50, func(l summary.Latency) float64 { return l.P50 }},
	{"p90", 0.90, func(l summary.Latency) float64 { return l.P90 }},
	{"p95", 0.95, func(l summary.Latency) float64 { return l.P95 }},
	{"p99", 0.99, func(l summary.Latency) float64 { return l.P99 }},
	{"p99.9", 0.999, func(l summary.Latency) float64 { return l.P999 }},
}

// applyLimit sets d's change and, when limits has one for its metric,
// whether it regressed beyond it.
func applyLimit(d *Delta, limits Limits) {
	d.Change = d.New - d.Old
	if d.Old != 0 {
		d.Rel = d.Change / d.Old
	}
	lim, ok := limits[d.Metric]
	if !ok {
		lim, ok = limits[strings.SplitN(d.Metric, ":", 2)[0]]
	}
	if !ok {
		return
	}
	d.Limit, d.HasLimit = lim, true
	worse := d.Rel
	if d.Metric == "error_rate" {
		worse = d.Change / 100 // points, as a fraction
	}
	if d.HigherIsBetter {
		worse = -worse
	}
	if d.Old == 0 && d.Metric != "error_rate" && d.Change != 0 {
		worse = math.Inf(1)
		if d.HigherIsBetter {
			worse = math.Inf(-1)
		}
	}
	d.Regressed = d.Significant && d.Worse() && worse > lim
}

// Regressed reports whether any delta regressed beyond its limit.
func Regressed(ds []Delta) bool {
	return slices.ContainsFunc(ds, func(d Delta) bool { return d.Regressed })
}

// relativeFloor decides on the relative change alone: it is beyond noise
// when over FallbackChange.
func relativeFloor(d *Delta, why string) {
	rel := math.Abs(d.New - d.Old)
	if d.Old != 0 {
		rel /= math.Abs(d.Old)
	} else if rel > 0 {
		rel = math.Inf(1)
	}
	d.Significant = rel > FallbackChange
	d.Noise = why
}

// rateNoise compares the per-second achieved rates: the change is beyond
// noise when it exceeds 1.96 standard errors of the difference of the
// means of the two series (first and last, partial, seconds left out).
// With several earlier runs, their median mean and median standard error
// stand for the old series.
func rateNoise(d *Delta, runs []*Result, new *Result) {
	means, ses := make([]float64, len(runs)), make([]float64, len(runs))
	for i, r := range runs {
		var n int
		means[i], ses[i], n = meanSE(r.Seconds)
		if n < 3 {
			relativeFloor(d, "fewer than 5 seconds of series: beyond noise when over 5%")
			return
		}
	}
	mn, sn, nn := meanSE(new.Seconds)
	if nn < 3 {
		relativeFloor(d, "fewer than 5 seconds of series: beyond noise when over 5%")
		return
	}
	mo, so := median(means), median(ses)
	se := math.Hypot(so, sn)
	d.Significant = math.Abs(mn-mo) > z95*se && math.Abs(d.New-d.Old) > MinChange*math.Abs(d.Old)
	d.Noise = fmt.Sprintf("±%.1f req/s (95%%, per-second rates)", z95*se)
}

func meanSE(secs []summary.SecondSummary) (mean, se float64, n int) {
	if len(secs) <= 2 {
		return 0, 0, 0
	}
	secs = secs[1 : len(secs)-1]
	n = len(secs)
	for _, s := range secs {
		mean += float64(s.Requests)
	}
	mean /= float64(n)
	var ss float64
	for _, s := range secs {
		ss += (float64(s.Requests) - mean) * (float64(s.Requests) - mean)
	}
	if n > 1 {
		se = math.Sqrt(ss/float64(n-1)) / math.Sqrt(float64(n))
	}
	return mean, se, n
}

// percentileNoise compares two percentiles by their 95% confidence
// intervals, read from each run's histogram at the ranks q·n ± 1.96·√(n·q·(1-q))
// (the order-statistic interval of a quantile). The change is beyond noise
// when the intervals do not overlap and it exceeds MinChange. With several
// earlier runs, the old interval is centred on their median percentile
// and reaches as far below and above it as their intervals do, by median.
func percentileNoise(d *Delta, q float64, runs []*Result, new *Result) {
	const why = "no histogram (older result): beyond noise when over 5%"
	if new.Hist == nil || new.Hist.Count() == 0 {
		relativeFloor(d, why)
		return
	}
	centers, below, above := make([]time.Duration, len(runs)), make([]time.Duration, len(runs)), make([]time.Duration, len(runs))
	for i, r := range runs {
		if r.Hist == nil || r.Hist.Count() == 0 {
			relativeFloor(d, why)
			return
		}
		lo, hi := interval(r.Hist, q)
		centers[i] = r.Hist.Quantile(q)
		below[i], above[i] = centers[i]-lo, hi-centers[i]
	}
	c := medianDuration(centers)
	lo1, hi1 := c-medianDuration(below), c+medianDuration(above)
	lo2, hi2 := interval(new.Hist, q)
	d.Significant = (hi1 < lo2 || hi2 < lo1) && math.Abs(d.New-d.Old) > MinChange*math.Abs(d.Old)
	d.Noise = fmt.Sprintf("95%% CI %s–%s vs %s–%s", load.FormatMS(ms(lo1)), load.FormatMS(ms(hi1)), load.FormatMS(ms(lo2)), load.FormatMS(ms(hi2)))
}

func interval(h *load.Histogram, q float64) (lo, hi time.Duration) {
	n := float64(h.Count())
	w := z95 * math.Sqrt(q*(1-q)/n)
	return h.Quantile(math.Max(0, q-w)), h.Quantile(math.Min(1, q+w))
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// errorNoise is a two-proportion z-test on the error counts. With several
// earlier runs, the old proportion is their median error rate over their
// median request count.
func errorNoise(d *Delta, runs []*Result, new *Result) {
	reqs, rates := make([]float64, len(runs)), make([]float64, len(runs))
	for i, r := range runs {
		reqs[i] = float64(r.Requests)
		if r.Requests > 0 {
			rates[i] = float64(r.Errors) / float64(r.Requests)
		}
	}
	n1, n2 := median(reqs), float64(new.Requests)
	if slices.Contains(reqs, 0) || n2 == 0 {
		relativeFloor(d, "a run without requests")
		return
	}
	p1, p2 := median(rates), float64(new.Errors)/n2
	p := (p1*n1 + float64(new.Errors)) / (n1 + n2)
	se := math.Sqrt(p * (1 - p) * (1/n1 + 1/n2))
	diff := p2 - p1
	d.Significant = se > 0 && math.Abs(diff) > z95*se || se == 0 && diff != 0
	d.Noise = fmt.Sprintf("±%.3f points (95%%, error counts)", 100*z95*se)
}

var _ threshold.Source = (*Result)(nil)

// Overall returns the result's totals, for baseline thresholds.
func (r *Result) Overall() threshold.Metrics {
	return metrics{requests: r.Requests, failures: r.Errors, elapsed: r.ElapsedSeconds, lat: r.Latency, hist: r.Hist}
}

// Endpoint returns one endpoint's totals, for baseline thresholds.
func (r *Result) Endpoint(name string) (threshold.Metrics, bool) {
	for _, e := range r.Endpoints {
		if e.Name == name {
			return metrics{requests: e.Requests, failures: e.Errors, elapsed: r.ElapsedSeconds, lat: e.Latency}, true
		}
	}
	return nil, false
}

// metrics serves a result's numbers; percentiles come from the histogram
// when there is one, else only the summary's fixed ones are known.
type metrics struct {
	requests, failures int64
	elapsed            float64
	lat                summary.Latency
	hist               *load.Histogram
}

func dur(msv float64) time.Duration { return time.Duration(msv * float64(time.Millisecond)) }

func (m metrics) Requests() int64           { return m.requests }
func (m metrics) Failures() int64           { return m.failures }
func (m metrics) Elapsed() time.Duration    { return time.Duration(m.elapsed * float64(time.Second)) }
func (m metrics) LatencyMin() time.Duration { return dur(m.lat.Min) }
func (m metrics) LatencyMax() time.Duration { return dur(m.lat.Max) }
func (m metrics) LatencyMean() time.Duration {
	return dur(m.lat.Mean)
}

func (m metrics) LatencyPercentile(p float64) time.Duration {
	if m.hist != nil {
		return m.hist.Quantile(p / 100)
	}
	switch p {
	case 50:
		return dur(m.lat.P50)
	case 90:
		return dur(m.lat.P90)
	case 95:
		return dur(m.lat.P95)
	case 99:
		return dur(m.lat.P99)
	case 99.9:
		return dur(m.lat.P999)
	}
	return 0
}

// FromResult is the read-back view of a run in memory, as if its JSON
// result had been written and read.
func FromResult(r *load.Result, name string) *Result {
	s := summary.Of(r, nil)
	return FromSummary(r, &s, name)
}

// FromSummary is [FromResult] from r's summary s, already computed.
func FromSummary(r *load.Result, s *summary.Summary, name string) *Result {
	res := &Result{Summary: *s, Path: name}
	if r.Latency != nil && r.Latency.Count() > 0 {
		res.Hist = r.Latency
	}
	return res
}
