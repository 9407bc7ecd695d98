package resultview

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/forgeload/forgeload/internal/pkg/load"
	"github.com/forgeload/forgeload/internal/pkg/load/outcome/summary"
)

// baselinePage is what a report shows of its baseline, read in the browser.
type baselinePage struct {
	Name string
	Rows []struct {
		Metric, Verdict string
		Cells           []string
	}
	Refs []struct {
		Name   string
		Points int
		Width  float64
		Y      float64
		Color  string
	}
	Runs []struct {
		Name  string
		Y     float64
		Color string
	}
	XSS bool
}

const readBaseline = `(() => {
  const lat = document.querySelector('figure[data-chart="latency"]');
  const line = p => ({Name: p.dataset.series, Points: p.points.numberOfItems, Width: p.getBBox().width, Y: p.points.numberOfItems ? p.points.getItem(0).y : 0, Color: p.getAttribute('stroke')});
  const all = lat ? [...lat.querySelectorAll('polyline.series')].map(line) : [];
  return {
    Name: (document.getElementById('baseline-name') || {}).textContent || '',
    Rows: [...document.querySelectorAll('#baseline tr.delta')].map(r => ({Metric: r.dataset.metric, Verdict: r.dataset.verdict, Cells: [...r.children].map(c => c.textContent)})),
    Refs: all.filter(s => s.Name.startsWith('baseline ')),
    Runs: all.filter(s => !s.Name.startsWith('baseline ')),
    XSS: window.__xss !== undefined,
  };
})()`

// TestBrowserBaseline: a report with a baseline shows the comparison
// table beside the run (the caller's deltas, as given, the baseline's
// name as text) and the baseline's percentiles as dashed reference lines
// across the latency chart, a higher percentile drawn higher; a report
// without one shows neither.
func TestBrowserBaseline(t *testing.T) {
	t.Parallel()
	xss := `main <script>window.__xss=1</script><img src=x onerror="window.__xss=2">`
	r := sampleResult(t, 30, "home")
	sum := summary.Of(r, nil)
	// The baseline: the run's p50 as it was, its p99 0.8 of the run's.
	b := &Baseline{Name: xss, Rows: []BaselineRow{
		{Metric: "rps", Old: "100.0/s", New: fmt.Sprintf("%.1f/s", sum.RPS), Change: "+0.2/s (+0.2%)", Verdict: "~ noise", Noise: "±0.9 req/s (95%, per-second rates)"},
		{Metric: "p50", Old: load.FormatMS(sum.Latency.P50), New: load.FormatMS(sum.Latency.P50), Change: "+0.00ms (+0.0%)", Verdict: "~ noise", RefMS: sum.Latency.P50},
		{Metric: "p99", Old: load.FormatMS(sum.Latency.P99 * 0.8), New: load.FormatMS(sum.Latency.P99), Change: "+25.0%", Verdict: "worse", Noise: "95% CI beyond; runs ±0.40ms (8.86 × MAD of 5)", Worse: true, RefMS: sum.Latency.P99 * 0.8},
		{Metric: "error_rate", Old: "0.50%", New: load.FormatPercent(sum.ErrorRate), Change: "+0.03 pts", Verdict: "~ noise"},
	}}
	dir := t.TempDir()
	render := func(name string, b *Baseline) string {
		v := BuildSummary(r, &sum)
		v.SetBaseline(b)
		var html bytes.Buffer
		if err := v.Render(&html); err != nil {
			t.Fatal(err)
		}
		page := filepath.Join(dir, name)
		if err := os.WriteFile(page, html.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
		return page
	}
	with, without := render("with.html", b), render("without.html", nil)

	ctx, pl := browser(t)
	run(t, ctx, chromedp.Navigate("file://"+with))
	got := run(t, ctx, chromedp.Evaluate[baselinePage](readBaseline))
	if errs, _ := pl.snapshot(); len(errs) > 0 {
		t.Errorf("console errors: %q", errs)
	}
	if got.XSS || got.Name != xss {
		t.Errorf("baseline name on the page = %q (script ran: %v), want %q as text", got.Name, got.XSS, xss)
	}
	if len(got.Rows) != len(b.Rows) {
		t.Fatalf("baseline table has %d rows, want %d: %+v", len(got.Rows), len(b.Rows), got.Rows)
	}
	for i, row := range got.Rows {
		w := b.Rows[i]
		if row.Metric != w.Metric || row.Verdict != w.Verdict || len(row.Cells) < 4 || row.Cells[1] != w.Old || row.Cells[2] != w.New || row.Cells[3] != w.Change {
			t.Errorf("baseline row %d = %+v, want %+v", i, row, w)
		}
	}
	if len(got.Refs) != 2 || got.Refs[0].Name != "baseline p50" || got.Refs[1].Name != "baseline p99" {
		t.Fatalf("latency chart reference lines = %+v, want baseline p50 and baseline p99", got.Refs)
	}
	for _, ref := range got.Refs {
		if ref.Points != 2 || ref.Width <= 0 {
			t.Errorf("reference line %s: %d points, %v wide; want a line across the chart", ref.Name, ref.Points, ref.Width)
		}
	}
	// SVG y grows downwards: the baseline's p99 is above its p50.
	if !(got.Refs[1].Y < got.Refs[0].Y) {
		t.Errorf("baseline p99 drawn at y=%v, p50 at y=%v; want p99 higher", got.Refs[1].Y, got.Refs[0].Y)
	}
	if len(got.Runs) != 4 {
		t.Fatalf("latency chart has %d series of the run beside the references, want 4", len(got.Runs))
	}
	// Each reference line has its percentile's colour: p50 is the run's
	// first series, p99 its third.
	if got.Refs[0].Color != got.Runs[0].Color || got.Refs[1].Color != got.Runs[2].Color {
		t.Errorf("reference colours %s, %s; want the run's p50 %s and p99 %s", got.Refs[0].Color, got.Refs[1].Color, got.Runs[0].Color, got.Runs[2].Color)
	}
	// Hovering the latency chart mid-run shows the reference lines' values
	// too: a line of two points holds its value across the run.
	if tip, _ := hover(t, ctx, "latency", 15); !strings.Contains(tip.Text, "baseline p99: "+fmtNum(sum.Latency.P99*0.8)+" ms") {
		t.Errorf("hovering second 15 of the latency chart shows %q, want the baseline p99's value", tip.Text)
	}
	saveScreenshot(t, ctx, "report-baseline.png")

	run(t, ctx, chromedp.Navigate("file://"+without))
	got = run(t, ctx, chromedp.Evaluate[baselinePage](readBaseline))
	if len(got.Rows) != 0 || len(got.Refs) != 0 || got.Name != "" {
		t.Errorf("a report without a baseline shows %+v", got)
	}
}
