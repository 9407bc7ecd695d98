package threshold

import (
	"math"
	"strings"
	"testing"
	"time"
)

// arrivalMetrics is fakeMetrics with the validity metrics.
type arrivalMetrics struct {
	fakeMetrics
	dropped, late int64
	ratio         float64
	open          bool
}

func (a arrivalMetrics) Dropped() int64                 { return a.dropped }
func (a arrivalMetrics) Late() int64                    { return a.late }
func (a arrivalMetrics) AchievedRatio() (float64, bool) { return a.ratio, a.open }

var _ ArrivalMetrics = arrivalMetrics{}

func TestValidityMetricsParseWithTheirUnit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, echo string
		value    float64
	}{
		{"dropped:count == 0", "dropped:count == 0", 0},
		{"dropped:rate < 1%", "dropped:rate < 1% (0.01)", 0.01},
		{"dropped:rate < 0.001", "dropped:rate < 0.001 (0.1%)", 0.001},
		{"late:rate < 5%", "late:rate < 5% (0.05)", 0.05},
		{"late{endpoint:login}:count < 10", "late{endpoint:login}:count < 10", 10},
		{"achieved_ratio:value >= 99%", "achieved_ratio:value >= 99% (0.99)", 0.99},
		{"achieved_ratio >= 0.99", "achieved_ratio >= 0.99 (99%)", 0.99},
		{"achieved_ratio >= 1", "achieved_ratio >= 1 (100%)", 1},
		{"achieved_ratio <= 120%", "achieved_ratio <= 120% (1.2)", 1.2},
	} {
		th, err := Parse(tc.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.in, err)
			continue
		}
		if th.String() != tc.echo || math.Abs(th.Value-tc.value) > 1e-12 {
			t.Errorf("Parse(%q) = %q value %v, want %q value %v", tc.in, th.String(), th.Value, tc.echo, tc.value)
		}
	}
}

func TestValidityMetricsRefuseSilentUnits(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"dropped:rate < 1", "write 1% or 0.01"},
		{"late:rate < 5", "write 5% or 0.05"},
		{"achieved_ratio >= 99", "write 99% or 0.99"},
		{"achieved_ratio >= 99ms", `unknown unit "ms" for the achieved ratio`},
		{"dropped{endpoint:a}:count == 0", "dropped is measured over the whole run, not per endpoint"},
		{"achieved_ratio{endpoint:a} >= 99%", "achieved_ratio is measured over the whole run"},
		{"dropped:p99 < 1", "this aggregate is not valid for dropped: want count, rate"},
		{"dropped:count < 1.5", "not a whole number"},
	} {
		_, err := Parse(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) error = %v, want it to say %q", tc.in, err, tc.want)
		}
	}
}

func TestValidityMetricsEvaluate(t *testing.T) {
	t.Parallel()
	m := arrivalMetrics{fakeMetrics: fakeMetrics{requests: 66, elapsed: 5 * time.Second}, dropped: 934, late: 33, ratio: 0.066, open: true}
	src := fakeSource{overall: m, endpoints: map[string]Metrics{"a": m}}
	for _, tc := range []struct {
		in     string
		actual float64
		passed bool
	}{
		{"dropped:count == 0", 934, false},
		{"dropped:rate < 1%", 0.934, false},
		{"late:rate < 60%", 0.5, true},
		{"late{endpoint:a}:count < 10", 33, false},
		{"achieved_ratio >= 99%", 0.066, false},
	} {
		th, err := Parse(tc.in)
		if err != nil {
			t.Fatal(err)
		}
		o := EvaluateBaseline([]Threshold{th}, src, nil)[0]
		if o.Err != nil || math.Abs(o.Actual-tc.actual) > 1e-9 || o.Passed != tc.passed {
			t.Errorf("%s: actual %v passed %v err %v, want %v %v", tc.in, o.Actual, o.Passed, o.Err, tc.actual, tc.passed)
		}
	}
	closed := fakeSource{overall: arrivalMetrics{fakeMetrics: fakeMetrics{requests: 5}}}
	th, _ := Parse("achieved_ratio >= 99%")
	if o := EvaluateBaseline([]Threshold{th}, closed, nil)[0]; o.Err == nil || !strings.Contains(o.Err.Error(), "closed model") || o.Passed {
		t.Errorf("achieved_ratio in the closed model = %+v, want an error naming the closed model", o)
	}
	if o := EvaluateBaseline([]Threshold{th}, fakeSource{overall: fakeMetrics{requests: 5}}, nil)[0]; o.Err == nil || o.Passed {
		t.Errorf("achieved_ratio without arrival metrics = %+v, want it to fail with an error", o)
	}
}

func FuzzParseValidity(f *testing.F) {
	for _, s := range []string{
		"dropped:count == 0", "dropped:rate < 1%", "late:rate < 0.05", "late{endpoint:x}:count < 3",
		"achieved_ratio >= 99%", "achieved_ratio:value >= 0.99", "achieved_ratio >= 1.5", "achieved_ratio{",
		"dropped:rate < 1", "achieved_ratio", "achieved_ratio:", "late:rate < 100%",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		th, err := Parse(s)
		if err != nil {
			if th != (Threshold{}) {
				t.Fatalf("Parse(%q) returned %+v with error %v", s, th, err)
			}
			return
		}
		if math.IsNaN(th.Value) || math.IsInf(th.Value, 0) || th.Value < 0 {
			t.Fatalf("Parse(%q).Value = %v", s, th.Value)
		}
		if th.Metric == MetricDropped && th.Endpoint != "" || th.Metric == MetricAchieved && th.Aggregate != "value" {
			t.Fatalf("Parse(%q) = %+v", s, th)
		}
		if !th.Baseline && th.kind() == kindAchieved && !strings.HasSuffix(th.Source, "%") && th.Value > 1 {
			t.Fatalf("Parse(%q).Value = %v from a plain number above 1, want it refused", s, th.Value)
		}
		if !strings.HasPrefix(th.String(), th.Source) {
			t.Fatalf("Parse(%q).String() = %q", s, th.String())
		}
	})
}
