package resultview

import (
	"bytes"
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/forgeload/forgeload/internal/pkg/load"
	"github.com/forgeload/forgeload/internal/pkg/load/outcome/summary"
)

// endpointCharts are the per-endpoint charts as drawn, read in the
// browser: each series' name, points and drawn width.
type endpointCharts map[string][]struct {
	Name   string
	Points int
	Width  float64
}

const readEndpointCharts = `Object.fromEntries(['endpoint-rate', 'endpoint-latency'].map(id => [id,
  [...document.querySelectorAll('figure[data-chart="' + id + '"] polyline.series')].map(p => ({
    Name: p.dataset.series, Points: p.points.numberOfItems, Width: p.getBoundingClientRect().width}))]))`

// checkEndpointCharts fails t unless the page draws a rate line and a p99
// and a p50 line per endpoint, each with a point per second and a width.
func checkEndpointCharts(t *testing.T, got endpointCharts, names []string, secs int, where string) {
	t.Helper()
	want := map[string][]string{"endpoint-rate": names}
	for _, n := range names {
		want["endpoint-latency"] = append(want["endpoint-latency"], n+" p99", n+" p50")
	}
	for id, series := range want {
		lines := got[id]
		if len(lines) != len(series) {
			t.Errorf("%s: chart %s draws %d series, want %d (%v)", where, id, len(lines), len(series), series)
			continue
		}
		for i, l := range lines {
			if l.Name != series[i] || l.Points != secs || l.Width < 100 {
				t.Errorf("%s: chart %s series %d = %q with %d points, %.0f px wide; want %q with %d points across the chart", where, id, i, l.Name, l.Points, l.Width, series[i], secs)
			}
		}
	}
}

// hoverTarget is where point i of a chart's first series is on the
// screen, and that series' value there as the page holds it.
type hoverTarget struct {
	X, Y  float64
	Value string
	Name  string
}

func readHoverTarget(chart string, i int) string {
	return `(() => {
  const svg = document.querySelector('figure[data-chart="` + chart + `"] svg.chart');
  const line = svg.querySelector('polyline.series');
  const p = line.points.getItem(` + strconv.Itoa(i) + `);
  const pt = svg.createSVGPoint(); pt.x = p.x; pt.y = p.y;
  const c = pt.matrixTransform(svg.getScreenCTM());
  return {X: c.x, Y: c.y, Value: line.dataset.v.split(' ')[` + strconv.Itoa(i) + `], Name: line.dataset.series};
})()`
}

// tipState is the hover's tooltip as shown, read in the browser.
type tipState struct {
	Shown       bool
	Text        string
	Left, Right float64
	ViewportW   float64
}

func readTip(chart string) string {
	return `(() => {
  const t = document.querySelector('figure[data-chart="` + chart + `"] .tip');
  if (!t) return {Shown: false, Text: "", ViewportW: document.documentElement.clientWidth};
  const r = t.getBoundingClientRect();
  return {Shown: !t.hidden && r.width > 0, Text: t.textContent, Left: r.left, Right: r.right, ViewportW: document.documentElement.clientWidth};
})()`
}

// hover moves the mouse onto point i of the chart's first series and
// returns the tooltip shown and where the point is, with its value.
func hover(t *testing.T, ctx context.Context, chart string, i int) (tipState, hoverTarget) {
	t.Helper()
	run(t, ctx, chromedp.Evaluate[bool](`document.querySelector('figure[data-chart="`+chart+`"]').scrollIntoView({block: 'center'}) === undefined`))
	at := run(t, ctx, chromedp.Evaluate[hoverTarget](readHoverTarget(chart, i)))
	run(t, ctx, chromedp.MouseEvent(chromedp.MouseMoved, at.X, at.Y))
	return run(t, ctx, chromedp.Evaluate[tipState](readTip(chart))), at
}

// hoverAt moves the mouse onto point i of the endpoint rate chart and
// checks that the tooltip shows that second and the series' value there,
// inside the page, and that it goes away off the chart.
func hoverAt(t *testing.T, ctx context.Context, i int, where string) {
	t.Helper()
	tip, at := hover(t, ctx, "endpoint-rate", i)
	wantHead := "second " + strconv.Itoa(i)
	wantRow := at.Name + ": " + at.Value + " req/s"
	if !tip.Shown || !strings.HasPrefix(tip.Text, wantHead) || !strings.Contains(tip.Text, wantRow) {
		t.Errorf("%s: hovering point %d shows %+v; want a tooltip starting %q with %q", where, i, tip, wantHead, wantRow)
	}
	if tip.Left < 0 || tip.Right > tip.ViewportW+0.5 {
		t.Errorf("%s: the tooltip spans %.0f..%.0f px of a %.0f px page; want it inside", where, tip.Left, tip.Right, tip.ViewportW)
	}
	run(t, ctx, chromedp.MouseEvent(chromedp.MouseMoved, 2, 2))
	if tip := run(t, ctx, chromedp.Evaluate[tipState](readTip("endpoint-rate"))); tip.Shown {
		t.Errorf("%s: the tooltip stays after the pointer left the chart: %+v", where, tip)
	}
}

// TestBrowserReportEndpointSeriesAndHover opens a report of three
// endpoints in Chromium at desktop and at 500 px wide: the per-endpoint
// charts draw a rate line, a p99 and a p50 line per endpoint over every
// second; hovering a chart shows the second and the values there; the
// error messages are listed with their counts.
func TestBrowserReportEndpointSeriesAndHover(t *testing.T) {
	t.Parallel()
	xss := `<img src=x onerror="window.__xss=1">`
	names := []string{"home", "api", xss}
	const secs = 30
	var html bytes.Buffer
	if err := WriteHTML(&html, sampleResult(t, secs, names...), nil); err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(page, html.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, pl := browser(t)
	for _, width := range []int64{1280, 500} {
		where := strconv.FormatInt(width, 10) + " px"
		run(t, ctx, chromedp.EmulateViewport(width, 900))
		run(t, ctx, chromedp.Navigate("file://"+page))
		checkEndpointCharts(t, run(t, ctx, chromedp.Evaluate[endpointCharts](readEndpointCharts)), names, secs, where)
		msgs := run(t, ctx, chromedp.Evaluate[[][]string](`[...document.querySelectorAll('#error-messages tr.message')].map(r => [...r.cells].map(c => c.textContent))`))
		want := [][]string{{"10", xss, "unexpected status 503"}, {"10", "api", "unexpected status 503"}, {"10", "home", "unexpected status 503"},
			{"6", "home", "Get: context deadline exceeded (Client.Timeout exceeded while awaiting headers)"}}
		if fmt.Sprint(msgs) != fmt.Sprint(want) {
			t.Errorf("%s: error messages listed = %q, want %q", where, msgs, want)
		}
		hoverAt(t, ctx, 10, where)
		// The tooltip names the endpoints as text: the one named as markup
		// ran nothing.
		if tip, _ := hover(t, ctx, "endpoint-rate", 3); !strings.Contains(tip.Text, xss+": ") ||
			run(t, ctx, chromedp.Evaluate[bool](`window.__xss !== undefined`)) {
			t.Errorf("%s: the tooltip %q does not name the endpoint %q as text, or it ran", where, tip.Text, xss)
		}
		if *screenshots != "" {
			hover(t, ctx, "endpoint-rate", 10) // the screenshot shows the tooltip
		}
		saveScreenshot(t, ctx, "report-endpoints-"+strconv.FormatInt(width, 10)+".png")
	}
	if errs, _ := pl.snapshot(); len(errs) > 0 {
		t.Errorf("console errors: %q", errs)
	}
}

// TestBrowserDashboardEndpointSeriesAndHover: the live dashboard draws the
// per-endpoint charts from the seconds fed so far, and its hover works on
// the charts that each update puts in place of the last.
func TestBrowserDashboardEndpointSeriesAndHover(t *testing.T) {
	t.Parallel()
	names := []string{"home", "api", "search"}
	d := NewDashboard(&summary.RunInfo{Step: "live endpoints"})
	srv := httptest.NewServer(d)
	t.Cleanup(srv.Close)
	ctx, pl := browser(t)
	run(t, ctx, chromedp.Navigate(srv.URL+"/"))
	var want load.Result
	const secs = 15
	for sec := range secs {
		snap := sampleSnapshot(sec, names)
		want.AddSnapshot(snap)
		d.Second(snap)
	}
	waitFor(t, ctx, requestsCard, strconv.FormatInt(want.Requests, 10))
	checkEndpointCharts(t, run(t, ctx, chromedp.Evaluate[endpointCharts](readEndpointCharts)), names, secs, "dashboard")
	hoverAt(t, ctx, 5, "dashboard")
	// After an update has replaced the charts, hovering still works.
	snap := sampleSnapshot(secs, names)
	want.AddSnapshot(snap)
	d.Second(snap)
	waitFor(t, ctx, requestsCard, strconv.FormatInt(want.Requests, 10))
	hoverAt(t, ctx, 12, "dashboard after an update")
	if errs, _ := pl.snapshot(); len(errs) > 0 {
		t.Errorf("console errors: %q", errs)
	}
}
