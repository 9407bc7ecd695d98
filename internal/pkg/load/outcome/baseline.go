package outcome

import "github.com/forgeload/forgeload/internal/pkg/load/resultview"

// charted are the percentiles the report's latency chart draws, which get
// the baseline's value as a reference line.
var charted = map[string]bool{"p50": true, "p90": true, "p99": true, "p99.9": true}

// baselineView is the comparison with the baseline ([Outcome.Deltas]) for
// the HTML report; nil without a baseline.
func (o *Outcome) baselineView() *resultview.Baseline {
	if o.Baseline == nil {
		return nil
	}
	b := &resultview.Baseline{Name: o.Baseline.Path}
	for _, d := range o.Deltas() {
		c := d.Cells()
		r := resultview.BaselineRow{Metric: d.Metric, Old: c.Old, New: c.New, Change: c.Change, Verdict: c.Verdict, Limit: c.Limit,
			Noise: d.Noise, Worse: d.Significant && d.Worse(), Regressed: d.Regressed}
		if charted[d.Metric] && d.Unit == "ms" {
			r.RefMS = d.Old
		}
		b.Rows = append(b.Rows, r)
	}
	return b
}
