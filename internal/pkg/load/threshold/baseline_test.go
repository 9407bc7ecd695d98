package threshold

import (
	"strings"
	"testing"
	"time"
)

func TestParseBaseline(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in       string
		metric   string
		agg      string
		baseline bool
		factor   float64
		value    float64
	}{
		{in: "http_req_duration:p99 < baseline * 1.10", metric: MetricDuration, agg: "p99", baseline: true, factor: 1.10},
		{in: "http_req_duration:p99 <= baseline", metric: MetricDuration, agg: "p99", baseline: true, factor: 1},
		{in: "http_req_duration:p99<baseline*1.5", metric: MetricDuration, agg: "p99", baseline: true, factor: 1.5},
		{in: "rps > baseline * 0.95", metric: MetricRequests, agg: "rate", baseline: true, factor: 0.95},
		{in: "rps >= 450", metric: MetricRequests, agg: "rate", value: 450},
		{in: "http_req_failed:rate <= baseline * 2", metric: MetricFailed, agg: "rate", baseline: true, factor: 2},
	} {
		got, err := Parse(tc.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.in, err)
			continue
		}
		if got.Metric != tc.metric || got.Aggregate != tc.agg || got.Baseline != tc.baseline || got.Factor != tc.factor || got.Value != tc.value || got.Source != tc.in {
			t.Errorf("Parse(%q) = %+v, want %s:%s baseline=%v factor %v value %v", tc.in, got, tc.metric, tc.agg, tc.baseline, tc.factor, tc.value)
		}
	}
	for _, tc := range []struct{ in, err string }{
		{"http_req_duration:p99 < baseline * ", "want a positive factor"},
		{"http_req_duration:p99 < baseline * 0", "want a positive factor"},
		{"http_req_duration:p99 < baseline * 110%", "write the factor as a plain number"},
		{"http_req_duration:p99 < baseline + 10ms", "after baseline want '* FACTOR'"},
		{"rps > fast", "rps is short for http_requests:rate"},
	} {
		if _, err := Parse(tc.in); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("Parse(%q) error = %v, want one containing %q", tc.in, err, tc.err)
		}
	}
}

func TestEvaluateBaseline(t *testing.T) {
	t.Parallel()
	src := fakeSource{overall: fakeMetrics{requests: 1000, elapsed: 10 * time.Second, pct: map[float64]time.Duration{99: 120 * time.Millisecond}}}
	base := fakeSource{overall: fakeMetrics{requests: 1100, elapsed: 10 * time.Second, pct: map[float64]time.Duration{99: 100 * time.Millisecond}}}
	ths, err := ParseAll([]string{"http_req_duration:p99 < baseline * 1.10\nhttp_req_duration:p99 < baseline * 1.25\nrps > baseline * 0.95\nhttp_req_duration:p99 < 1s"})
	if err != nil {
		t.Fatal(err)
	}
	got := EvaluateBaseline(ths, src, base)
	want := []struct {
		passed      bool
		bound, base float64
	}{
		{false, 0.110, 0.100}, // 120ms is 20% worse than 100ms
		{true, 0.125, 0.100},
		{false, 104.5, 110}, // 100 req/s against 110 * 0.95
		{true, 1, 0},
	}
	for i, o := range got {
		if o.Err != nil || o.Skipped || o.Passed != want[i].passed || !near(o.Bound, want[i].bound) || !near(o.BaselineValue, want[i].base) {
			t.Errorf("%s: %+v, want passed=%v bound %v baseline %v", o.Threshold.Source, o, want[i].passed, want[i].bound, want[i].base)
		}
	}
	// Without a baseline only the baseline thresholds are skipped.
	for i, o := range EvaluateBaseline(ths, src, nil) {
		if o.Skipped != ths[i].Baseline || !o.Passed {
			t.Errorf("%s without a baseline: skipped=%v passed=%v, want skipped=%v, passed", o.Threshold.Source, o.Skipped, o.Passed, ths[i].Baseline)
		}
	}
	// A baseline without the percentile fails the threshold, naming why.
	th, _ := Parse("http_req_duration:p99.99 < baseline")
	if o := EvaluateBaseline([]Threshold{th}, src, base)[0]; o.Err == nil || o.Passed || !strings.Contains(o.Err.Error(), "the baseline has no p99.99") {
		t.Errorf("baseline without p99.99 = %+v, want an error naming it", o)
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }
