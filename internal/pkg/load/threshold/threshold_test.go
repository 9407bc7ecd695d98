package threshold

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want Threshold
	}{
		// Crankfire's documented examples: plain numbers are ms for
		// durations and fractions for rates.
		{"crankfire p95 ms", "http_req_duration:p95 < 500", Threshold{Metric: MetricDuration, Aggregate: "p95", Op: "<", Value: 0.5}},
		{"crankfire fraction", "http_req_failed:rate < 0.01", Threshold{Metric: MetricFailed, Aggregate: "rate", Op: "<", Value: 0.01}},
		{"crankfire rps", "http_requests:rate > 100", Threshold{Metric: MetricRequests, Aggregate: "rate", Op: ">", Value: 100}},
		{"no spaces", "http_req_duration:p99<300ms", Threshold{Metric: MetricDuration, Aggregate: "p99", Op: "<", Value: 0.3}},
		{"seconds", "http_req_duration:max <= 1.5s", Threshold{Metric: MetricDuration, Aggregate: "max", Op: "<=", Value: 1.5}},
		{"micro", "http_req_duration:min >= 250us", Threshold{Metric: MetricDuration, Aggregate: "min", Op: ">=", Value: 250e-6}},
		{"micro sign", "http_req_duration:min >= 250µs", Threshold{Metric: MetricDuration, Aggregate: "min", Op: ">=", Value: 250e-6}},
		{"greek mu", "http_req_duration:min >= 250μs", Threshold{Metric: MetricDuration, Aggregate: "min", Op: ">=", Value: 250e-6}},
		{"nanos", "http_req_duration:p50 < 900000ns", Threshold{Metric: MetricDuration, Aggregate: "p50", Op: "<", Value: 900e-6}},
		{"space before unit", "http_req_duration:p90 < 20 ms", Threshold{Metric: MetricDuration, Aggregate: "p90", Op: "<", Value: 0.02}},
		{"mean is avg", "http_req_duration:mean < 200", Threshold{Metric: MetricDuration, Aggregate: "avg", Op: "<", Value: 0.2}},
		{"k6 percentile form", "http_req_duration:p(99.9) < 1s", Threshold{Metric: MetricDuration, Aggregate: "p99.9", Op: "<", Value: 1}},
		{"fractional percentile", "http_req_duration:p99.9 < 1s", Threshold{Metric: MetricDuration, Aggregate: "p99.9", Op: "<", Value: 1}},
		{"percent", "http_req_failed:rate < 1%", Threshold{Metric: MetricFailed, Aggregate: "rate", Op: "<", Value: 0.01}},
		{"percent fraction", "http_req_failed:rate <= 0.5 %", Threshold{Metric: MetricFailed, Aggregate: "rate", Op: "<=", Value: 0.005}},
		{"fail count", "http_req_failed:count == 0", Threshold{Metric: MetricFailed, Aggregate: "count", Op: "==", Value: 0}},
		{"request count", "http_requests:count != 1000", Threshold{Metric: MetricRequests, Aggregate: "count", Op: "!=", Value: 1000}},
		{"rps unit", "http_requests:rate >= 450/s", Threshold{Metric: MetricRequests, Aggregate: "rate", Op: ">=", Value: 450}},
		{"exponent", "http_requests:rate > 1e3", Threshold{Metric: MetricRequests, Aggregate: "rate", Op: ">", Value: 1000}},
		{"endpoint", "http_req_duration{endpoint:login}:p99 < 200ms", Threshold{Metric: MetricDuration, Endpoint: "login", Aggregate: "p99", Op: "<", Value: 0.2}},
		{"endpoint quoted", `http_req_failed{endpoint="create order"}:rate < 2%`, Threshold{Metric: MetricFailed, Endpoint: "create order", Aggregate: "rate", Op: "<", Value: 0.02}},
		{"surrounding space", "  http_req_duration:avg > 1  ", Threshold{Metric: MetricDuration, Aggregate: "avg", Op: ">", Value: 0.001}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Parse(tt.in)
			if err != nil {
				t.Fatalf("Parse(%q) error: %v", tt.in, err)
			}
			tt.want.Source = strings.TrimSpace(tt.in)
			if math.Abs(got.Value-tt.want.Value) > 1e-12 {
				t.Errorf("Parse(%q).Value = %v, want %v", tt.in, got.Value, tt.want.Value)
			}
			got.Value = tt.want.Value
			if got != tt.want {
				t.Errorf("Parse(%q) = %+v, want %+v", tt.in, got, tt.want)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want string // the exact error message
	}{
		{"", "threshold is empty: want metric:aggregate op value, e.g. http_req_duration:p99 < 300ms"},
		{"   ", "threshold is empty: want metric:aggregate op value, e.g. http_req_duration:p99 < 300ms"},
		{":p99 < 1", `threshold ":p99 < 1": column 1: want a metric name (http_req_duration, http_req_failed, http_requests, checks, sut_cpu, sut_mem, dropped, late or achieved_ratio), got ":p9"…`},
		{"latency:p99 < 1", `threshold "latency:p99 < 1": column 1: unknown metric: want http_req_duration, http_req_failed, http_requests, checks, sut_cpu, sut_mem, dropped, late or achieved_ratio`},
		{"http_req_duration p99 < 1", `threshold "http_req_duration p99 < 1": column 18: want ':' and an aggregate after the metric (e.g. http_req_duration:p99), got " p9"…`},
		{"http_req_duration: < 1", `threshold "http_req_duration: < 1": column 19: want an aggregate of http_req_duration (p50, p90, p95, p99 (or any pNN such as p99.9), avg, min, max), got " < "…`},
		{"http_req_duration:rate < 1", `threshold "http_req_duration:rate < 1": column 19: this aggregate is not valid for http_req_duration: want p50, p90, p95, p99 (or any pNN such as p99.9), avg, min, max`},
		{"http_req_duration:p101 < 1", `threshold "http_req_duration:p101 < 1": column 19: this aggregate is not valid for http_req_duration: want p50, p90, p95, p99 (or any pNN such as p99.9), avg, min, max`},
		{"http_req_failed:p99 < 1", `threshold "http_req_failed:p99 < 1": column 17: this aggregate is not valid for http_req_failed: want rate, count`},
		{"http_requests:avg < 1", `threshold "http_requests:avg < 1": column 15: this aggregate is not valid for http_requests: want rate, count`},
		{"http_req_duration:p99 = 1", `threshold "http_req_duration:p99 = 1": column 23: want a comparison operator; write == for equality, not =`},
		{"http_req_duration:p99 ~ 1", `threshold "http_req_duration:p99 ~ 1": column 23: want a comparison operator (<, <=, >, >=, == or !=), got "~ 1"`},
		{"http_req_duration:p99", `threshold "http_req_duration:p99": column 22: want a comparison operator (<, <=, >, >=, == or !=), got the end of the text`},
		{"http_req_duration:p99 <", `threshold "http_req_duration:p99 <": column 24: want a duration such as 300ms, 0.5s or 250 (milliseconds), got the end of the text`},
		{"http_req_duration:p99 < fast", `threshold "http_req_duration:p99 < fast": column 25: want a duration such as 300ms, 0.5s or 250 (milliseconds), got "fas"…`},
		{"http_req_duration:p99 < 3m", `threshold "http_req_duration:p99 < 3m": column 26: unknown duration unit "m": want ms, s, us, µs or ns (a plain number is milliseconds)`},
		{"http_req_duration:p99 < -3ms", `threshold "http_req_duration:p99 < -3ms": column 25: the value is negative: want a duration such as 300ms, 0.5s or 250 (milliseconds)`},
		{"http_req_duration:p99 < 1e999", `threshold "http_req_duration:p99 < 1e999": column 25: the value is out of range: want a duration such as 300ms, 0.5s or 250 (milliseconds)`},
		// A failure rate of a plain 1 or more has no unit: "< 1" would be
		// 100% and never fail (issue 28). A plain fraction is Crankfire's.
		{"http_req_failed:rate < 1", `threshold "http_req_failed:rate < 1": column 24: the failure rate has no unit, and a plain number of 1 or more is not a fraction: write 1% or 0.01`},
		{"http_req_failed:rate <= 1.0", `threshold "http_req_failed:rate <= 1.0": column 25: the failure rate has no unit, and a plain number of 1 or more is not a fraction: write 1% or 0.01`},
		{"http_req_failed{endpoint:login}:rate < 5", `threshold "http_req_failed{endpoint:login}:rate < 5": column 40: the failure rate has no unit, and a plain number of 1 or more is not a fraction: write 5% or 0.05`},
		{"http_req_failed:rate < 2.5", `threshold "http_req_failed:rate < 2.5": column 24: the failure rate has no unit, and a plain number of 1 or more is not a fraction: write 2.5% or 0.025`},
		{"http_req_failed:rate < 1000", `threshold "http_req_failed:rate < 1000": column 24: the failure rate has no unit, and a plain number of 1 or more is not a fraction: write a percentage with % (1%) or a fraction below 1 (0.01)`},
		{"http_req_failed:rate < 150%", `threshold "http_req_failed:rate < 150%": column 24: the failure rate is above 100%: want a percentage in 0-100%`},
		{"http_req_failed:rate < 1ms", `threshold "http_req_failed:rate < 1ms": column 25: unknown unit "ms" for a failure rate: want % (1%) or a plain fraction (0.01)`},
		{"http_req_failed:count < 1%", `threshold "http_req_failed:count < 1%": column 26: a count takes no unit, got "%": want a whole number such as 10`},
		{"http_requests:count > 1.5", `threshold "http_requests:count > 1.5": column 23: the count is not a whole number: want a whole number such as 10`},
		{"http_requests:rate > 100 qps", `threshold "http_requests:rate > 100 qps": column 26: unknown unit "qps" for a request rate: want a plain number of requests per second (or /s, rps)`},
		{"http_req_duration{endpoint:login:p99 < 1", `threshold "http_req_duration{endpoint:login:p99 < 1": column 18: selector is not closed: want {endpoint:NAME}, {phase:NAME} or {endpoint:NAME,phase:NAME}`},
		{"http_req_duration{name:login}:p99 < 1", `threshold "http_req_duration{name:login}:p99 < 1": column 18: want {endpoint:NAME}, {phase:NAME} or {endpoint:NAME,phase:NAME} to select an endpoint or a phase`},
		{"http_req_duration{endpoint:}:p99 < 1", `threshold "http_req_duration{endpoint:}:p99 < 1": column 18: endpoint name is empty: want {endpoint:NAME} with the name from endpoints[].name`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			got, err := Parse(tt.in)
			if err == nil {
				t.Fatalf("Parse(%q) = %+v, want error %q", tt.in, got, tt.want)
			}
			if err.Error() != tt.want {
				t.Errorf("Parse(%q) error =\n  %s\nwant\n  %s", tt.in, err, tt.want)
			}
		})
	}
}

// TestStringNamesTheUnit: the echo of a threshold (summaries print
// String) shows the bound in units where the text leaves them to a rule.
func TestStringNamesTheUnit(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"http_req_failed:rate < 0.01":                   "http_req_failed:rate < 0.01 (1%)",
		"http_req_failed:rate < 1%":                     "http_req_failed:rate < 1% (0.01)",
		"http_req_failed:rate <= 0.5 %":                 "http_req_failed:rate <= 0.5 % (0.005)",
		"http_req_failed:rate == 0":                     "http_req_failed:rate == 0 (0%)",
		"http_req_failed:rate < 0.1":                    "http_req_failed:rate < 0.1 (10%)",
		"http_req_duration:p99 < 300":                   "http_req_duration:p99 < 300 (300ms)",
		"http_req_duration:p99 < 1500":                  "http_req_duration:p99 < 1500 (1500ms)",
		"http_req_duration:avg < 0.3":                   "http_req_duration:avg < 0.3 (0.3ms)",
		"http_req_duration:p99 < 300ms":                 "http_req_duration:p99 < 300ms",
		"http_req_duration:p99 < 0.3 s":                 "http_req_duration:p99 < 0.3 s",
		"http_requests:rate > 100":                      "http_requests:rate > 100 (100 req/s)",
		"http_requests:rate > 1e3":                      "http_requests:rate > 1e3 (1000 req/s)",
		"rps > 100":                                     "rps > 100 (100 req/s)",
		"http_requests:rate >= 450/s":                   "http_requests:rate >= 450/s",
		"http_req_failed:count == 0":                    "http_req_failed:count == 0",
		"sut_cpu:avg < 1":                               "sut_cpu:avg < 1 (1 core)",
		"sut_cpu:max < 1.5":                             "sut_cpu:max < 1.5 (1.5 cores)",
		"sut_cpu:max < 80%":                             "sut_cpu:max < 80%",
		"sut_mem:max < 512MB":                           "sut_mem:max < 512MB",
		"http_req_duration:p99 < baseline * 1.10":       "http_req_duration:p99 < baseline * 1.10",
		"http_req_duration{endpoint:v2}:p99 < 250":      "http_req_duration{endpoint:v2}:p99 < 250 (250ms)",
		"http_req_failed{endpoint:login}:rate < 0.0001": "http_req_failed{endpoint:login}:rate < 0.0001 (0.01%)",
	} {
		th, err := Parse(in)
		if err != nil {
			t.Errorf("Parse(%q) = %v", in, err)
			continue
		}
		if got := th.String(); got != want {
			t.Errorf("Parse(%q).String() = %q, want %q", in, got, want)
		}
	}
}

func TestParseAll(t *testing.T) {
	t.Parallel()
	block := `
# latency budget
http_req_duration:p99 < 300ms   # tail
http_req_failed:rate < 1%

`
	got, err := ParseAll([]string{block, "http_requests:rate > 10"})
	if err != nil {
		t.Fatalf("ParseAll error: %v", err)
	}
	var srcs []string
	for _, th := range got {
		srcs = append(srcs, th.Source)
	}
	want := "http_req_duration:p99 < 300ms|http_req_failed:rate < 1%|http_requests:rate > 10"
	if g := strings.Join(srcs, "|"); g != want {
		t.Errorf("ParseAll sources = %q, want %q", g, want)
	}

	// Every bad line is reported, and no partial result is returned.
	got, err = ParseAll([]string{"http_req_duration:p99 < 1s\nbogus:p1 < 1\nhttp_req_failed:rate < 9"})
	if err == nil || got != nil {
		t.Fatalf("ParseAll(bad) = %v, %v; want nil and an error", got, err)
	}
	msg := err.Error()
	for _, w := range []string{`threshold "bogus:p1 < 1"`, `threshold "http_req_failed:rate < 9"`} {
		if !strings.Contains(msg, w) {
			t.Errorf("ParseAll error %q does not mention %q", msg, w)
		}
	}

	if got, err := ParseAll(nil); got != nil || err != nil {
		t.Errorf("ParseAll(nil) = %v, %v; want nil, nil", got, err)
	}
}

// fakeMetrics is a hand-written Metrics with fixed numbers.
type fakeMetrics struct {
	requests, failures int64
	elapsed            time.Duration
	pct                map[float64]time.Duration
	min, max, mean     time.Duration
}

func (f fakeMetrics) Requests() int64                           { return f.requests }
func (f fakeMetrics) Failures() int64                           { return f.failures }
func (f fakeMetrics) Elapsed() time.Duration                    { return f.elapsed }
func (f fakeMetrics) LatencyPercentile(p float64) time.Duration { return f.pct[p] }
func (f fakeMetrics) LatencyMin() time.Duration                 { return f.min }
func (f fakeMetrics) LatencyMax() time.Duration                 { return f.max }
func (f fakeMetrics) LatencyMean() time.Duration                { return f.mean }

type fakeSource struct {
	overall   Metrics
	endpoints map[string]Metrics
}

func (s fakeSource) Overall() Metrics { return s.overall }
func (s fakeSource) Endpoint(name string) (Metrics, bool) {
	m, ok := s.endpoints[name]
	return m, ok
}
func (s fakeSource) Resources() map[string]ResourceMetrics { return nil }

var _ Source = fakeSource{}

func TestEvaluate(t *testing.T) {
	t.Parallel()
	overall := fakeMetrics{
		requests: 1000, failures: 4, elapsed: 10 * time.Second,
		pct: map[float64]time.Duration{
			50: 20 * time.Millisecond, 90: 80 * time.Millisecond, 95: 120 * time.Millisecond,
			99: 212400 * time.Microsecond, 99.9: 1500 * time.Millisecond,
		},
		min: 500 * time.Microsecond, max: 2 * time.Second, mean: 31 * time.Millisecond,
	}
	login := fakeMetrics{requests: 200, failures: 10, elapsed: 10 * time.Second,
		pct: map[float64]time.Duration{99: 450 * time.Millisecond}}
	src := fakeSource{overall: overall, endpoints: map[string]Metrics{
		"login": login,
		"idle":  fakeMetrics{elapsed: time.Second},
	}}

	tests := []struct {
		in     string
		actual float64
		passed bool
		shown  string // FormatValue of the actual value
		err    string // substring of Outcome.Err
	}{
		{in: "http_req_duration:p99 < 300ms", actual: 0.2124, passed: true, shown: "212.4ms"},
		{in: "http_req_duration:p99 < 200", actual: 0.2124, passed: false, shown: "212.4ms"},
		{in: "http_req_duration:p50 <= 20ms", actual: 0.02, passed: true},
		{in: "http_req_duration:p50 < 20ms", actual: 0.02, passed: false},
		{in: "http_req_duration:p90 == 80ms", actual: 0.08, passed: true},
		{in: "http_req_duration:p95 != 120ms", actual: 0.12, passed: false},
		{in: "http_req_duration:p99.9 >= 1.5s", actual: 1.5, passed: true, shown: "1.50s"},
		{in: "http_req_duration:min > 400us", actual: 0.0005, passed: true, shown: "500µs"},
		{in: "http_req_duration:max < 1s", actual: 2, passed: false},
		{in: "http_req_duration:avg < 50ms", actual: 0.031, passed: true},
		{in: "http_req_failed:rate < 1%", actual: 0.004, passed: true, shown: "0.40%"},
		{in: "http_req_failed:rate < 0.003", actual: 0.004, passed: false},
		{in: "http_req_failed:count <= 4", actual: 4, passed: true, shown: "4"},
		{in: "http_requests:count > 999", actual: 1000, passed: true},
		{in: "http_requests:rate >= 100", actual: 100, passed: true, shown: "100.0/s"},
		{in: "http_requests:rate > 100", actual: 100, passed: false},
		{in: "http_req_duration{endpoint:login}:p99 < 300ms", actual: 0.45, passed: false, shown: "450.0ms"},
		{in: "http_req_failed{endpoint:login}:rate < 10%", actual: 0.05, passed: true},
		{in: "http_req_duration{endpoint:nope}:p99 < 1s", err: `no endpoint named "nope" in the results`},
		{in: "http_req_duration{endpoint:idle}:p99 < 1s", err: "no requests were recorded, so p99 is undefined"},
		{in: "http_req_failed{endpoint:idle}:rate == 0", actual: 0, passed: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			th, err := Parse(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			got := EvaluateBaseline([]Threshold{th}, src, nil)
			if len(got) != 1 {
				t.Fatalf("Evaluate returned %d outcomes, want 1", len(got))
			}
			o := got[0]
			if tt.err != "" {
				if o.Err == nil || !strings.Contains(o.Err.Error(), tt.err) {
					t.Fatalf("Evaluate(%q).Err = %v, want it to contain %q", tt.in, o.Err, tt.err)
				}
				if o.Passed {
					t.Errorf("Evaluate(%q).Passed = true with an error, want false", tt.in)
				}
				return
			}
			if o.Err != nil {
				t.Fatalf("Evaluate(%q).Err = %v, want nil", tt.in, o.Err)
			}
			if math.Abs(o.Actual-tt.actual) > 1e-12 {
				t.Errorf("Evaluate(%q).Actual = %v, want %v", tt.in, o.Actual, tt.actual)
			}
			if o.Passed != tt.passed {
				t.Errorf("Evaluate(%q).Passed = %v, want %v", tt.in, o.Passed, tt.passed)
			}
			if got := FormatValue(th, o.Actual); tt.shown != "" && got != tt.shown {
				t.Errorf("FormatValue(%q, %v) = %q, want %q", tt.in, o.Actual, got, tt.shown)
			}
		})
	}
}

func TestEvaluateEdgeCases(t *testing.T) {
	t.Parallel()
	th, err := ParseAll([]string{"http_requests:rate > 1\nhttp_req_duration:p99 < 1s"})
	if err != nil {
		t.Fatal(err)
	}
	// A run with no elapsed time has no rate; a nil source has no results.
	got := EvaluateBaseline(th, fakeSource{overall: fakeMetrics{requests: 5}}, nil)
	if got[0].Err == nil || !strings.Contains(got[0].Err.Error(), "no elapsed time") {
		t.Errorf("rate with zero elapsed: Err = %v, want a no-elapsed-time error", got[0].Err)
	}
	for _, o := range EvaluateBaseline(th, nil, nil) {
		if o.Err == nil || o.Passed {
			t.Errorf("Evaluate(nil source) = %+v, want a failed outcome with Err", o)
		}
	}
	for _, o := range EvaluateBaseline(th, fakeSource{}, nil) {
		if o.Err == nil || o.Passed {
			t.Errorf("Evaluate(nil overall) = %+v, want a failed outcome with Err", o)
		}
	}
	if got := EvaluateBaseline(nil, fakeSource{}, nil); len(got) != 0 {
		t.Errorf("Evaluate(nil) = %v, want no outcomes", got)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"http_req_duration:p99 < 300ms",
		"http_req_failed:rate < 1%",
		"http_requests:rate >= 450/s",
		"http_req_duration{endpoint:login}:p(99.9) <= 1.5s",
		"http_req_failed:count == 0",
		"http_req_duration:p99 < µs",
		"http_req_duration{",
		"http_requests:count != 1e3",
		"sut_cpu{service:api}:max < 80%",
		"sut_mem:avg <= 1.5GiB",
		"http_req_duration:p99 < baseline * 1.10",
		"rps > baseline * 0.95",
		"rps>=baseline",
		"http_req_failed:rate < baseline*",
		"http_req_failed:rate < 1",
		"http_req_failed:rate < 0.01",
		"http_req_failed:rate <= 0.999999999999",
		"http_req_duration:p99 < 300",
		"sut_cpu:avg < 1.",
		"http_req_duration{phase:plateau}:p99 < 200ms",
		"http_req_duration{endpoint:login,phase:plateau}:p99 < 200ms",
		"http_req_failed{phase='warm up', endpoint=\"a\"}:rate < 1%",
		"http_req_duration{phase:a,phase:b}:p99 < 1s",
		"http_req_duration{phase:}:p99 < 1s",
		"http_req_duration{,}:p99 < 1s",
		"sut_cpu{phase:x}:max < 80%",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		th, err := Parse(s)
		if err != nil {
			if th != (Threshold{}) {
				t.Fatalf("Parse(%q) returned %+v with error %v, want the zero Threshold", s, th, err)
			}
			return
		}
		if th.Baseline && (th.Value != 0 || !(th.Factor > 0) || math.IsInf(th.Factor, 0)) {
			t.Fatalf("Parse(%q) = %+v, a baseline threshold wants Value 0 and a finite positive Factor", s, th)
		}
		if math.IsNaN(th.Value) || math.IsInf(th.Value, 0) || th.Value < 0 {
			t.Fatalf("Parse(%q).Value = %v, want a finite non-negative number", s, th.Value)
		}
		if th.kind() == kindRatio && th.Value > 1 {
			t.Fatalf("Parse(%q).Value = %v, a failure rate above 1", s, th.Value)
		}
		// A plain failure rate is a fraction below 1 (issue 28).
		if last, _ := utf8.DecodeLastRuneInString(th.Source); th.kind() == kindRatio && !th.Baseline && last != '%' && th.Value >= 1 {
			t.Fatalf("Parse(%q).Value = %v from a plain number, want it refused", s, th.Value)
		}
		if !strings.HasPrefix(th.String(), th.Source) {
			t.Fatalf("Parse(%q).String() = %q, want it to start with the text as written", s, th.String())
		}
		// Parsing is stable: the source parses to the same threshold.
		again, err := Parse(th.Source)
		if err != nil || again != th {
			t.Fatalf("Parse(Parse(%q).Source) = %+v, %v; want %+v", s, again, err, th)
		}
		if th.Phase != "" && (th.isSUT() || !strings.Contains(th.Source, th.Phase)) {
			t.Fatalf("Parse(%q).Phase = %q, not a selector of the text", s, th.Phase)
		}
		_ = EvaluateBaseline([]Threshold{th}, fakeSource{overall: fakeMetrics{requests: 1, elapsed: time.Second}}, nil)
		_ = EvaluateBaseline([]Threshold{th}, phaseSource{fakeSource{overall: fakeMetrics{requests: 1, elapsed: time.Second}}}, nil)
	})
}

type sutSource struct {
	fakeSource
	res map[string]ResourceMetrics
}

func (s sutSource) Resources() map[string]ResourceMetrics { return s.res }

var _ Source = sutSource{}

// sut_cpu and sut_mem parse into their canonical units, check the worst
// service without a selector, and fail clearly with no measurements.
func TestSUTThresholds(t *testing.T) {
	t.Parallel()
	src := sutSource{res: map[string]ResourceMetrics{
		"api": {CPUCoresMax: 0.9, CPUCoresMean: 0.5, CPUShareMax: 0.9, CPUShareMean: 0.5, MemBytesMax: 300 << 20, MemBytesMean: 200 << 20, MemLimitBytes: 512 << 20},
		"db":  {CPUCoresMax: 0.2, CPUCoresMean: 0.1, CPUShareMax: 0.1, CPUShareMean: 0.05, MemBytesMax: 600 << 20, MemBytesMean: 500 << 20},
	}}
	for _, tc := range []struct {
		in     string
		pass   bool
		actual string
	}{
		{"sut_cpu:max < 80%", false, "90.0%"},
		{"sut_cpu{service:db}:max < 80%", true, "10.0%"},
		{"sut_cpu:mean < 0.6cores", true, "0.50 cores"},
		{"sut_cpu:avg < 1", true, "0.50 cores"},
		{"sut_mem:max < 512MB", false, "600.0MiB"},
		{"sut_mem{service:api}:max < 512MB", true, "300.0MiB"},
		{"sut_mem{service:api}:max < 50%", false, "58.6%"},
	} {
		th, err := Parse(tc.in)
		if err != nil {
			t.Fatalf("Parse(%q) = %v", tc.in, err)
		}
		o := EvaluateBaseline([]Threshold{th}, src, nil)[0]
		if o.Err != nil || o.Passed != tc.pass || FormatValue(th, o.Actual) != tc.actual {
			t.Errorf("Evaluate(%q) = passed %v, %s, err %v; want passed %v, %s", tc.in, o.Passed, FormatValue(th, o.Actual), o.Err, tc.pass, tc.actual)
		}
	}
	// A plain number is cores: one the service's limit (here 1 core) can
	// never reach is refused, naming the percent it was likely meant as;
	// written with its unit, it stands.
	for _, tc := range []struct {
		in   string
		want string
	}{
		{"sut_cpu{service:api}:max < 80", "write 80% for a share of its limit"},
		{"sut_cpu{service:api}:max <= 1", "can never be reached by a service limited to 1"},
		{"sut_cpu{service:api}:max < 80cores", ""},
		{"sut_cpu{service:api}:max < 1", ""},
	} {
		th, err := Parse(tc.in)
		if err != nil {
			t.Fatalf("Parse(%q) = %v", tc.in, err)
		}
		o := EvaluateBaseline([]Threshold{th}, src, nil)[0]
		if tc.want == "" && o.Err != nil || tc.want != "" && (o.Err == nil || o.Passed || !strings.Contains(o.Err.Error(), tc.want)) {
			t.Errorf("Evaluate(%q): passed %v, err %v; want error containing %q", tc.in, o.Passed, o.Err, tc.want)
		}
	}
	th, _ := Parse("sut_cpu:max < 80%")
	if o := EvaluateBaseline([]Threshold{th}, fakeSource{}, nil); o[0].Passed || o[0].Err == nil || !strings.Contains(o[0].Err.Error(), "needs services: in the job") ||
		!strings.Contains(o[0].Err.Error(), "run it longer") {
		t.Errorf("Evaluate without measurements = %+v, want an error naming services: and, for a job with them, a step too short for a sample", o[0])
	}
	th, _ = Parse("sut_mem{service:web}:max < 1GB")
	if o := EvaluateBaseline([]Threshold{th}, src, nil); o[0].Err == nil || !strings.Contains(o[0].Err.Error(), `no service named "web" was measured; measured: api, db`) {
		t.Errorf("Evaluate with an unknown service = %+v", o[0])
	}
	for in, want := range map[string]string{
		"sut_cpu:p99 < 80%":                    `column 9: this aggregate is not valid for sut_cpu: want max, avg`,
		"sut_cpu:max < 80 parsecs":             `unknown unit "par"… for CPU`,
		"sut_mem:max < 512 furlongs":           `unknown unit "fur"… for memory`,
		"sut_cpu{endpoint:a}:max < 1":          `want {service:NAME} to select a service`,
		"http_req_duration{service:a}:p99 < 1": `want {endpoint:NAME}, {phase:NAME} or {endpoint:NAME,phase:NAME}`,
	} {
		if _, err := Parse(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v, want it to contain %q", in, err, want)
		}
	}
}

// TestParseErrorsShowNoPartOfASecret: wherever a secret lands in a
// threshold (a workflow may interpolate ${{ secrets.X }} anywhere), the
// error quotes the threshold whole, which a masker hides, and no part of
// the secret longer than 3 characters elsewhere: not its start (the 20
// characters "got" used to quote), not its end, not what precedes a '#'.
func TestParseErrorsShowNoPartOfASecret(t *testing.T) {
	t.Parallel()
	const secret = "Sup3r-S3cret#t0ken.value"
	for _, th := range []string{
		"http_req_duration:p99 < %s",
		"http_req_duration:p99 < 300%s",
		"http_req_duration:p99 < 3%s",
		"http_req_failed:rate < 1%s",
		"http_requests:count > 5%s",
		"http_requests:rate > 100 %s",
		"sut_cpu:max < 80 %s",
		"sut_mem:max < 1%s",
		"%s:p99 < 1",
		"http_req_duration:%s < 1",
		"http_req_duration:p99 %s",
		"http_req_duration{%s}:p99 < 1",
		"http_req_duration:p99 < baseline %s",
		"http_req_duration:p99 < baseline * %s",
		"http_req_duration:p99 < baseline * 1.1%s",
		"rps > %s",
		"http_req_duration:p99 < %s # a comment",
	} {
		checkNoPartOfASecret(t, fmt.Sprintf(th, secret), secret)
	}
	// A secret of digits is a plain failure rate of 1 or more: the fix
	// does not repeat it.
	const digits = "48151623"
	for _, th := range []string{"http_req_failed:rate < %s", "http_req_failed:rate < 0%s", "http_req_failed:rate < %s.5"} {
		checkNoPartOfASecret(t, fmt.Sprintf(th, digits), digits)
	}
}

// checkNoPartOfASecret fails t when line parses, or when its error, with
// secret masked, shows 4 or more characters of secret.
func checkNoPartOfASecret(t *testing.T, line, secret string) {
	t.Helper()
	_, err := ParseAll([]string{line})
	if err == nil {
		t.Errorf("ParseAll(%q) = nil error", line)
		return
	}
	// What a masker leaves: the secret, as written and as %q writes it,
	// hidden.
	msg := strings.ReplaceAll(err.Error(), secret, "***")
	for i := 0; i+4 <= len(secret); i++ {
		if part := secret[i : i+4]; strings.Contains(msg, part) {
			t.Errorf("ParseAll(%q) error, masked, shows %q of the secret:\n%s", line, part, msg)
			return
		}
	}
}
