package threshold

import (
	"strings"
	"testing"
)

// checkSource is a run whose response checks passed and failed so often.
type checkSource struct {
	fakeSource
	passed, failed int64
}

func (s checkSource) CheckTotals() (passed, failed int64) { return s.passed, s.failed }

var _ CheckSource = checkSource{}

func TestChecksRateThreshold(t *testing.T) {
	t.Parallel()
	th, err := Parse("checks:rate > 99%")
	if err != nil {
		t.Fatal(err)
	}
	if th.Value != 0.99 || th.String() != "checks:rate > 99% (0.99)" {
		t.Errorf("Parse = value %v, echo %q; want 0.99 and the bound in both units", th.Value, th.String())
	}
	for _, tc := range []struct {
		src  Source
		pass bool
		err  string
	}{
		{checkSource{passed: 995, failed: 5}, true, ""},
		{checkSource{passed: 98, failed: 2}, false, ""},
		// No check ran (no checks: in the config, or a result that does
		// not carry them): nothing was measured, so it must not pass.
		{checkSource{}, false, "no response check ran"},
		{fakeSource{}, false, "no response check ran"},
	} {
		o := EvaluateBaseline([]Threshold{th}, tc.src, nil)[0]
		if o.Passed != tc.pass || (tc.err != "" && (o.Err == nil || !strings.Contains(o.Err.Error(), tc.err))) {
			t.Errorf("checks:rate > 99%% on %+v = passed %v, err %v; want passed %v, err %q", tc.src, o.Passed, o.Err, tc.pass, tc.err)
		}
	}
}

func TestChecksThresholdErrors(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]string{
		// A bare rate of 1 or more is a percentage without its sign.
		"checks:rate > 99":             "a plain number of 1 or more is not a fraction: write 99% or 0.99",
		"checks:count > 1":             "this aggregate is not valid for checks: want rate",
		"checks{endpoint:a}:rate > 1%": "checks takes no selector",
		"check:rate > 1%":              "did you mean checks?",
	} {
		if _, err := Parse(s); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v, want an error with %q", s, err, want)
		}
	}
	if th, err := Parse("checks:rate >= 0.999"); err != nil || th.String() != "checks:rate >= 0.999 (99.9%)" {
		t.Errorf("Parse(checks:rate >= 0.999) = %q, %v; want the percentage in the echo", th.String(), err)
	}
}
