package outcome

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestRegression: only a run that failed on its baseline thresholds alone
// is a regression that a rerun may overturn; a failure of any other kind
// (another threshold, a stop, a shortfall, a pass) is not.
func TestRegression(t *testing.T) {
	slowBase := baselineOf(100, time.Millisecond) // the run's 10 ms is 10× slower
	for _, c := range []struct {
		name string
		in   Input
		want bool
	}{
		{"baseline threshold alone failed", Input{Thresholds: thresholds(t, "http_req_duration:p99 < baseline * 1.10", "http_req_failed:rate < 1%"), Baseline: slowBase}, true},
		{"an absolute threshold failed too", Input{Thresholds: thresholds(t, "http_req_duration:p99 < baseline * 1.10", "http_req_duration:p99 < 1ms"), Baseline: slowBase}, false},
		{"only an absolute threshold failed", Input{Thresholds: thresholds(t, "http_req_duration:p99 < 1ms"), Baseline: slowBase}, false},
		{"baseline threshold passed", Input{Thresholds: thresholds(t, "http_req_duration:p99 < baseline * 100"), Baseline: slowBase}, false},
		{"no baseline: the threshold is skipped", Input{Thresholds: thresholds(t, "http_req_duration:p99 < baseline * 1.10")}, false},
		{"stopped on its own", Input{Thresholds: thresholds(t, "http_req_duration:p99 < baseline * 1.10"), Baseline: slowBase, Stopped: errors.New("feeder ran out")}, false},
		{"short of its plan", Input{Thresholds: thresholds(t, "http_req_duration:p99 < baseline * 1.10"), Baseline: slowBase, Shortfall: "a worker was lost"}, false},
	} {
		c.in.Result = result(100, 0)
		if got := New(c.in).Regression; got != c.want {
			t.Errorf("%s: Regression = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestHTMLBaseline: the HTML report shows the outcome's own comparison
// with the baseline (the deltas of [Outcome.Deltas]); a report without a
// baseline shows none. (The reference lines on the latency chart are
// checked in the browser, package resultview.)
func TestHTMLBaseline(t *testing.T) {
	ths := thresholds(t, "http_req_duration:p99 < baseline * 1.10")
	o := New(Input{Result: result(100, 0), Thresholds: ths, Baseline: baselineOf(100, time.Millisecond)})
	var b bytes.Buffer
	if err := o.WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	var p99 string
	for _, d := range o.Deltas() {
		if d.Metric == "p99" {
			p99 = d.Cells().Change
		}
	}
	for _, want := range []string{`<table id="baseline">`, `<p class="note" id="baseline-name">baseline.json</p>`, `data-metric="p99"`, ">" + strings.ReplaceAll(p99, "+", "&#43;") + "<"} {
		if p99 == "" || !strings.Contains(html, want) {
			t.Errorf("report with a baseline lacks %q", want)
		}
	}
	b.Reset()
	if err := New(Input{Result: result(100, 0), Thresholds: ths}).WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), `id="baseline"`) {
		t.Errorf("report without a baseline shows one")
	}
}
