package outcome

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/forgeload/forgeload/internal/pkg/load"
	"github.com/forgeload/forgeload/internal/pkg/load/build"
	"github.com/forgeload/forgeload/internal/pkg/load/compare"
	"github.com/forgeload/forgeload/internal/pkg/load/duet"
	"github.com/forgeload/forgeload/internal/pkg/load/outcome/summary"
	"github.com/forgeload/forgeload/internal/pkg/load/spec"
	"github.com/forgeload/forgeload/internal/pkg/load/threshold"
)

// result is a finished one-host result of n requests, failed of them
// failed, each taking 10 ms, over 10 s.
func result(n, failed int64) *load.Result {
	r := &load.Result{Elapsed: 10 * time.Second}
	r.Requests, r.Errors = n, failed
	r.Latency = load.NewHistogram()
	for range n {
		r.Latency.Record(10 * time.Millisecond)
	}
	r.Finish()
	return r
}

func thresholds(t *testing.T, lines ...string) []threshold.Threshold {
	t.Helper()
	ths, err := threshold.ParseAll(lines)
	if err != nil {
		t.Fatal(err)
	}
	return ths
}

// baselineOf is the read-back result of an earlier run of n requests at
// lat each.
func baselineOf(n int64, lat time.Duration) *compare.Result {
	r := &load.Result{Elapsed: 10 * time.Second}
	r.Requests = n
	r.Latency = load.NewHistogram()
	for range n {
		r.Latency.Record(lat)
	}
	return compare.FromResult(r, "baseline.json")
}

// TestVerdictOrder: one order for every caller: stopped, cancelled,
// failed thresholds, shortfall, nothing measured, pass.
func TestVerdictOrder(t *testing.T) {
	failing := "http_req_duration:p99 < 1ms"
	for _, c := range []struct {
		name string
		in   Input
		kind Kind
		want []string
	}{
		{"pass", Input{Result: result(100, 0), Thresholds: thresholds(t, "http_req_duration:p99 < 1s")}, Pass, nil},
		{"no thresholds pass", Input{Result: result(100, 0)}, Pass, nil},
		{"aborted beats everything", Input{Result: func() *load.Result { r := result(100, 100); r.Interrupted = true; return r }(), Thresholds: thresholds(t, failing),
			Stopped: fmt.Errorf("wrapped: %w", abortOf(t)), Cancelled: true}, Fail, []string{"aborted: http_req_failed:rate < 1% (0.01) at 2s (got 100.00%)"}},
		{"stopped beats the rest", Input{Result: result(0, 0), Thresholds: thresholds(t, failing), Stopped: errors.New("feeder: rows ran out"), Cancelled: true}, Fail, []string{"load test stopped: feeder: rows ran out"}},
		{"cancelled beats failed thresholds", Input{Result: result(100, 0), Thresholds: thresholds(t, failing), Cancelled: true}, Cancelled, []string{"interrupted"}},
		{"interrupted result is cancelled", Input{Result: func() *load.Result { r := result(100, 0); r.Interrupted = true; return r }(), Thresholds: thresholds(t, failing)}, Cancelled, []string{"interrupted"}},
		{"thresholds then shortfall", Input{Result: result(100, 0), Thresholds: thresholds(t, failing), Shortfall: "delivered 100 of 200", Where: " on the merged result"}, Fail, []string{"1 of 1 thresholds failed on the merged result: " + failing, "delivered 100 of 200"}},
		{"nothing measured", Input{Result: result(5, 5)}, Fail, []string{"(5 of 5 requests failed)"}},
		{"failed thresholds hide nothing measured", Input{Result: result(5, 5), Thresholds: thresholds(t, "http_req_failed:rate < 1%")}, Fail, []string{"1 of 1 thresholds failed"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := New(c.in).Verdict
			if v.Kind != c.kind || len(v.Reasons) != len(c.want) {
				t.Fatalf("verdict %v %q, want %v with %d reasons %q", v.Kind, v.Reasons, c.kind, len(c.want), c.want)
			}
			for i, w := range c.want {
				if !strings.Contains(v.Reasons[i], w) {
					t.Errorf("reason %d = %q, want it to contain %q", i, v.Reasons[i], w)
				}
			}
			if (v.Err() == nil) != (c.kind == Pass) {
				t.Errorf("Err() = %v for %v", v.Err(), v.Kind)
			}
		})
	}
}

func abortOf(t *testing.T) *build.Abort {
	return &build.Abort{Threshold: thresholds(t, "http_req_failed:rate < 1%")[0], At: 2 * time.Second, Actual: "100.00%"}
}

// TestAbortedSummary: the summary says which threshold aborted the run,
// and when.
func TestAbortedSummary(t *testing.T) {
	o := New(Input{Result: result(100, 100), Stopped: abortOf(t)})
	var text bytes.Buffer
	if err := o.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	want := "aborted: http_req_failed:rate < 1% (0.01) at 2s (got 100.00%)"
	if !strings.Contains(text.String(), "\n  "+want+"\n") || o.Summary.Aborted != want {
		t.Errorf("summary:\n%s\nwant the line %q", text.String(), want)
	}
}

// TestBaselineThresholds: the baseline thresholds are checked against
// the baseline when there is one and skipped (passing) when there is
// none, also when the job's services were measured (a multi-host step
// used to pass a typed nil baseline there, which failed the threshold).
func TestBaselineThresholds(t *testing.T) {
	ths := thresholds(t, "http_req_duration:p99 < baseline * 1.10")
	sut := []load.ResourceSummary{{Target: "api", Samples: 3}}
	o := New(Input{Result: result(100, 0), Thresholds: ths, SUT: sut})
	if o.Verdict.Kind != Pass || len(o.Checks) != 1 || !o.Checks[0].Skipped {
		t.Fatalf("without a baseline: %v %+v, want a pass with the check skipped", o.Verdict, o.Checks)
	}
	o = New(Input{Result: result(100, 0), Thresholds: ths, Baseline: baselineOf(100, time.Millisecond)})
	if o.Verdict.Kind != Fail || len(o.Verdict.Failed) != 1 {
		t.Fatalf("10 ms against a 1 ms baseline: %+v, want the baseline threshold failing", o.Verdict)
	}
	if len(o.Deltas()) == 0 {
		t.Error("no deltas against the baseline")
	}
}

// TestSummarizeOnce: an outcome summarises its result once, however many
// writers write it.
func TestSummarizeOnce(t *testing.T) {
	calls := 0
	defer func(f func(*load.Result, []load.Check) summary.Summary) { summarize = f }(summarize)
	orig := summarize
	summarize = func(r *load.Result, c []load.Check) summary.Summary { calls++; return orig(r, c) }

	o := New(Input{Result: result(100, 0), Thresholds: thresholds(t, "http_req_duration:p99 < 1s"),
		Baseline: baselineOf(100, 10*time.Millisecond), Info: &summary.RunInfo{Step: "smoke"}})
	for _, w := range []Writer{Text, Markdown, JSON, HTML} {
		var b bytes.Buffer
		if err := w(o, &b); err != nil || b.Len() == 0 {
			t.Fatalf("writer: %v, %d bytes", err, b.Len())
		}
	}
	_ = o.Deltas()
	if calls != 1 {
		t.Errorf("Summarize ran %d times for one outcome and its four writers, want 1", calls)
	}
	if o.Summary.Run == nil || o.Summary.Run.Step != "smoke" {
		t.Errorf("summary run info = %+v, want the outcome's Info", o.Summary.Run)
	}
}

// TestFailureLogger: the first ten failures, a note, then at most one a
// second.
func TestFailureLogger(t *testing.T) {
	var lines []string
	logf := func(format string, args ...any) { lines = append(lines, fmt.Sprintf(format, args...)) }
	f := FailureLogger([]spec.Endpoint{{Name: "home"}}, logf)
	for range 50 {
		f(&load.Sample{Endpoint: 0, Status: 500}, errors.New("status 500"))
	}
	failed := 0
	for _, l := range lines {
		if strings.HasPrefix(l, `request failed: endpoint "home" status 500`) {
			failed++
		}
	}
	// 50 calls take far less than the second after which one more is
	// logged; allow that one on a slow machine.
	if failed < LogErrorsFirst || failed > LogErrorsFirst+1 || !strings.Contains(strings.Join(lines, "\n"), "more requests failed") {
		t.Errorf("logged %d failures (want %d) in:\n%s", failed, LogErrorsFirst, strings.Join(lines, "\n"))
	}
}

// TestFailureLoggerBaselineSide: a paired A/B run's baseline requests
// (endpoint indexes past the config's) are logged as baseline:<name>.
func TestFailureLoggerBaselineSide(t *testing.T) {
	var lines []string
	logf := func(format string, args ...any) { lines = append(lines, fmt.Sprintf(format, args...)) }
	f := FailureLogger([]spec.Endpoint{{Name: "home"}, {Name: "cart"}}, logf)
	f(&load.Sample{Endpoint: 3, Status: 503}, errors.New("status 503"))
	if len(lines) != 1 || !strings.HasPrefix(lines[0], `request failed: endpoint "baseline:cart" status 503`) {
		t.Errorf("logged %q, want the baseline side's cart endpoint", lines)
	}
}

// pairedVerdict judges 10 seconds of a paired run whose candidate is
// factor times slower than its baseline.
func pairedVerdict(factor float64) *duet.Verdict {
	var secs []duet.Second
	for i := range 10 {
		b := time.Duration(10+i%3) * time.Millisecond
		c := time.Duration(float64(b) * factor)
		secs = append(secs, duet.Second{Second: i,
			Candidate: duet.Point{Requests: 50, P50: c, P95: c, P99: c},
			Baseline:  duet.Point{Requests: 50, P50: b, P95: b, P99: b}})
	}
	v := duet.Judge(secs, secs[0].Candidate, secs[0].Baseline, nil)
	v.Candidate, v.Baseline = "http://cand:1", "http://base:2"
	return &v
}

// TestPairedVerdict: a paired regression fails the run after the failed
// thresholds and shows in every summary, last in the JSON result; an
// unchanged candidate passes.
func TestPairedVerdict(t *testing.T) {
	o := New(Input{Result: result(100, 0), Thresholds: thresholds(t, "http_req_duration:p99 < 1ms"), Duet: pairedVerdict(2)})
	if o.Verdict.Kind != Fail || len(o.Verdict.Reasons) != 2 || !strings.Contains(o.Verdict.Reasons[0], "thresholds failed") ||
		!strings.Contains(o.Verdict.Reasons[1], "regressed against the baseline target") {
		t.Errorf("verdict %s %q, want fail: the thresholds, then the paired regression", o.Verdict.Kind, o.Verdict.Reasons)
	}
	for name, w := range map[string]Writer{"text": Text, "markdown": Markdown, "json": JSON} {
		var b bytes.Buffer
		if err := w(o, &b); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), "http://base:2") {
			t.Errorf("%s summary does not name the baseline target:\n%s", name, b.String())
		}
		if name == "json" {
			var v struct {
				Requests int64 `json:"requests"`
				Duet     struct {
					Regressed bool `json:"regressed"`
				} `json:"duet"`
			}
			if err := json.Unmarshal(b.Bytes(), &v); err != nil || v.Requests != 100 || !v.Duet.Regressed {
				t.Errorf("JSON result %+v, %v; want the summary and the regressed paired verdict", v, err)
			}
		}
	}
	if o := New(Input{Result: result(100, 0), Duet: pairedVerdict(1)}); o.Verdict.Kind != Pass {
		t.Errorf("unchanged candidate: %s %q, want pass", o.Verdict.Kind, o.Verdict.Reasons)
	}
}
