package resultview

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/forgeload/forgeload/internal/pkg/load"
	"github.com/forgeload/forgeload/internal/pkg/load/outcome/summary"
)

// phasedResult is a 40 s run with a 10 s warm-up and a 30 s plateau.
func phasedResult(t testing.TB) *load.Result {
	r := &load.Result{Start: time.Date(2026, 11, 22, 15, 0, 0, 0, time.UTC), Open: true, TargetRPS: 100}
	r.SetPhases([]load.Phase{{Name: "warmup", End: 10 * time.Second}, {Name: "plateau", Start: 10 * time.Second, End: 40 * time.Second}})
	for sec := range 40 {
		r.AddSnapshot(sampleSnapshot(sec, []string{"home"}))
	}
	r.Elapsed = 40 * time.Second
	r.Finish()
	return r
}

type bandBox struct {
	Chart, Name  string
	X, W, PX, PW float64
}

const readBands = `[...document.querySelectorAll('figure[data-chart]')].flatMap(f => {
  const axis = f.querySelector('line.axis').getBBox();
  return [...f.querySelectorAll('rect.phase')].map(r => {
    const b = r.getBBox();
    return {Chart: f.dataset.chart, Name: r.dataset.phase, X: b.x, W: b.width, PX: axis.x, PW: axis.width};
  });
})`

// TestBrowserReportPhaseBands: the named phases are drawn as bands behind
// every time chart, side by side, each as wide as its share of the run,
// inside the plot; the percentile spectrum has none.
func TestBrowserReportPhaseBands(t *testing.T) {
	t.Parallel()
	page := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(page, []byte(render(t, phasedResult(t), nil)), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, _ := browser(t)
	run(t, ctx, chromedp.Navigate("file://"+page))
	bands := run(t, ctx, chromedp.Evaluate[[]bandBox](readBands))
	byChart := map[string][]bandBox{}
	for _, b := range bands {
		byChart[b.Chart] = append(byChart[b.Chart], b)
	}
	if _, ok := byChart["spectrum"]; ok {
		t.Errorf("the percentile spectrum has phase bands: %+v", byChart["spectrum"])
	}
	for _, id := range []string{"rate", "latency", "errors", "status", "generator"} {
		bs := byChart[id]
		if len(bs) != 2 || bs[0].Name != "warmup" || bs[1].Name != "plateau" {
			t.Errorf("chart %s bands = %+v, want warmup then plateau", id, bs)
			continue
		}
		w, p := bs[0], bs[1]
		const eps = 0.6
		if w.X < w.PX-eps || p.X+p.W > p.PX+p.PW+eps || w.X+w.W > p.X+eps {
			t.Errorf("chart %s: bands %+v overlap or leave the plot", id, bs)
		}
		// 10 s against 30 s, on an axis of 39 s between the first and the
		// last second (the last is clipped to the plot).
		if ratio := p.W / w.W; ratio < 2.5 || ratio > 3.1 {
			t.Errorf("chart %s: plateau/warm-up width = %.2f, want about 3", id, ratio)
		}
	}
	saveScreenshot(t, ctx, "report-phases.png")
}

// TestReportPhaseNames: the phase names are escaped text on the page.
func TestReportPhaseNames(t *testing.T) {
	t.Parallel()
	r := phasedResult(t)
	r.Phases[0].Name = "<b>warm</b>"
	page := render(t, r, nil)
	if strings.Contains(page, "<b>warm</b>") || !strings.Contains(page, `data-phase="&lt;b&gt;warm&lt;/b&gt;"`) {
		t.Errorf("the phase name is not escaped on the page")
	}
}

// TestBrowserDashboardShowsPhases: the live dashboard of a run with named
// phases draws them as bands and lists them, as the seconds come in.
func TestBrowserDashboardShowsPhases(t *testing.T) {
	t.Parallel()
	d := NewDashboard(&summary.RunInfo{Step: "phased", Phases: []load.Phase{{Name: "warmup", End: 3 * time.Second}, {Name: "plateau", Start: 3 * time.Second, End: 8 * time.Second}}})
	srv := httptest.NewServer(d)
	t.Cleanup(srv.Close)
	ctx, pl := browser(t)
	run(t, ctx, chromedp.Navigate(srv.URL+"/"))
	for sec := range 6 {
		d.Second(sampleSnapshot(sec, []string{"home"}))
	}
	waitFor(t, ctx, `[...document.querySelectorAll('figure[data-chart=latency] rect.phase')].map(r => r.dataset.phase).join(",")`, "warmup,plateau")
	waitFor(t, ctx, `[...document.querySelectorAll('#phases tr.phase .name')].map(c => c.textContent).join(",")`, "warmup,plateau")
	if errs, _ := pl.snapshot(); len(errs) > 0 {
		t.Errorf("console errors: %q", errs)
	}
}

// TestReportSaysAborted: a run that an abort_on_fail threshold stopped
// says so at the top of its report.
func TestReportSaysAborted(t *testing.T) {
	t.Parallel()
	r := phasedResult(t)
	s := summary.Of(r, nil)
	s.Aborted = "aborted: http_req_failed:rate < 1% (0.01) at 2s (got 100.00%)"
	var b strings.Builder
	if err := BuildSummary(r, &s).Render(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `<p class="aborted" id="aborted">aborted: http_req_failed:rate &lt; 1% (0.01) at 2s (got 100.00%)</p>`) {
		t.Errorf("the report does not say aborted")
	}
}
