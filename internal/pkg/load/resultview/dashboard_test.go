package resultview

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/forgeload/forgeload/internal/pkg/load"
	"github.com/forgeload/forgeload/internal/pkg/load/outcome/summary"
)

// waitFor polls the page until js evaluates to want, for up to a minute
// (the machine may be busy), and fails with the last value and error
// otherwise. It fails at once when the tab's context has ended: during a
// test that means the shared browser died, and no later try can succeed.
func waitFor(t *testing.T, ctx context.Context, js, want string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	var got string
	var lastErr error
	for time.Now().Before(deadline) {
		// The deadline also bounds each try: an action on a tab whose
		// renderer crashed never returns.
		ectx, cancel := context.WithDeadline(ctx, deadline)
		v, err := chromedp.Run(ectx, chromedp.Evaluate[string](js))
		cancel()
		if err == nil && v == want {
			return
		}
		if ctx.Err() != nil {
			if err == nil {
				err = ctx.Err()
			}
			t.Fatalf("page: %s: chromium: %v", js, err)
		}
		got, lastErr = v, err
		time.Sleep(20 * time.Millisecond) // polling interval, not synchronisation
	}
	t.Fatalf("page: %s = %q after a minute, want %q (last error: %v)", js, got, want, lastErr)
}

const requestsCard = `(document.querySelector('#summary [data-k=requests]') || {dataset: {}}).dataset.v || ""`

func TestBrowserDashboardAdvances(t *testing.T) {
	t.Parallel()
	d := NewDashboard(&summary.RunInfo{Step: "live demo", Version: "v1.4.0"})
	srv := httptest.NewServer(d)
	t.Cleanup(srv.Close)

	ctx, pl := browser(t)
	run(t, ctx, chromedp.Navigate(srv.URL+"/"))
	waitFor(t, ctx, `document.querySelector('#live-state').dataset.state`, "running")

	// Each second fed to the dashboard reaches the open page.
	var want load.Result
	for sec := range 12 {
		snap := sampleSnapshot(sec, []string{"home", "api"})
		want.AddSnapshot(snap)
		d.Second(snap)
		if sec%4 == 0 || sec == 11 {
			waitFor(t, ctx, requestsCard, strconv.FormatInt(want.Requests, 10))
		}
	}
	saveScreenshot(t, ctx, "dashboard.png")

	// The final result replaces the live one, and the page says so.
	final := sampleResult(t, 12)
	d.Finish(final, []load.Check{{Name: "http_req_duration:p99 < 300ms", Actual: "4ms", Passed: true}})
	waitFor(t, ctx, `document.querySelector('#live-state').dataset.state`, "done")
	waitFor(t, ctx, requestsCard, strconv.FormatInt(final.Requests, 10))
	waitFor(t, ctx, `String(document.querySelectorAll('#thresholds tr[data-passed]').length)`, "1")
	if errs, _ := pl.snapshot(); len(errs) > 0 {
		t.Errorf("console errors: %q", errs)
	}
}

func TestDashboardEventsEndAfterFinish(t *testing.T) {
	t.Parallel()
	d := NewDashboard(nil)
	srv := httptest.NewServer(d)
	t.Cleanup(srv.Close)
	d.Second(sampleSnapshot(0, []string{"x"}))
	d.Finish(sampleResult(t, 1, "x"), nil)
	resp, err := http.Get(srv.URL + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body) // ends: the run is done
	if err != nil {
		t.Fatal(err)
	}
	if resp.Header.Get("Content-Type") != "text/event-stream" || !strings.HasPrefix(string(b), "event: update\ndata: ") || !strings.HasSuffix(string(b), "event: done\ndata: done\n\n") {
		t.Errorf("events = %s %q, want one update then done", resp.Header.Get("Content-Type"), b)
	}
}

func TestDashboardServeStopsWithContext(t *testing.T) {
	t.Parallel()
	d := NewDashboard(nil)
	ln, err := ListenLoopback("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Serve(ctx, ln) }()
	// An open event stream does not keep the server from stopping.
	resp, err := http.Get("http://" + ln.Addr().String() + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Serve = %v, want nil after the context ends", err)
	}
	if _, err := io.ReadAll(resp.Body); err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Logf("stream ended with %v", err)
	}
}

func TestListenLoopbackRefusesOtherAddresses(t *testing.T) {
	t.Parallel()
	for _, addr := range []string{"0.0.0.0:0", ":0", "192.0.2.1:80", "nonsense"} {
		if ln, err := ListenLoopback(addr); err == nil {
			ln.Close()
			t.Errorf("ListenLoopback(%q) = nil error, want a refusal", addr)
		}
	}
}

func TestDashboardRedrawsOncePerPointOnLongRuns(t *testing.T) {
	t.Parallel()
	d := NewDashboard(nil)
	const points = 6
	d.points = points
	snap := &load.Snapshot{Stats: load.Stats{Requests: 1}}
	for sec := range points + 1 {
		snap.Second = sec
		d.Second(snap)
	}
	shows := func(n int) bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		return strings.Contains(string(d.page), `data-k="requests" data-v="`+strconv.Itoa(n)+`"`)
	}
	// 7 seconds make 2 s per point: the 7th is mid-point, so the page
	// still shows 6; the 8th redraws it; the 9th does not.
	if !shows(points) {
		t.Errorf("page redrawn between points, or not at second %d", points)
	}
	snap.Second = points + 1
	d.Second(snap)
	if !shows(points + 2) {
		t.Errorf("page not redrawn at the point boundary (%d requests)", points+2)
	}
	snap.Second = points + 2
	d.Second(snap)
	if !shows(points + 2) {
		t.Errorf("page redrawn between points (%d requests)", points+3)
	}
}
