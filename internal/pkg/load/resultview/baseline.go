package resultview

// Baseline is the comparison of a run with its baseline, as the caller
// judged it (package outcome, through package compare): the view shows
// it beside the run and does not judge it again.
type Baseline struct {
	// Name says what the baseline is, e.g. "median of 5 runs (run 35 on
	// main, …)"; it may come from the forge, and the page escapes it.
	Name string
	// Rows are the compared metrics: rate, percentiles, error rate, …
	Rows []BaselineRow
}

// BaselineRow is one compared metric, formatted.
type BaselineRow struct {
	Metric, Old, New, Change, Verdict, Limit, Noise string
	// Worse marks a change beyond noise in the wrong direction;
	// Regressed one beyond its limit too.
	Worse, Regressed bool
	// RefMS is, for a percentile drawn on the latency chart (p50, p90,
	// p99, p99.9), the baseline's value in ms, drawn there as a dashed
	// reference line; 0 for any other metric.
	RefMS float64
}

// SetBaseline shows b beside the run: its table, and its percentiles as
// reference lines on the latency chart. A nil b shows nothing.
func (v *View) SetBaseline(b *Baseline) {
	v.Baseline = b
	if b == nil {
		return
	}
	for _, c := range v.Charts {
		if c.ID == "latency" {
			c.addReferences(b.Rows)
			c.layout()
		}
	}
}

// addReferences adds a dashed horizontal series "baseline <metric>" across
// the chart's time range for each row with a reference value, in the
// colour of the run's series of that metric.
func (c *Chart) addReferences(rows []BaselineRow) {
	first, last, ok := c.xRange()
	if !ok {
		return
	}
	colour := map[string]string{}
	for i, s := range c.Series {
		colour[s.Name] = palette[i%len(palette)]
	}
	for _, r := range rows {
		if r.RefMS > 0 {
			c.Series = append(c.Series, Series{Name: "baseline " + r.Metric, Dashed: true, Color: colour[r.Metric],
				Points: []Point{{X: first, Y: r.RefMS}, {X: last, Y: r.RefMS}}})
		}
	}
}

// xRange is the smallest and largest x of the chart's series.
func (c *Chart) xRange() (lo, hi float64, ok bool) {
	for _, s := range c.Series {
		for _, p := range s.Points {
			if !ok || p.X < lo {
				lo = p.X
			}
			if !ok || p.X > hi {
				hi = p.X
			}
			ok = true
		}
	}
	return lo, hi, ok && hi > lo
}
