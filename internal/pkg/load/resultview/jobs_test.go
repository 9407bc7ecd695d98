package resultview

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/forgeload/forgeload/internal/pkg/load"
	"github.com/forgeload/forgeload/internal/pkg/load/outcome/summary"
)

// jobsServer serves j the way the daemon's metrics server does.
func jobsServer(t *testing.T, j *Jobs) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle(JobsPath, http.StripPrefix(JobsPath, j))
	mux.Handle(JobsPath+"/", http.StripPrefix(JobsPath, j))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

const jobRows = `String(document.querySelectorAll('#jobs tr.job').length)`

// TestBrowserJobsPage: the list shows a running step (its strings as text),
// its link opens the step's live dashboard whose numbers advance, and once
// the step ends it is gone from the list and its page is a 404.
func TestBrowserJobsPage(t *testing.T) {
	t.Parallel()
	var j Jobs
	srv := jobsServer(t, &j)
	info := &summary.RunInfo{Repository: "org/<script>window.__xss=1</script>shop", Workflow: "perf", Job: "load",
		Step: "smoke", Config: []summary.ConfigRow{{Key: "headers.Authorization", Value: "***"}}}
	d, done := j.Start(info, nil)
	_, doneOther := j.Start(&summary.RunInfo{Repository: "org/other", Step: "other"}, nil)
	doneOther()

	ctx, pl := browser(t)
	run(t, ctx, chromedp.Navigate(srv.URL+JobsPath))
	waitFor(t, ctx, jobRows, "1")
	waitFor(t, ctx, `document.querySelector('#jobs tr.job .repository').textContent`, info.Repository)
	waitFor(t, ctx, `document.querySelector('#jobs tr.job .step').textContent`, "smoke")
	waitFor(t, ctx, `String(window.__xss === undefined)`, "true")
	saveScreenshot(t, ctx, "jobs.png")

	run(t, ctx, chromedp.Evaluate[bool](`(document.querySelector("#jobs tr.job a").click(), true)`))
	waitFor(t, ctx, `location.pathname`, JobsPath+"/1/")
	waitFor(t, ctx, `document.querySelector('#live-state').dataset.state`, "running")
	var want load.Result
	for sec := range 6 {
		snap := sampleSnapshot(sec, []string{"home"})
		want.AddSnapshot(snap)
		d.Second(snap)
		waitFor(t, ctx, requestsCard, strconv.FormatInt(want.Requests, 10))
	}
	if errs, reqs := pl.snapshot(); len(errs) > 0 {
		t.Errorf("console errors: %q (requests %q)", errs, reqs)
	}

	done()
	run(t, ctx, chromedp.Navigate(srv.URL+JobsPath+"/"))
	waitFor(t, ctx, jobRows, "0")
	waitFor(t, ctx, `String(!!document.querySelector('#none'))`, "true")
	if code, _ := status(t, srv.URL+JobsPath+"/1/"); code != http.StatusNotFound {
		t.Errorf("an ended step's page: status %d, want 404", code)
	}
}

// TestJobsPageIsReadOnly: only GET and HEAD are served.
func TestJobsPageIsReadOnly(t *testing.T) {
	t.Parallel()
	var j Jobs
	_, done := j.Start(&summary.RunInfo{Step: "s"}, nil)
	defer done()
	srv := jobsServer(t, &j)
	for _, path := range []string{JobsPath, JobsPath + "/1/"} {
		resp, err := http.Post(srv.URL+path, "text/plain", strings.NewReader("x"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("POST %s: status %d, want 405", path, resp.StatusCode)
		}
	}
	if code, path := status(t, srv.URL+JobsPath+"/1"); code != http.StatusOK || path != JobsPath+"/1/" {
		t.Errorf("GET %s/1 (no slash): status %d at %s, want 200 at %s/1/ after a redirect", JobsPath, code, path, JobsPath)
	}
	if code, _ := status(t, srv.URL+JobsPath+"/x/"); code != http.StatusNotFound {
		t.Errorf("GET %s/x/: status %d, want 404", JobsPath, code)
	}
}

// status GETs url (following redirects) and returns the status and the
// path it ended on.
func status(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Request.URL.Path
}
