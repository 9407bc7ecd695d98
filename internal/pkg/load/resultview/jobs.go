package resultview

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/forgeload/forgeload/internal/pkg/load/outcome/summary"
)

// JobsPath is where [Jobs] is served: mount it with
// http.StripPrefix(JobsPath, jobs) for JobsPath and everything below it.
const JobsPath = "/jobs"

// Jobs is the page of the load steps a daemon is running: a list at
// [JobsPath], and each step's live [Dashboard] at JobsPath/<id>/ (its events
// at JobsPath/<id>/events). A
// step is listed from [Jobs.Start] until the function it returns is
// called; then its page is gone (404). The page is read-only: it serves
// GET only. Everything it shows of a step (its [summary.RunInfo], endpoint
// names, config keys and values, URLs, errors) leaves through the step's
// mask, as written in HTML. The zero value is ready to use; its methods
// are safe for concurrent use.
type Jobs struct {
	mu   sync.Mutex
	next int
	runs map[int]*jobRun
}

type jobRun struct {
	ID      int
	Info    summary.RunInfo
	Started time.Time
	d       *Dashboard
	mask    func(string) string
}

// Start lists a running step described by info (which may be nil) and
// returns its dashboard, to feed like any other, and the function that
// takes it off the page. mask hides the job's secrets in text (its own
// and the forms they take when escaped, HTML included; see
// report.Reporter.Mask): every byte of the step's list row, page and event
// stream goes through it just before it is written. nil masks nothing
// (the caller has masked info and will feed no secret).
func (j *Jobs) Start(info *summary.RunInfo, mask func(string) string) (*Dashboard, func()) {
	d := newDashboard(info, mask)
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.runs == nil {
		j.runs = map[int]*jobRun{}
	}
	j.next++
	id := j.next
	jr := &jobRun{ID: id, Started: d.live.Start, d: d, mask: d.mask}
	if info != nil {
		jr.Info = *info
	}
	j.runs[id] = jr
	return d, func() {
		j.mu.Lock()
		defer j.mu.Unlock()
		delete(j.runs, id)
	}
}

// ServeHTTP serves the list at / and the dashboards below it.
func (j *Jobs) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "the jobs page is read-only", http.StatusMethodNotAllowed)
		return
	}
	if r.URL.Path == "" || r.URL.Path == "/" {
		// Links are relative to the page: from /jobs they need the
		// directory's name, from /jobs/ they must not repeat it.
		base := strings.TrimPrefix(JobsPath, "/") + "/"
		if r.URL.Path == "/" {
			base = ""
		}
		j.list(w, base)
		return
	}
	idText, rest, slash := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	id, err := strconv.Atoi(idText)
	j.mu.Lock()
	jr := j.runs[id]
	j.mu.Unlock()
	if err != nil || jr == nil {
		http.Error(w, "no such running load step: it may have ended (see the list at /jobs)", http.StatusNotFound)
		return
	}
	if !slash {
		// The dashboard's script asks for "events" relative to the page.
		// Relative to the URL the browser asked for, which StripPrefix
		// has shortened here.
		w.Header().Set("Location", idText+"/")
		w.WriteHeader(http.StatusFound)
		return
	}
	r2 := r.Clone(r.Context())
	r2.URL.Path = "/" + rest
	jr.d.ServeHTTP(w, r2)
}

func (j *Jobs) list(w http.ResponseWriter, base string) {
	j.mu.Lock()
	runs := make([]jobRun, 0, len(j.runs))
	for _, jr := range j.runs {
		runs = append(runs, *jr)
	}
	j.mu.Unlock()
	slices.SortFunc(runs, func(a, b jobRun) int { return a.ID - b.ID })
	// Each row is rendered alone and masked with its own job's mask: one
	// job's masks know nothing of another's secrets.
	var page pageWriter
	page.s(jobsHead)
	if len(runs) == 0 {
		page.s(`<p id="none">No load step is running.</p>`)
	} else {
		page.s(`<table id="jobs"><tr><th>Repository</th><th>Workflow</th><th>Job</th><th>Step</th><th>Started (UTC)</th><th></th></tr>` + "\n")
		for _, jr := range runs {
			page.s(jr.mask(string(jobRow(base, &jr))))
			page.s("\n")
		}
		page.s("</table>")
	}
	page.s("\n</body></html>\n")
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(page.b)
}

// jobRow is one running step's row of the list; base is "jobs/" or "",
// as the page links relative to its own URL.
func jobRow(base string, jr *jobRun) []byte {
	var p pageWriter
	p.s(`<tr class="job" data-id="`)
	p.int(int64(jr.ID))
	p.s(`">`)
	for _, f := range []struct{ class, value string }{
		{"repository", jr.Info.Repository}, {"workflow", jr.Info.Workflow}, {"job", jr.Info.Job}, {"step", jr.Info.Step},
		{"started", jr.Started.UTC().Format(time.RFC3339)},
	} {
		p.s(`<td class="`)
		p.s(f.class)
		p.s(`">`)
		p.text(f.value)
		p.s("</td>")
	}
	p.s(`<td><a href="`)
	p.text(base)
	p.int(int64(jr.ID))
	p.s(`/">live charts</a></td></tr>`)
	return p.b
}

const jobsHead = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><link rel="icon" href="data:,"><title>forgeload: running load steps</title>
<meta http-equiv="refresh" content="5">
<style>body{font:14px system-ui,sans-serif;margin:2em}table{border-collapse:collapse}td,th{border-bottom:1px solid #ddd;padding:.3em .8em;text-align:left}</style>
</head><body>
<h1>Running load steps</h1>
`
