package resultview

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/forgeload/forgeload/internal/pkg/load"
	"github.com/forgeload/forgeload/internal/pkg/load/outcome/summary"
)

// screenshots, when set, is the directory the browser tests save their
// screenshots to, for docs/results.md:
//
//	go test ./internal/pkg/load/resultview -run Browser -screenshots ../../../../docs/img
var screenshots = flag.String("screenshots", "", "save the browser tests' screenshots to this directory")

// shared is the one headless Chromium of this test binary (Debian's
// chromium package, as .ci/run installs it). Each start of Chromium costs
// CPU time that no check needs, so the browser tests share one, each in a
// tab of its own. The first test that needs it starts it; TestMain closes it, through
// closeBrowser, once every test has run. ctx is the browser's first tab,
// which no test uses: its first Run started the browser, and so the browser
// lives until ctx is cancelled.
var shared struct {
	once                       sync.Once
	ctx                        context.Context
	cancelBrowser, cancelAlloc context.CancelFunc
	err                        error
}

// startBrowser starts the shared Chromium the first time it is called and
// returns its first tab's context, or why it could not start.
func startBrowser() (context.Context, error) {
	shared.once.Do(func() {
		path, err := exec.LookPath("chromium")
		if err != nil {
			shared.err = fmt.Errorf("the browser tests need Debian's chromium package (.ci/run installs it): %w", err)
			return
		}
		opts := append(chromedp.DefaultExecAllocatorOptions[:],
			chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.Headless,
			chromedp.WindowSize(1280, 900), chromedp.Flag("disable-gpu", true))
		// Both contexts come from context.Background, not from a test: the
		// browser must outlive the test that happens to start it.
		actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
		ctx, cancelBrowser := chromedp.NewContext(actx)
		shared.ctx, shared.cancelBrowser, shared.cancelAlloc = ctx, cancelBrowser, cancelAlloc
		// A tab made from a context that has no browser yet would start a
		// browser of its own, so start this one before any test opens a tab.
		if err := chromedp.Do(ctx); err != nil {
			shared.err = fmt.Errorf("start chromium: %w", err)
		}
	})
	return shared.ctx, shared.err
}

// closeBrowser closes the shared Chromium, if a test started it, and returns
// only once its processes are gone: os.Exit does not wait for them, so a
// browser still closing when TestMain exits would outlive the test binary.
func closeBrowser() error {
	if shared.ctx == nil {
		return nil
	}
	if shared.err != nil {
		// The start failed, perhaps halfway: stop and wait for whatever it
		// started. Cancel is for a browser that runs; here it could take the
		// token cancelBrowser waits for, and leave cancelBrowser waiting.
		shared.cancelBrowser()
		shared.cancelAlloc()
		return nil
	}
	// Cancel asks Chromium to close and waits until the process has been
	// reaped, its leftover children killed and its profile directory
	// removed. A browser that does not close within the deadline is killed,
	// and Cancel still waits for all of that.
	ctx, cancel := context.WithTimeout(shared.ctx, time.Minute)
	defer cancel()
	err := chromedp.Cancel(ctx)
	// Cancel returns at once, without waiting, when the browser can no
	// longer take the close command (it crashed during a test). These wait
	// for the same things in that case, and return at once otherwise.
	shared.cancelBrowser()
	shared.cancelAlloc()
	return err
}

// browser opens a new tab in the shared Chromium and returns the tab's
// context and what its page reports: console errors, uncaught exceptions and
// every URL it requests. The tab closes when t ends.
func browser(t *testing.T) (context.Context, *pageLog) {
	t.Helper()
	bctx, err := startBrowser()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancelTab := chromedp.NewContext(bctx)
	t.Cleanup(cancelTab)
	// Do opens the tab; unlike Listen, it says when the browser has died.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("open a tab in chromium: %v", err)
	}
	pl := &pageLog{}
	if err := chromedp.Listen(ctx, pl.add); err != nil {
		t.Fatalf("listen to the chromium tab: %v", err)
	}
	return ctx, pl
}

// pageLog records what a page reported; safe for concurrent use.
type pageLog struct {
	mu       sync.Mutex
	errors   []string
	requests []string
}

func (p *pageLog) add(ev any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch e := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeWarning {
			p.errors = append(p.errors, fmt.Sprintf("console.%s %v", e.Type, e.Args))
		}
	case *runtime.EventExceptionThrown:
		p.errors = append(p.errors, "exception: "+e.ExceptionDetails.Text)
	case *log.EventEntryAdded:
		if e.Entry.Level == log.EntryLevelError || e.Entry.Level == log.EntryLevelWarning {
			p.errors = append(p.errors, "log: "+e.Entry.Text)
		}
	case *network.EventRequestWillBeSent:
		p.requests = append(p.requests, e.Request.URL)
	}
}

func (p *pageLog) snapshot() (errs, reqs []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.errors...), append([]string(nil), p.requests...)
}

// actionTimeout bounds one chromedp action. It is generous, as the machine
// may be busy; it is there because an action on a tab whose renderer
// crashed never returns, and the test should fail rather than hang.
const actionTimeout = time.Minute

// run runs a chromedp action on a tab with a generous deadline
// (actionTimeout), and fails t if the action does.
func run[T any](t *testing.T, ctx context.Context, a chromedp.Action[T]) T {
	t.Helper()
	// The tab has run once (browser opened it), so a deadline on this
	// action ends only the action, not the tab.
	actx, cancel := context.WithTimeout(ctx, actionTimeout)
	defer cancel()
	v, err := chromedp.Run(actx, a)
	if err != nil {
		t.Fatalf("chromium: %v", err)
	}
	return v
}

// saveScreenshot saves a full-page screenshot when -screenshots is given.
func saveScreenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	if *screenshots == "" {
		return
	}
	png := run(t, ctx, chromedp.FullScreenshot(100))
	if err := os.WriteFile(filepath.Join(*screenshots, name), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// pageNumbers are the numbers a page shows, read in the browser.
type pageNumbers struct {
	Cards []struct {
		K, V, Text string
	}
	Endpoints []struct {
		Name string
		Vals map[string]string
	}
	Charts []struct {
		ID     string
		Series []struct {
			Name   string
			Points int
			Width  float64
		}
	}
	Title string
	XSS   bool
}

const readPage = `(() => ({
  Cards: [...document.querySelectorAll('#summary .card')].map(c => ({K: c.dataset.k, V: c.dataset.v, Text: c.querySelector('.v').textContent})),
  Endpoints: [...document.querySelectorAll('#endpoints tr.endpoint')].map(r => ({
    Name: r.querySelector('.name').textContent,
    Vals: Object.fromEntries([...r.querySelectorAll('[data-k]')].map(c => [c.dataset.k, c.dataset.v])),
  })),
  Charts: [...document.querySelectorAll('figure[data-chart]')].map(f => ({
    ID: f.dataset.chart,
    Series: [...f.querySelectorAll('polyline.series')].map(p => ({Name: p.dataset.series, Points: p.points.numberOfItems, Width: p.getBBox().width})),
  })),
  Title: document.title,
  XSS: window.__xss !== undefined,
}))()`

func TestBrowserReport(t *testing.T) {
	t.Parallel()
	xss := `<script>window.__xss=1</script><img src=x onerror="window.__xss=2">`
	r := sampleResult(t, 90, "home", xss)
	info := &summary.RunInfo{Repository: "acme/shop", Ref: "refs/heads/main", Commit: "3f2c1e9", Workflow: "perf.yml", Job: "perf", RunID: "42", Runner: "forgeload-1", Step: "api", Version: "v1.4.0",
		Config: []summary.ConfigRow{{Key: "target", Value: "http://127.0.0.1:8080/"}, {Key: "rate", Value: "100"}, {Key: "headers", Value: "Authorization: ***"}}}
	checks := []load.Check{
		{Name: "http_req_duration:p99 < 300ms", Actual: "4.2ms", Passed: true},
		{Name: "http_req_failed:rate < 0.5%", Actual: "0.86%", Passed: false},
	}
	dir := t.TempDir()
	page := filepath.Join(dir, "report.html")
	var html, js bytes.Buffer
	s := summary.Of(r, checks)
	s.Run = info
	if err := BuildSummary(r, &s).Render(&html); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(page, html.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	plain := summary.Of(r, checks)
	if err := plain.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var want map[string]any
	if err := json.Unmarshal(js.Bytes(), &want); err != nil {
		t.Fatal(err)
	}

	ctx, pl := browser(t)
	run(t, ctx, chromedp.Navigate("file://"+page))
	got := run(t, ctx, chromedp.Evaluate[pageNumbers](readPage))

	// No console errors, and nothing fetched but the page itself.
	errs, reqs := pl.snapshot()
	if len(errs) > 0 {
		t.Errorf("console errors: %q", errs)
	}
	if len(reqs) != 1 || reqs[0] != "file://"+page {
		t.Errorf("page requested %q, want only itself (no network)", reqs)
	}
	// The endpoint named <script>… stays text.
	if got.XSS {
		t.Errorf("the endpoint name ran as script")
	}
	names := map[string]bool{}
	for _, e := range got.Endpoints {
		names[e.Name] = true
	}
	if !names[xss] || !names["home"] {
		t.Errorf("endpoint names on the page = %v, want home and %q as text", names, xss)
	}
	// Every chart has data: each series has points and a drawn width.
	if len(got.Charts) < 6 {
		t.Errorf("page has %d charts, want 6", len(got.Charts))
	}
	for _, c := range got.Charts {
		if len(c.Series) == 0 {
			t.Errorf("chart %s has no series", c.ID)
		}
		for _, s := range c.Series {
			if s.Points < 2 || s.Width <= 0 {
				t.Errorf("chart %s series %s: %d points, %v wide; want data", c.ID, s.Name, s.Points, s.Width)
			}
		}
	}
	// The numbers on the page are the JSON result's.
	lat := want["latency"].(map[string]any)
	jsonVal := map[string]any{
		"requests": want["requests"], "rps": want["rps"], "target_rps": want["target_rps"], "error_rate": want["error_rate"],
		"p50_ms": lat["p50_ms"], "p90_ms": lat["p90_ms"], "p99_ms": lat["p99_ms"], "p99_9_ms": lat["p99_9_ms"], "max_ms": lat["max_ms"],
		"elapsed_s": want["elapsed_s"], "thresholds_passed": want["thresholds_passed"],
	}
	seen := 0
	for _, c := range got.Cards {
		w, ok := jsonVal[c.K]
		if !ok {
			t.Errorf("card %s is not in the JSON result", c.K)
			continue
		}
		seen++
		if !sameNumber(c.V, w) {
			t.Errorf("card %s = %s on the page, %v in the JSON result", c.K, c.V, w)
		}
		if v, ok := w.(float64); ok && c.K[0] == 'p' && c.Text != load.FormatMS(v) {
			t.Errorf("card %s reads %q, want %q", c.K, c.Text, load.FormatMS(v))
		}
	}
	if seen != len(jsonVal) {
		t.Errorf("page shows %d of the %d headline numbers", seen, len(jsonVal))
	}
	eps := want["endpoints"].([]any)
	for i, e := range got.Endpoints {
		we := eps[i].(map[string]any)
		wl := we["latency"].(map[string]any)
		if e.Name != we["name"] || !sameNumber(e.Vals["requests"], we["requests"]) || !sameNumber(e.Vals["p99_ms"], wl["p99_ms"]) || !sameNumber(e.Vals["error_rate"], we["error_rate"]) {
			t.Errorf("endpoint row %d = %+v, JSON %v", i, e, we)
		}
	}
	saveScreenshot(t, ctx, "report.png")
}

// sameNumber compares a page's data-v with a JSON value.
func sameNumber(s string, v any) bool {
	switch w := v.(type) {
	case float64:
		f, err := strconv.ParseFloat(s, 64)
		return err == nil && f == w
	case bool:
		return s == strconv.FormatBool(w)
	}
	return false
}
