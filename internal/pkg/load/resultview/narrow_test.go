package resultview

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"
)

// chartFit is how one chart sits in a narrow page, read in the browser.
type chartFit struct {
	ID           string
	Left, Right  float64 // the chart's box, in CSS pixels
	Series       int     // polylines drawn with points and a width
	ViewportW    float64 // the page's visible width
	ScrollWidthP float64 // the page's scrollable width
}

const readFit = `[...document.querySelectorAll('figure[data-chart]')].map(f => {
  const r = f.querySelector('svg.chart').getBoundingClientRect();
  return {ID: f.dataset.chart, Left: r.left, Right: r.right,
    Series: [...f.querySelectorAll('polyline.series')].filter(p => p.points.numberOfItems > 1 && p.getBoundingClientRect().width > 0).length,
    ViewportW: document.documentElement.clientWidth, ScrollWidthP: document.documentElement.scrollWidth};
})`

// rowFit is how the endpoints table sits in a narrow page, read in the
// browser: each row's height against the height of one line of its text.
type rowFit struct {
	Rows    []float64 // each endpoint row's height, in CSS pixels
	Line    float64   // the height of one line of a cell's text
	TableW  float64   // the table's visible width
	ScrollW float64   // the width its rows take (scrolled inside the table)
}

const readRows = `(() => {
  const t = document.getElementById('endpoints');
  const cell = t.querySelector('tr.endpoint td');
  return {Rows: [...t.querySelectorAll('tr')].map(r => r.getBoundingClientRect().height),
    Line: parseFloat(getComputedStyle(cell).lineHeight), TableW: t.clientWidth, ScrollW: t.scrollWidth};
})()`

// TestBrowserReportFitsNarrowScreens opens the report in Chromium at 500
// and 375 px wide (a phone): every chart is drawn, with its series, inside
// the visible width, and the page does not scroll sideways. At 500 px the
// charts were cut off (each grid column was at least 540 px).
func TestBrowserReportFitsNarrowScreens(t *testing.T) {
	t.Parallel()
	var html bytes.Buffer
	if err := WriteHTML(&html, sampleResult(t, 60), nil); err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(page, html.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, _ := browser(t)
	for _, width := range []int64{500, 375} {
		run(t, ctx, chromedp.EmulateViewport(width, 900))
		run(t, ctx, chromedp.Navigate("file://"+page))
		charts := run(t, ctx, chromedp.Evaluate[[]chartFit](readFit))
		if len(charts) < 6 {
			t.Fatalf("at %d px the page has %d charts, want 6", width, len(charts))
		}
		for _, c := range charts {
			w := c.Right - c.Left
			if c.Left < 0 || c.Right > c.ViewportW+0.5 || w < 0.8*c.ViewportW-60 || c.Series == 0 {
				t.Errorf("at %d px chart %s spans %.0f..%.0f of %.0f px with %d series drawn: want it whole, inside the page and as wide as the page allows", width, c.ID, c.Left, c.Right, c.ViewportW, c.Series)
			}
			if c.ScrollWidthP > c.ViewportW+0.5 {
				t.Errorf("at %d px the page scrolls sideways: %.0f px wide in a %.0f px viewport", width, c.ScrollWidthP, c.ViewportW)
				break
			}
		}
		// The endpoints table keeps one line of text a row and scrolls
		// inside itself: at 500 px its cells wrapped to a word a line,
		// each row several lines tall.
		rows := run(t, ctx, chromedp.Evaluate[rowFit](readRows))
		if len(rows.Rows) < 3 || rows.Line <= 0 {
			t.Fatalf("at %d px the endpoints table reads %+v: want a header and two endpoint rows", width, rows)
		}
		for i, h := range rows.Rows {
			if h > 2*rows.Line {
				t.Errorf("at %d px row %d of the endpoints table is %.0f px tall, %.1f lines of %.0f px: want one line a row, the table scrolling sideways inside itself", width, i, h, h/rows.Line, rows.Line)
			}
		}
		saveScreenshot(t, ctx, "report-"+map[int64]string{500: "500", 375: "phone"}[width]+".png")
	}
}
