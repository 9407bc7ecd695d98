package threshold

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// MetricRPS is shorthand for http_requests:rate: "rps > baseline * 0.95".
const MetricRPS = "rps"

// KeywordBaseline, as the value of a threshold, stands for the same metric
// measured in a baseline run: "http_req_duration:p99 < baseline * 1.10".
const KeywordBaseline = "baseline"

// parseRPSAlias parses "rps OP VALUE" as http_requests:rate, keeping the
// source as written. ok is false when s does not start with the alias.
func parseRPSAlias(s string) (t Threshold, ok bool, err error) {
	src := strings.TrimSpace(s)
	rest, found := strings.CutPrefix(src, MetricRPS)
	if !found || rest == "" || !strings.ContainsRune(" \t<>=!", rune(rest[0])) {
		return Threshold{}, false, nil
	}
	t, err = Parse(MetricRequests + ":rate" + rest)
	if err != nil {
		return Threshold{}, true, fmt.Errorf("%w (rps is short for http_requests:rate)", err)
	}
	t.Source = src
	return t, true, nil
}

// baseline parses "baseline" or "baseline * FACTOR" at the parser's
// position, which must then be the end. ok is false when the value is not
// a baseline.
func (p *parser) baseline(t *Threshold) (ok bool, err error) {
	rest, found := strings.CutPrefix(p.rest(), KeywordBaseline)
	if !found || rest != "" && !strings.ContainsRune(" \t*", rune(rest[0])) {
		return false, nil
	}
	p.pos += len(KeywordBaseline)
	t.Baseline, t.Factor = true, 1
	p.skipSpace()
	if p.rest() == "" {
		return true, nil
	}
	if !strings.HasPrefix(p.rest(), "*") {
		return true, p.errorf(p.pos, "after baseline want '* FACTOR' (e.g. baseline * 1.10) or the end, got %s", p.describe())
	}
	p.pos++
	p.skipSpace()
	numAt := p.pos
	num := p.number()
	f, perr := strconv.ParseFloat(num, 64)
	if num == "" || perr != nil || math.IsInf(f, 0) || math.IsNaN(f) || f <= 0 {
		p.pos = numAt
		return true, p.errorf(numAt, "want a positive factor after 'baseline *' (e.g. 1.10 for 10%% worse), got %s", p.describe())
	}
	p.skipSpace()
	if p.rest() != "" {
		return true, p.errorf(p.pos, "unexpected %s after the baseline factor: write the factor as a plain number (1.10, not 110%%)", p.describe())
	}
	t.Factor = f
	return true, nil
}

// HasBaseline reports whether any of ts compares with a baseline.
func HasBaseline(ts []Threshold) bool {
	for _, t := range ts {
		if t.Baseline {
			return true
		}
	}
	return false
}

// Runs is a baseline [Source] that stands for several earlier runs: a
// baseline threshold's bound is then the median of the metric measured
// in each of BaselineRuns (when it returns any).
type Runs interface {
	Source
	BaselineRuns() []Source
}

// measureBaseline measures t's metric in base, or the median over its
// runs when it is a [Runs].
func measureBaseline(t Threshold, base Source) (float64, error) {
	rs, ok := base.(Runs)
	if !ok || len(rs.BaselineRuns()) == 0 {
		return measure(t, base)
	}
	var vs []float64
	for _, r := range rs.BaselineRuns() {
		v, err := measure(t, r)
		if err != nil {
			return 0, err
		}
		vs = append(vs, v)
	}
	sort.Float64s(vs)
	if n := len(vs); n%2 == 0 {
		return (vs[n/2-1] + vs[n/2]) / 2, nil
	}
	return vs[len(vs)/2], nil
}

// EvaluateBaseline checks every threshold against src and returns one
// Outcome per threshold, in order. A threshold that cannot be evaluated
// fails, with Err set; it never panics on a nil Source or metrics. A
// threshold whose bound is the baseline compares src's value with base's
// value of the same metric times the factor; with a nil base, such
// thresholds are Skipped (and pass).
func EvaluateBaseline(ts []Threshold, src, base Source) []Outcome {
	out := make([]Outcome, 0, len(ts))
	for _, t := range ts {
		out = append(out, evaluate(t, src, base))
	}
	return out
}

func evaluate(t Threshold, src, base Source) Outcome {
	o := Outcome{Threshold: t, Bound: t.Value}
	if t.Baseline {
		if base == nil {
			o.Skipped, o.Passed = true, true
			return o
		}
		bv, err := measureBaseline(t, base)
		if err != nil {
			o.Err = fmt.Errorf("in the baseline: %w", err)
			return o
		}
		if bv == 0 && t.Metric == MetricDuration {
			o.Err = fmt.Errorf("evaluate threshold %q: the baseline has no %s value (an older result keeps only p50, p90, p95, p99 and p99.9)", t.Source, t.Aggregate)
			return o
		}
		o.BaselineValue, o.Bound = bv, bv*t.Factor
	}
	o.Actual, o.Err = measure(t, src)
	if o.Err == nil {
		o.Passed = compare(o.Actual, t.Op, o.Bound)
	}
	return o
}
