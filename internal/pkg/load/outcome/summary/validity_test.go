package summary

import (
	"strings"
	"testing"

	"github.com/forgeload/forgeload/internal/pkg/load"
)

// TestValidityVerdictNeverValidForLess: a run the validity rules do not
// judge (one that stopped early, or a closed-model run that dropped
// iterations, as a feeder with recycle: false does when it runs out) is
// shown as "not judged", with why, never as "valid". Before, both read
// "valid" beside a summary that said requests were never sent.
func TestValidityVerdictNeverValidForLess(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		s    Summary
		want string
	}{
		{"complete closed run", Summary{Model: "closed"}, "valid"},
		{"open run, handover drops only", Summary{Model: "open", Dropped: 2, DroppedBy: map[string]int64{"handover": 2}}, "valid"},
		{"interrupted", Summary{Model: "open", Interrupted: true}, "not judged: the run stopped before its end"},
		{"feeder ran out", Summary{Model: "closed", Dropped: 1, DroppedBy: map[string]int64{"feeder_exhausted": 1}}, "not judged: 1 iterations never sent a request (feeder_exhausted: 1)"},
		{"invalid", Summary{Model: "open", Invalid: []load.Invalidity{{Reason: "dropped", Detail: "sent 9 of 10"}}}, "INVALID: sent 9 of 10"},
	} {
		if got := ValidityVerdict(&tt.s); !strings.HasPrefix(got, tt.want) || (tt.want == "valid" && got != "valid") {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
	// The JSON summary's and the load step's output valid agree with the
	// row: a script reading valid is not told true about less either.
	for name, r := range map[string]*load.Result{
		"interrupted":    {Open: true, Interrupted: true},
		"feeder ran out": {Dropped: 1, DroppedBy: map[string]int64{"feeder_exhausted": 1}},
	} {
		if s := Of(r, nil); s.Valid {
			t.Errorf("%s: valid = true, want false (%s)", name, ValidityVerdict(&s))
		}
	}
	if s := Of(&load.Result{}, nil); !s.Valid {
		t.Errorf("a complete closed run: valid = false (%s)", ValidityVerdict(&s))
	}
}
