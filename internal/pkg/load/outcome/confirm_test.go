package outcome

import (
	"errors"
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
