package resultview

import (
	"cmp"
	"math"
	"strconv"
	"strings"

	"github.com/forgeload/forgeload/internal/pkg/load"
)

// Chart geometry, in SVG user units.
const (
	chartW      = 860
	chartH      = 240
	marginLeft  = 64
	marginRight = 28
	marginTop   = 12
	marginBot   = 34
)

// palette colours series in order.
var palette = []string{"#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#ca8a04", "#db2777", "#4b5563", "#65a30d"}

// Point is one (x, y) value of a series, in data units.
type Point struct{ X, Y float64 }

// Series is one named line of a chart.
type Series struct {
	// Name is shown in the legend; it may come from the run (an error
	// class), and the page escapes it.
	Name   string
	Points []Point
	// Dashed draws the line dashed (the asked rate).
	Dashed bool
	// Color, if set, is the line's colour instead of the next of the
	// palette (a baseline's reference line takes its percentile's).
	Color string
}

// Chart is one line chart. The drawing fields are filled by layout.
type Chart struct {
	// ID names the chart for tests (data-chart).
	ID, Title string
	// XLabel and YLabel label the axes; YUnit is appended to tick labels.
	XLabel, YLabel string
	Series         []Series
	// LogX draws x as a percentile spectrum: x is a percentile in [0, 100)
	// placed at log10(1/(1-x/100)).
	LogX bool
	// LogY draws y on a log scale (latencies, whose tail dwarfs the
	// median); values at or below zero sit on the bottom line.
	LogY bool
	// Note is shown under the chart (for example the bucket size).
	Note string
	// Phases are the run's named phases, drawn as Bands behind a time
	// chart (not a LogX one).
	Phases []load.Phase

	W, H int
	// Xs are the x values of the longest series, formatted, space
	// separated: what the page's hover shows beside the series' Values.
	Xs     string
	Bands  []Band
	Lines  []Line
	XTicks []Tick
	YTicks []Tick
	Plot   Rect
}

// Line is one drawn series.
type Line struct {
	Name, Color, Points string
	Dashed              bool
	// N is the number of points, Last the last y value, formatted.
	N    int
	Last string
	// Values are the y values, formatted, space separated, for the
	// page's hover; a single value for a horizontal line drawn with fewer
	// points than the chart's x values (a baseline's reference), which
	// the hover shows at every x.
	Values string
}

// Tick is one axis tick at a position with a label.
type Tick struct {
	Pos   float64
	Label string
}

// Rect is the plot area.
type Rect struct{ X, Y, W, H float64 }

func spectrumX(pct float64) float64 {
	if pct >= 100 {
		pct = 99.9999
	}
	return math.Log10(1 / (1 - pct/100))
}

// layout computes the drawing fields of c from its series.
func (c *Chart) layout() {
	c.W, c.H = chartW, chartH
	c.Plot = Rect{X: marginLeft, Y: marginTop, W: chartW - marginLeft - marginRight, H: chartH - marginTop - marginBot}
	xmin, xmax, ymax := math.Inf(1), math.Inf(-1), 0.0
	for _, s := range c.Series {
		for _, p := range s.Points {
			x := p.X
			if c.LogX {
				x = spectrumX(x)
			}
			xmin, xmax, ymax = math.Min(xmin, x), math.Max(xmax, x), math.Max(ymax, p.Y)
		}
	}
	if math.IsInf(xmin, 0) {
		xmin, xmax = 0, 1
	}
	if c.LogX {
		xmin = 0
		xmax = math.Max(1, math.Ceil(xmax))
	}
	if xmax <= xmin {
		xmax = xmin + 1
	}
	ymax, step := niceMax(ymax)
	sx := func(x float64) float64 { return c.Plot.X + (x-xmin)/(xmax-xmin)*c.Plot.W }
	sy := func(y float64) float64 { return c.Plot.Y + c.Plot.H - y/ymax*c.Plot.H }
	var ylo, yhi float64 // decades of a log y axis
	if c.LogY {
		ylo, yhi = c.decades()
		sy = func(y float64) float64 {
			l := ylo
			if y > 0 {
				l = max(ylo, math.Log10(y))
			}
			return c.Plot.Y + c.Plot.H - (l-ylo)/(yhi-ylo)*c.Plot.H
		}
	}
	c.Lines = c.Lines[:0]
	c.Xs = c.hoverXs()
	for i, s := range c.Series {
		var b, vals strings.Builder
		for j, p := range s.Points {
			x := p.X
			if c.LogX {
				x = spectrumX(x)
			}
			if j > 0 {
				b.WriteByte(' ')
				vals.WriteByte(' ')
			}
			vals.WriteString(fmtNum(p.Y))
			b.WriteString(strconv.FormatFloat(sx(x), 'f', 1, 64))
			b.WriteByte(',')
			b.WriteString(strconv.FormatFloat(sy(p.Y), 'f', 1, 64))
		}
		l := Line{Name: s.Name, Color: cmp.Or(s.Color, palette[i%len(palette)]), Points: b.String(), Dashed: s.Dashed, N: len(s.Points), Values: vals.String()}
		if level, ok := s.level(); ok && len(s.Points) < strings.Count(c.Xs, " ")+1 {
			l.Values = fmtNum(level) // a reference line: its one value holds across the chart
		}
		if n := len(s.Points); n > 0 {
			l.Last = fmtNum(s.Points[n-1].Y)
		}
		c.Lines = append(c.Lines, l)
	}
	c.YTicks = c.YTicks[:0]
	if c.LogY {
		for d := ylo; d <= yhi; d++ {
			v := math.Pow(10, d)
			c.YTicks = append(c.YTicks, Tick{Pos: sy(v), Label: fmtNum(v)})
		}
	} else {
		for v := 0.0; v <= ymax+step/2; v += step {
			c.YTicks = append(c.YTicks, Tick{Pos: sy(v), Label: fmtNum(v)})
		}
	}
	c.Bands = c.Bands[:0]
	if !c.LogX {
		c.layoutBands(sx, xmin, xmax)
	}
	c.layoutXTicks(sx, xmin, xmax)
}

// layoutXTicks places the x axis ticks: percentiles on a spectrum, whole
// seconds otherwise.
func (c *Chart) layoutXTicks(sx func(float64) float64, xmin, xmax float64) {
	c.XTicks = c.XTicks[:0]
	if c.LogX {
		for d := 0.0; d <= xmax; d++ {
			c.XTicks = append(c.XTicks, Tick{Pos: sx(d), Label: spectrumLabel(d)})
		}
		return
	}
	_, xstep := niceMax(xmax - xmin)
	xstep = math.Max(1, math.Ceil(xstep)) // whole seconds
	for v := math.Ceil(xmin/xstep) * xstep; v <= xmax; v += xstep {
		c.XTicks = append(c.XTicks, Tick{Pos: sx(v), Label: fmtNum(v)})
	}
}

// decades returns the whole powers of ten around the series' positive
// values, at least one decade apart.
func (c *Chart) decades() (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, s := range c.Series {
		for _, p := range s.Points {
			if p.Y > 0 {
				lo, hi = math.Min(lo, p.Y), math.Max(hi, p.Y)
			}
		}
	}
	if math.IsInf(lo, 0) {
		return 0, 1
	}
	lo, hi = math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if hi <= lo {
		hi = lo + 1
	}
	return lo, hi
}

// spectrumLabel names the percentile at log10(1/(1-p)) = d: 0%, 90%, 99%…
func spectrumLabel(d float64) string {
	if d == 0 {
		return "0%"
	}
	return strconv.FormatFloat(100-100*math.Pow(10, -d), 'f', -1, 64) + "%"
}

// niceMax rounds v up to a round number and returns it with a tick step
// that divides it into 4 to 5 intervals.
func niceMax(v float64) (top, step float64) {
	if v <= 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return 1, 0.25
	}
	mag := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{0.2, 0.25, 0.5, 1, 2, 2.5, 5, 10} {
		step = m * mag
		if step*5 >= v {
			return math.Ceil(v/step) * step, step
		}
	}
	step = 10 * mag
	return math.Ceil(v/step) * step, step
}

// fmtNum formats a chart number briefly: 1.2k, 950, 12.5, 0.42.
func fmtNum(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 1e6:
		return strconv.FormatFloat(math.Round(v/1e5)/10, 'f', -1, 64) + "M"
	case a >= 1e4:
		return strconv.FormatFloat(math.Round(v/100)/10, 'f', -1, 64) + "k"
	case a >= 100:
		return strconv.FormatFloat(math.Round(v), 'f', -1, 64)
	case a >= 1:
		return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64)
	case a == 0:
		return "0"
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// hoverXs are the x values of c's longest series, formatted for the
// hover: whole seconds, or percentiles on a spectrum.
func (c *Chart) hoverXs() string {
	var longest []Point
	for _, s := range c.Series {
		if len(s.Points) > len(longest) {
			longest = s.Points
		}
	}
	var b strings.Builder
	for i, p := range longest {
		if i > 0 {
			b.WriteByte(' ')
		}
		if c.LogX {
			b.WriteString(strconv.FormatFloat(p.X, 'g', 6, 64) + "%")
			continue
		}
		b.WriteString(strconv.FormatFloat(p.X, 'f', -1, 64))
	}
	return b.String()
}

// level is the y of every point of s, when they share one.
func (s *Series) level() (float64, bool) {
	if len(s.Points) == 0 {
		return 0, false
	}
	for _, p := range s.Points[1:] {
		if p.Y != s.Points[0].Y {
			return 0, false
		}
	}
	return s.Points[0].Y, true
}
