package outcome

import (
	"github.com/forgeload/forgeload/internal/pkg/load"
)

// regression reports whether a run failed only because it compared badly
// with its baseline: the verdict is Fail, the run was neither stopped
// nor short of its plan, and every failed threshold is one that uses
// baseline. Only such a run is worth running again to confirm (`confirm:`
// in a load step, `--confirm` on forgeload load): a failure of any other
// kind would fail the rerun as well.
func regression(in Input, checks []load.Check, v Verdict) bool {
	if v.Kind != Fail || in.Baseline == nil || in.Stopped != nil || in.Shortfall != "" || len(v.Failed) == 0 || len(v.Reasons) != 1 {
		return false
	}
	if len(checks) != len(in.Thresholds) {
		return false
	}
	for i, c := range checks {
		if !c.Passed && !in.Thresholds[i].Baseline {
			return false
		}
	}
	return true
}
