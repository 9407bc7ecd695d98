package resultview

import (
	"cmp"
	"maps"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/forgeload/forgeload/internal/pkg/load"
	"github.com/forgeload/forgeload/internal/pkg/load/outcome/summary"
)

// MaxPoints is the most points a time series is drawn with; longer runs are
// shown in buckets of several seconds.
const MaxPoints = 600

// maxSeries caps the error-class and status-code lines of a chart; the rest
// are summed into "other".
const maxSeries = 8

// Card is one headline number. Value is formatted for people; Raw is the
// same number as it appears in the JSON result, for tests and scripts.
type Card struct {
	Key, Label, Value, Raw string
	// Bad marks a number that needs attention (errors, a failed run).
	Bad bool
}

// ProtocolRow is one row of the per-protocol table.
type ProtocolRow struct {
	Protocol  string
	Endpoints int
	Requests  int64
	RPS       float64
	ErrorRate float64
	Latency   summary.Latency
}

// HealthRow is one row of the generator-health table.
type HealthRow struct {
	Label, Value string
	Bad          bool
}

// View is everything the page shows, computed once from a result. Build
// it with [Build]; the zero value is an empty page.
type View struct {
	Title   string
	Started string
	Summary summary.Summary
	// Run is the run's metadata (may be nil).
	Run        *summary.RunInfo
	Cards      []Card
	Charts     []*Chart
	Protocols  []ProtocolRow
	Health     []HealthRow
	Thresholds []load.Check
	// Baseline is the comparison with the baseline, set by
	// [View.SetBaseline]; nil without one.
	Baseline *Baseline
	// Bucket is the number of seconds per drawn point (1 for short runs).
	Bucket int
	// Live marks the dashboard's page: it carries the update script and
	// says whether the run is still going (Running).
	Live, Running bool
	// Updated is when a live page was last rendered.
	Updated string
}

// Build computes the view of r and its threshold checks.
func Build(r *load.Result, checks []load.Check) *View { return build(r, checks, MaxPoints) }

// BuildSummary computes the view of r from its summary s, already
// computed (s.Run is the run's metadata, s.Thresholds its checks): the
// summary is not computed again.
func BuildSummary(r *load.Result, s *summary.Summary) *View { return buildFrom(r, s, MaxPoints) }

// build is Build with at most points per series.
func build(r *load.Result, checks []load.Check, points int) *View {
	s := summary.Of(r, checks)
	return buildFrom(r, &s, points)
}

// buildFrom is BuildSummary with at most points per series.
func buildFrom(r *load.Result, s *summary.Summary, points int) *View {
	v := &View{Summary: *s, Run: s.Run, Thresholds: s.Thresholds, Title: "forgeload load test"}
	if !r.Start.IsZero() {
		v.Started = r.Start.UTC().Format(time.RFC3339)
	}
	if v.Run != nil && v.Run.Step != "" {
		v.Title += ": " + v.Run.Step
	}
	v.cards()
	v.health()
	v.protocols()
	secs := chartSeconds(r.Seconds, r.Elapsed)
	rows, bucket := buckets(secs, points)
	v.Bucket = bucket
	v.Charts = []*Chart{
		rateChart(rows, r.Open),
		latencyChart(rows),
	}
	if names := endpointNames(secs); len(names) > 1 {
		eps := endpointBuckets(secs, names, bucket)
		v.Charts = append(v.Charts, endpointRateChart(names, rows, eps), endpointLatencyChart(names, rows, eps))
	}
	v.Charts = append(v.Charts,
		errorsChart(rows),
		statusChart(rows),
		spectrumChart(r.Latency),
		generatorChart(rows),
	)
	for _, c := range v.Charts {
		if !c.LogX {
			c.Phases = phaseWindows(r)
		}
		if bucket > 1 && !c.LogX {
			c.Note = "each point is " + strconv.Itoa(bucket) + " s: rates are averaged over it, percentiles read from its merged histograms"
		}
		c.layout()
	}
	return v
}

func raw(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

func (v *View) cards() {
	s := &v.Summary
	rate := strconv.FormatFloat(s.RPS, 'f', 1, 64) + " req/s"
	v.Cards = []Card{
		{Key: "requests", Label: "Requests", Value: strconv.FormatInt(s.Requests, 10), Raw: strconv.FormatInt(s.Requests, 10)},
		{Key: "rps", Label: "Achieved rate", Value: rate, Raw: raw(s.RPS)},
	}
	if s.TargetRPS > 0 {
		v.Cards = append(v.Cards, Card{Key: "target_rps", Label: "Asked rate", Value: strconv.FormatFloat(s.TargetRPS, 'f', 1, 64) + " req/s", Raw: raw(s.TargetRPS)})
	}
	l := s.Latency
	v.Cards = append(v.Cards,
		Card{Key: "error_rate", Label: "Errors", Value: load.FormatPercent(s.ErrorRate) + " (" + strconv.FormatInt(s.Errors, 10) + ")", Raw: raw(s.ErrorRate), Bad: s.Errors > 0},
		Card{Key: "p50_ms", Label: "p50", Value: load.FormatMS(l.P50), Raw: raw(l.P50)},
		Card{Key: "p90_ms", Label: "p90", Value: load.FormatMS(l.P90), Raw: raw(l.P90)},
		Card{Key: "p99_ms", Label: "p99", Value: load.FormatMS(l.P99), Raw: raw(l.P99)},
		Card{Key: "p99_9_ms", Label: "p99.9", Value: load.FormatMS(l.P999), Raw: raw(l.P999)},
		Card{Key: "max_ms", Label: "max", Value: load.FormatMS(l.Max), Raw: raw(l.Max)},
		Card{Key: "elapsed_s", Label: "Duration", Value: strconv.FormatFloat(s.ElapsedSeconds, 'f', 1, 64) + " s, " + s.Model, Raw: raw(s.ElapsedSeconds)},
	)
	if len(s.Thresholds) > 0 {
		res := "PASS"
		if !s.ThresholdsPassed {
			res = "FAIL"
		}
		v.Cards = append(v.Cards, Card{Key: "thresholds_passed", Label: "Thresholds", Value: res, Raw: strconv.FormatBool(s.ThresholdsPassed), Bad: !s.ThresholdsPassed})
	}
}

func (v *View) health() {
	s := &v.Summary
	interrupted := "no"
	if s.Interrupted {
		interrupted = "yes: stopped before its end"
	}
	dropped := strconv.FormatInt(s.Dropped, 10)
	for _, k := range slices.Sorted(maps.Keys(s.DroppedBy)) {
		dropped += ", " + k + ": " + strconv.FormatInt(s.DroppedBy[k], 10)
	}
	v.Health = []HealthRow{
		{Label: "Validity", Value: summary.ValidityVerdict(s), Bad: len(s.Invalid) > 0},
		{Label: "Generator-bound", Value: summary.GeneratorVerdict(s), Bad: s.GeneratorBound},
		{Label: "Worker-bound", Value: summary.WorkerVerdict(s), Bad: s.WorkerBound},
		{Label: "Dropped arrivals", Value: dropped, Bad: s.Dropped > 0},
		{Label: "Late arrivals (of which waited for a worker)", Value: strconv.FormatInt(s.Late, 10) + " (" + strconv.FormatInt(s.Queued, 10) + ")", Bad: s.Late*100 > s.Requests},
		{Label: "Retries", Value: strconv.FormatInt(s.Retries, 10)},
		{Label: "Bytes in / out", Value: load.FormatBytes(s.BytesIn) + " / " + load.FormatBytes(s.BytesOut)},
		{Label: "Interrupted", Value: interrupted, Bad: s.Interrupted},
	}
}

// protocols groups the totals by protocol: one row named after the run's
// protocol, or for a mixed-protocol run one row per protocol, with the
// totals of its endpoints.
func (v *View) protocols() {
	s := &v.Summary
	if len(s.Protocols) > 0 {
		v.Protocols = nil
		for _, ps := range s.Protocols {
			r := ProtocolRow{Protocol: ps.Protocol, Endpoints: len(ps.Endpoints), Requests: ps.Requests}
			if ps.Requests > 0 {
				r.ErrorRate = float64(ps.Errors) / float64(ps.Requests)
			}
			if s.Requests > 0 {
				r.RPS = s.RPS * float64(ps.Requests) / float64(s.Requests)
			}
			if ps.Latency != nil {
				r.Latency = *ps.Latency
			}
			v.Protocols = append(v.Protocols, r)
		}
		return
	}
	p := "http"
	switch {
	case s.Protocol != nil && s.Protocol.Protocol != "":
		p = s.Protocol.Protocol
	case v.Run != nil && v.Run.Protocol != "":
		p = v.Run.Protocol
	}
	v.Protocols = []ProtocolRow{{Protocol: p, Endpoints: len(s.Endpoints), Requests: s.Requests, RPS: s.RPS, ErrorRate: s.ErrorRate, Latency: s.Latency}}
}

// row is one drawn point of the time series: one second, or a bucket of
// seconds with per-second averages and merged-histogram percentiles.
type row struct {
	x                        float64
	requests, target, errors float64
	dropped, late, inFlight  float64
	p50, p90, p99, p999      float64
	status                   map[string]float64
	classes                  map[string]float64
}

// buckets turns the per-second series into at most points rows and returns
// them with the number of seconds per row.
func buckets(secs []load.Second, points int) ([]row, int) {
	size := max(1, (len(secs)+points-1)/points)
	var rows []row
	for i := 0; i < len(secs); i += size {
		part := secs[i:min(i+size, len(secs))]
		n := float64(len(part))
		r := row{x: float64(part[0].Second), status: map[string]float64{}, classes: map[string]float64{}}
		var h *load.PackedHistogram // the bucket's seconds merged: a few hundred bytes, where a dense one takes 140 KB
		for _, s := range part {
			r.requests += float64(s.Requests) / n
			r.target += s.TargetRPS / n
			r.errors += float64(s.Errors) / n
			r.dropped += float64(s.Dropped) / n
			r.late += float64(s.Late) / n
			r.inFlight = max(r.inFlight, float64(s.InFlight))
			for k, c := range s.Status {
				r.status[strconv.Itoa(k)] += float64(c) / n
			}
			for k, c := range s.Classes {
				r.classes[k] += float64(c) / n
			}
			switch {
			case s.Hist.Count() == 0:
			case size == 1:
				r.p50, r.p90, r.p99, r.p999 = ms(s.P50), ms(s.P90), ms(s.P99), ms(s.P999)
			case h == nil:
				h = s.Hist.Clone()
			default:
				h.Merge(s.Hist)
			}
		}
		if h != nil {
			r.p50, r.p90, r.p99, r.p999 = ms(h.Quantile(0.5)), ms(h.Quantile(0.9)), ms(h.Quantile(0.99)), ms(h.Quantile(0.999))
		}
		rows = append(rows, r)
	}
	return rows, size
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func series(name string, rows []row, f func(*row) float64) Series {
	s := Series{Name: name, Points: make([]Point, len(rows))}
	for i := range rows {
		s.Points[i] = Point{X: rows[i].x, Y: f(&rows[i])}
	}
	return s
}

func rateChart(rows []row, open bool) *Chart {
	c := &Chart{ID: "rate", Title: "Rate: asked vs achieved", XLabel: "second", YLabel: "req/s"}
	c.Series = append(c.Series, series("achieved", rows, func(r *row) float64 { return r.requests }))
	if open {
		asked := series("asked", rows, func(r *row) float64 { return r.target })
		asked.Dashed = true
		c.Series = append(c.Series, asked)
	}
	return c
}

func latencyChart(rows []row) *Chart {
	c := &Chart{ID: "latency", Title: "Latency percentiles over time (log scale)", XLabel: "second", YLabel: "ms", LogY: true}
	c.Series = []Series{
		series("p50", rows, func(r *row) float64 { return r.p50 }),
		series("p90", rows, func(r *row) float64 { return r.p90 }),
		series("p99", rows, func(r *row) float64 { return r.p99 }),
		series("p99.9", rows, func(r *row) float64 { return r.p999 }),
	}
	return c
}

// topKeys returns the keys of the per-row counts, largest total first,
// capped at maxSeries (the rest are reported as "other").
func topKeys(rows []row, m func(*row) map[string]float64) (keys []string, other bool) {
	tot := map[string]float64{}
	for i := range rows {
		for k, v := range m(&rows[i]) {
			tot[k] += v
		}
	}
	for k := range tot {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if c := cmp.Compare(tot[b], tot[a]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	if len(keys) > maxSeries {
		return keys[:maxSeries], true
	}
	return keys, false
}

func countSeries(c *Chart, rows []row, m func(*row) map[string]float64, prefix string) {
	keys, other := topKeys(rows, m)
	for _, k := range keys {
		c.Series = append(c.Series, series(prefix+k, rows, func(r *row) float64 { return m(r)[k] }))
	}
	if other {
		c.Series = append(c.Series, series("other", rows, func(r *row) float64 {
			sum := 0.0
			for k, v := range m(r) {
				if !slices.Contains(keys, k) {
					sum += v
				}
			}
			return sum
		}))
	}
}

func errorsChart(rows []row) *Chart {
	c := &Chart{ID: "errors", Title: "Errors per second, by class", XLabel: "second", YLabel: "errors/s"}
	c.Series = []Series{series("all errors", rows, func(r *row) float64 { return r.errors })}
	countSeries(c, rows, func(r *row) map[string]float64 { return r.classes }, "")
	return c
}

func statusChart(rows []row) *Chart {
	c := &Chart{ID: "status", Title: "Responses per second, by status", XLabel: "second", YLabel: "responses/s"}
	countSeries(c, rows, func(r *row) map[string]float64 { return r.status }, "status ")
	if len(c.Series) == 0 {
		// A protocol without status codes still shows its responses.
		c.Series = []Series{series("responses", rows, func(r *row) float64 { return r.requests })}
	}
	return c
}

func generatorChart(rows []row) *Chart {
	c := &Chart{ID: "generator", Title: "Generator health: late and dropped arrivals, requests in flight", XLabel: "second", YLabel: "per second"}
	c.Series = []Series{
		series("late/s", rows, func(r *row) float64 { return r.late }),
		series("dropped/s", rows, func(r *row) float64 { return r.dropped }),
		series("in flight", rows, func(r *row) float64 { return r.inFlight }),
	}
	return c
}

// spectrumChart draws latency against percentile on a log scale of
// 1/(1-p): 0%, 90%, 99%, 99.9%… each an equal step, as far as the number
// of samples resolves (a run of n requests shows up to 1-1/n).
func spectrumChart(h *load.Histogram) *Chart {
	c := &Chart{ID: "spectrum", Title: "Latency by percentile (HDR spectrum, log scales)", XLabel: "percentile", YLabel: "ms", LogX: true, LogY: true}
	s := Series{Name: "latency"}
	if h != nil && h.Count() > 0 {
		n := float64(h.Count())
		for k := 0; k <= 60; k++ { // 10 points per decade up to 99.9999%
			d := float64(k) / 10
			if math.Pow(10, d) > n && k > 0 {
				break
			}
			p := 100 * (1 - math.Pow(10, -d))
			s.Points = append(s.Points, Point{X: p, Y: ms(h.Quantile(p / 100))})
		}
	}
	c.Series = []Series{s}
	return c
}
