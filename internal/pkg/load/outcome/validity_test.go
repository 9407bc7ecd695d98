package outcome

import (
	"errors"
	"strings"
	"testing"
)

// invalidResult is an open-model run of 66 requests at an asked 200 req/s
// over 5 s, 934 arrivals dropped for lateness: issue 28's run that exited 0.
func invalidResult() *Input {
	r := result(66, 0)
	r.Open, r.TargetRPS, r.Elapsed = true, 200, 5e9
	r.Dropped, r.DroppedBy = 934, map[string]int64{"late": 934}
	r.Finish()
	return &Input{Result: r}
}

func o(in *Input) *Outcome { return New(*in) }

// TestInvalidFailsBeforeThresholds: a run that did not deliver the load
// asked for is INVALID: it fails, first, with the reason and the fix,
// whatever its thresholds say; a stop and a cancel still come first, and
// `validity: warn` makes it a warning.
func TestInvalidFailsBeforeThresholds(t *testing.T) {
	t.Parallel()
	in := invalidResult()
	in.Thresholds = thresholds(t, "http_req_duration:p99 < 1ms")
	v := New(*in).Verdict
	if v.Kind != Invalid || !v.Kind.Fails() || len(v.Reasons) != 2 {
		t.Fatalf("verdict = %+v, want invalid with the reasons", v)
	}
	if !strings.HasPrefix(v.Reasons[0], "INVALID: sent 66 of 1000 arrivals asked (6.60%); 934 never sent (late: 934)") ||
		!strings.Contains(v.Reasons[0], "raise max_concurrency") || o(in).Summary.Invalid[0].Reason != "achieved_rate" {
		t.Errorf("first reason = %q, want the achieved rate, the dropped arrivals and the fix", v.Reasons[0])
	}
	if !strings.Contains(v.Reasons[1], "thresholds failed") {
		t.Errorf("last reason = %q, want the failed threshold after the invalidity", v.Reasons[len(v.Reasons)-1])
	}

	in.ValidityWarn = true
	v = New(*in).Verdict
	if v.Kind != Fail || len(v.Warnings) != 1 || len(v.Reasons) != 1 || !strings.Contains(v.Warnings[0], "validity: warn") {
		t.Errorf("validity: warn: verdict = %+v, want the threshold failure only, the invalidity as warnings", v)
	}
	in.Thresholds = nil
	if v = New(*in).Verdict; v.Kind != Pass || len(v.Warnings) != 1 {
		t.Errorf("validity: warn without thresholds: verdict = %+v, want a pass with warnings", v)
	}

	in = invalidResult()
	in.Stopped = errors.New("feeder exhausted")
	if v = New(*in).Verdict; v.Kind != Fail || len(v.Reasons) != 1 {
		t.Errorf("stopped: verdict = %+v, want the stop alone", v)
	}
	in = invalidResult()
	in.Cancelled = true
	if v = New(*in).Verdict; v.Kind != Cancelled {
		t.Errorf("cancelled: verdict = %+v, want cancelled", v)
	}
}

// TestValidRunPasses: an open-model run that delivered its rate, and a
// closed-model run, which asks for no rate, are valid.
func TestValidRunPasses(t *testing.T) {
	t.Parallel()
	r := result(1000, 0)
	r.Open, r.TargetRPS = true, 100
	r.Finish()
	closed := result(10, 0)
	for _, in := range []Input{{Result: r}, {Result: closed}} {
		o := New(in)
		if o.Verdict.Kind != Pass || !o.Summary.Valid || len(o.Summary.Invalid) != 0 {
			t.Errorf("verdict = %+v, summary valid %v %+v; want a valid pass", o.Verdict, o.Summary.Valid, o.Summary.Invalid)
		}
	}
}
