package resultview

import (
	"github.com/forgeload/forgeload/internal/pkg/load"
)

// Band is a named phase of the run drawn behind a time chart: a shaded
// strip from X, W wide, over the plot's height.
type Band struct {
	// Name is the phase's name from the config; the page escapes it.
	Name string
	X, W float64
	// Shade alternates the strips' tint, so that neighbours differ.
	Shade bool
}

// phaseWindows are the phase windows of r, in timeline order.
func phaseWindows(r *load.Result) []load.Phase {
	out := make([]load.Phase, 0, len(r.Phases))
	for _, p := range r.Phases {
		out = append(out, p.Phase)
	}
	return out
}

// layoutBands draws c.Phases, in seconds, with sx, clipped to the x range
// [xmin, xmax+1) that the chart's seconds cover.
func (c *Chart) layoutBands(sx func(float64) float64, xmin, xmax float64) {
	right := c.Plot.X + c.Plot.W
	for i, p := range c.Phases {
		from, to := max(p.Start.Seconds(), xmin), min(p.End.Seconds(), xmax+1)
		if to <= from {
			continue
		}
		x0, x1 := sx(from), min(sx(to), right)
		if x1 <= x0 {
			continue
		}
		c.Bands = append(c.Bands, Band{Name: p.Name, X: x0, W: x1 - x0, Shade: i%2 == 1})
	}
}
