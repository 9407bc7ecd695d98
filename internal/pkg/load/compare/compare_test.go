package compare

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/forgeload/forgeload/internal/pkg/load"
	"github.com/forgeload/forgeload/internal/pkg/load/outcome/summary"
	"github.com/forgeload/forgeload/internal/pkg/load/threshold"
)

// run builds a JSON result of secs seconds at rps requests per second whose
// latencies are base plus a spread of 0–10 ms, and errs failures in all,
// and reads it back.
func run(t *testing.T, secs, rps int, base time.Duration, errs int) *Result {
	t.Helper()
	r := &load.Result{Open: true, TargetRPS: float64(rps)}
	for s := range secs {
		snap := &load.Snapshot{Second: s, TargetRPS: float64(rps)}
		es := load.EndpointStats{Name: "home"}
		es.Latency = load.NewHistogram()
		for i := range rps {
			es.Latency.Record(base + time.Duration(i*10000/rps)*time.Microsecond)
			es.Requests++
		}
		if s == 0 {
			es.Errors = int64(errs)
		}
		snap.Endpoints = []load.EndpointStats{es}
		snap.Stats.Merge(&es.Stats)
		r.AddSnapshot(snap)
	}
	r.Elapsed = time.Duration(secs) * time.Second
	r.Finish()
	var b bytes.Buffer
	sum := summary.Of(r, nil)
	if err := sum.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	res, err := Read(&b, "run.json")
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func find(t *testing.T, ds []Delta, metric string) Delta {
	t.Helper()
	for _, d := range ds {
		if d.Metric == metric {
			return d
		}
	}
	t.Fatalf("no %s delta in %+v", metric, ds)
	return Delta{}
}

func TestCompareNoiseAndRegression(t *testing.T) {
	t.Parallel()
	old := run(t, 10, 200, 20*time.Millisecond, 2)
	same := run(t, 10, 200, 20*time.Millisecond+100*time.Microsecond, 3) // 0.5% slower: noise
	slow := run(t, 10, 200, 30*time.Millisecond, 40)                     // 10 ms slower, more errors
	limits := Limits{"p99": 0.10, "error_rate": 0.005, "rps": 0.05}

	ds := Compare(old, same, limits)
	if Regressed(ds) {
		t.Errorf("a 0.5%% change regressed: %+v", ds)
	}
	if d := find(t, ds, "p99"); d.Significant {
		t.Errorf("p99 %v → %v counted beyond noise (%s)", d.Old, d.New, d.Noise)
	}
	if d := find(t, ds, "error_rate"); d.Significant {
		t.Errorf("2 → 3 errors in 2000 counted beyond noise (%s)", d.Noise)
	}

	ds = Compare(old, slow, limits)
	if !Regressed(ds) {
		t.Errorf("a 35%% slower p99 did not regress: %+v", ds)
	}
	for _, m := range []string{"p50", "p99", "error_rate"} {
		if d := find(t, ds, m); !d.Significant || !d.Regressed && d.HasLimit {
			t.Errorf("%s %v → %v: significant=%v regressed=%v (%s), want both", m, d.Old, d.New, d.Significant, d.Regressed, d.Noise)
		}
	}
	if d := find(t, ds, "rps"); d.Significant || d.Regressed {
		t.Errorf("the same rate counted as a change: %+v", d)
	}
	// Without limits nothing regresses, but the table still says worse.
	if Regressed(Compare(old, slow, nil)) {
		t.Errorf("regressed without limits")
	}
	var b bytes.Buffer
	if err := WriteText(&b, "old.json", "new.json", ds); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "REGRESSION") || !strings.Contains(b.String(), "95% CI") {
		t.Errorf("table lacks the regression or the noise:\n%s", b.String())
	}
}

func TestCompareOlderSchema(t *testing.T) {
	t.Parallel()
	old, err := Load("testdata/v1.json")
	if err != nil {
		t.Fatal(err)
	}
	if old.SchemaVersion != 1 || old.Hist != nil {
		t.Fatalf("v1 result read as schema %d with hist %v", old.SchemaVersion, old.Hist)
	}
	// A v2 run whose p99 is about 60ms against the v1 run's 50ms.
	new := run(t, 10, 100, 50*time.Millisecond, 0)
	ds := Compare(old, new, Limits{"p99": 0.10})
	d := find(t, ds, "p99")
	if !d.Significant || !d.Regressed || !strings.Contains(d.Noise, "older result") {
		t.Errorf("p99 %v → %v against a v1 result: %+v, want a regression decided by the 5%% rule", d.Old, d.New, d)
	}
	// Baseline thresholds work against the v1 result for the percentiles
	// it kept, and fail clearly for the others.
	ths, err := threshold.ParseAll([]string{"http_req_duration:p99 < baseline * 1.10\nhttp_req_duration:p99.99 < baseline\nrps > baseline * 0.95"})
	if err != nil {
		t.Fatal(err)
	}
	outs := threshold.EvaluateBaseline(ths, new, old)
	if outs[0].Passed || outs[0].BaselineValue != 0.050 {
		t.Errorf("p99 vs v1 baseline = %+v, want a failure against 50ms", outs[0])
	}
	if outs[1].Err == nil {
		t.Errorf("p99.99 vs v1 baseline = %+v, want an error", outs[1])
	}
	if !outs[2].Passed {
		t.Errorf("rps vs v1 baseline = %+v, want a pass", outs[2])
	}
}

func TestReadRejects(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, err string }{
		{`{"schema_version": 99, "requests": 1}`, "newer than this forgeload"},
		{`{"p99_latency_ms": 3}`, "not a forgeload JSON result"},
		{`not json`, "want the JSON written by forgeload load"},
		{`{"requests": 1, "latency_hist": "AAAA"}`, "latency_hist"},
	} {
		if _, err := Read(strings.NewReader(tc.in), "x.json"); err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "x.json") {
			t.Errorf("Read(%s) = %v, want an error naming x.json and %q", tc.in, err, tc.err)
		}
	}
}

func TestParseLimit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		k    string
		v    float64
		fail bool
	}{
		{in: "p99=10%", k: "p99", v: 0.10},
		{in: "error_rate=0.5%", k: "error_rate", v: 0.005},
		{in: "rps=5", k: "rps", v: 0.05}, // a percent without its sign
		{in: "p98=1%", fail: true},
		{in: "p99", fail: true},
		{in: "p99=-1%", fail: true},
	} {
		k, v, err := ParseLimit(tc.in)
		if (err != nil) != tc.fail || !tc.fail && (k != tc.k || v-tc.v > 1e-12 || tc.v-v > 1e-12) {
			t.Errorf("ParseLimit(%q) = %q, %v, %v", tc.in, k, v, err)
		}
	}
}

func TestCompareResources(t *testing.T) {
	t.Parallel()
	old := run(t, 5, 50, 10*time.Millisecond, 0)
	new := run(t, 5, 50, 10*time.Millisecond, 0)
	old.SUT = []load.ResourceSummary{{Target: "api", CPUCoresMean: 1.0, CPUCoresMax: 1.0, MemBytesMax: 100 << 20}}
	new.SUT = []load.ResourceSummary{{Target: "api", CPUCoresMean: 1.5, CPUCoresMax: 1.5, MemBytesMax: 101 << 20}}
	ds := Compare(old, new, Limits{"sut_cpu": 0.2})
	if d := find(t, ds, "sut_cpu:api"); !d.Significant || !d.Regressed {
		t.Errorf("CPU 1.0 → 1.5 cores = %+v, want a regression beyond the 20%% limit", d)
	}
	if d := find(t, ds, "sut_mem:api"); d.Significant {
		t.Errorf("memory +1%% = %+v, want noise", d)
	}
	ths, err := threshold.ParseAll([]string{"sut_cpu:max < baseline * 1.2"})
	if err != nil {
		t.Fatal(err)
	}
	if o := threshold.EvaluateBaseline(ths, new, old)[0]; o.Err != nil || o.Passed || o.BaselineValue != 1 {
		t.Errorf("sut_cpu against the baseline = %+v, want a failure against 1 core", o)
	}
}
