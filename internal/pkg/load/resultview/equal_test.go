package resultview

import (
	"bytes"
	_ "embed"
	"html/template"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/forgeload/forgeload/internal/pkg/load"
	"github.com/forgeload/forgeload/internal/pkg/load/outcome/summary"
)

// The reference: the page as html/template rendered it before the page
// was written in Go (testdata/page.tmpl.html is that template, and the
// jobs page's templates follow). The test binary may link html/template;
// forgeload does not.

//go:embed testdata/page.tmpl.html
var refPageHTML string

var refPage = template.Must(template.New("page").Funcs(template.FuncMap{
	"ms":     load.FormatMS,
	"pct":    load.FormatPercent,
	"raw":    raw,
	"fixed1": func(f float64) string { return strconv.FormatFloat(f, 'f', 1, 64) },
	"f1":     func(f float64) string { return strconv.FormatFloat(f, 'f', 1, 64) },
	"add":    func(a, b float64) float64 { return a + b },
	"sub":    func(a, b float64) float64 { return a - b },
	"right":  func(r Rect) float64 { return r.X + r.W },
	"bottom": func(r Rect) float64 { return r.Y + r.H },
	"counts": load.FormatCounts,
	"cores":  func(f float64) string { return strconv.FormatFloat(f, 'f', 2, 64) + " cores" },
	"bytes":  func(f float64) string { return load.FormatBytes(int64(f)) },
	"ubytes": func(n uint64) string { return load.FormatBytes(int64(min(n, 1<<62))) },
}).Parse(refPageHTML))

var refJobRow = template.Must(template.New("row").Funcs(template.FuncMap{
	"utc": func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
}).Parse(`{{with .Run}}<tr class="job" data-id="{{.ID}}"><td class="repository">{{.Info.Repository}}</td><td class="workflow">{{.Info.Workflow}}</td><td class="job">{{.Info.Job}}</td><td class="step">{{.Info.Step}}</td><td class="started">{{utc .Started}}</td><td><a href="{{$.Base}}{{.ID}}/">live charts</a></td></tr>{{end}}`))

var refJobs = template.Must(template.New("jobs").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><link rel="icon" href="data:,"><title>forgeload: running load steps</title>
<meta http-equiv="refresh" content="5">
<style>body{font:14px system-ui,sans-serif;margin:2em}table{border-collapse:collapse}td,th{border-bottom:1px solid #ddd;padding:.3em .8em;text-align:left}</style>
</head><body>
<h1>Running load steps</h1>
{{if .}}<table id="jobs"><tr><th>Repository</th><th>Workflow</th><th>Job</th><th>Step</th><th>Started (UTC)</th><th></th></tr>
{{range .}}{{.}}
{{end}}</table>{{else}}<p id="none">No load step is running.</p>{{end}}
</body></html>
`))

// hostile is what a run's strings may hold: markup, both quotes, '+', an
// ampersand, a NUL, a script end, a CSS and a URL breaker, invalid UTF-8
// and a non-ASCII letter.
const hostile = "<script>alert(\"x\")</script>' onmouseover=alert(1) a+b &amp; \x00 </title></style>;}{ javascript:x \xff\xfe é"

// hostileView is a view with s in every string the page shows, every
// optional section present, and odd numbers.
func hostileView(s string, live bool) *View {
	lat := summary.Latency{P50: 1.5, P90: 2, P95: 3, P99: 1e6, P999: 0.000123, Max: 7}
	run := &summary.RunInfo{Repository: s, Ref: s, Commit: s, Workflow: s, Job: s, RunID: s, Runner: s, Step: s, Version: s,
		Config: []summary.ConfigRow{{Key: s, Value: s}, {Key: "k", Value: "v"}},
		Hosts:  []summary.HostRow{{ID: s, Host: s, Segments: s, Requests: 3, RPS: 1.25, Dropped: 2, CPUPct: 99.5, ClockOffset: s, Status: s}, {Status: "ok"}}}
	v := &View{Title: s, Started: s, Run: run, Live: live, Running: live, Updated: s,
		Cards:      []Card{{Key: s, Label: s, Value: s, Raw: s, Bad: true}, {Key: "k"}},
		Protocols:  []ProtocolRow{{Protocol: s, Endpoints: 2, Requests: 5, RPS: 2.25, ErrorRate: 0.5, Latency: lat}},
		Health:     []HealthRow{{Label: s, Value: s, Bad: true}, {Label: "l", Value: "v"}},
		Thresholds: []load.Check{{Name: s, Actual: s, Passed: true}, {Name: s, Skipped: true}, {Name: s, Actual: s}},
	}
	v.Summary = summary.Summary{Aborted: s, ErrorClasses: map[string]int64{s: 1, "b": 2}, Status: map[string]int64{s: 3},
		ErrorMessages: []summary.MessageCount{{Endpoint: s, Message: s, Count: 7}, {Endpoint: "e", Message: "m", Count: 1}}, ErrorMessagesOther: 3,
		Endpoints: []summary.EndpointSummary{{Name: s, Requests: 10, RPS: 3.33, ErrorRate: 0.1, Latency: lat, Status: map[string]int64{s: 1}}},
		Phases:    []summary.PhaseSummary{{Name: s, StartS: 0.5, EndS: 1e21, Requests: 4, RPS: 1, ErrorRate: 0, Latency: lat}},
		Protocol:  &summary.ProtocolSummary{Protocol: s, Counters: map[string]int64{s: 4}, Timings: map[string]summary.Latency{s: lat, "a": lat}},
		Checks:    &summary.ChecksSummary{Rate: 0.75, Passed: 3, Failed: 1, Checks: []load.CheckStats{{Name: s, Passed: 3, Failed: 1}, {Name: "ok", Passed: 1}}},
		SUT: []load.ResourceSummary{{Target: s, Samples: 2, CPUCoresMax: 1.5, CPUCoresMean: 0.25, CPULimitCores: 2, CPUPctMax: 75, CPUPctMean: 12.5,
			MemBytesMax: 1 << 20, MemBytesMean: 1000, MemLimitBytes: 1 << 30, NetRxBytes: 1 << 63, NetTxBytes: 5, BlockReadBytes: 6, BlockWriteBytes: 7}},
	}
	c := &Chart{ID: s, Title: s, XLabel: s, YLabel: s, Note: s, W: 860, H: 260, Plot: Rect{X: 56.5, Y: 10, W: 780.25, H: 200.125}, Xs: s,
		Bands:  []Band{{Name: s, X: 60, W: 100.55, Shade: true}, {Name: "b", X: 1e-7}},
		XTicks: []Tick{{Pos: 70.05, Label: s}}, YTicks: []Tick{{Pos: 33.333, Label: s}},
		Lines: []Line{{Name: s, Color: "#2563eb", Points: s, Dashed: true, N: 3, Last: s, Values: s}, {Name: "x", Color: "#dc2626", Points: "1,2 3,4", N: 2, Last: "1", Values: "1 2"}}}
	v.Charts = []*Chart{c, {ID: "empty"}}
	v.Baseline = &Baseline{Name: s, Rows: []BaselineRow{{Metric: s, Old: s, New: s, Change: s, Verdict: s, Limit: s, Noise: s, Worse: true, Regressed: true}, {Metric: "p99"}}}
	return v
}

func refRender(t testing.TB, name string, v *View) string {
	t.Helper()
	var b bytes.Buffer
	if err := refPage.ExecuteTemplate(&b, name, v); err != nil {
		t.Fatalf("html/template: %v", err)
	}
	return b.String()
}

// samePage fails t at the first byte where the Go page and html/template's
// differ.
func samePage(t testing.TB, what, got, want string) {
	t.Helper()
	if got == want {
		return
	}
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	t.Fatalf("%s differs from html/template's at byte %d:\ngot  %q\nwant %q", what, i, got[max(0, i-80):min(len(got), i+80)], want[max(0, i-80):min(len(want), i+80)])
}

// TestPageMatchesHTMLTemplate: the report, the live page and the live
// update are byte for byte what html/template made of the same view, for
// real results and for a view with hostile text in every field; so every
// string is escaped exactly as html/template escapes HTML text and quoted
// attributes.
func TestPageMatchesHTMLTemplate(t *testing.T) {
	t.Parallel()
	r := sampleResult(t, 12, xssName, "ok")
	r.Checks = []load.CheckStats{{Name: `checks[0] body does not contain "<error>"`, Passed: 7, Failed: 3}}
	info := &summary.RunInfo{Repository: `o/<b>r</b>`, Step: "s'+", Config: []summary.ConfigRow{{Key: "headers.X", Value: `"><script>alert(2)</script>`}},
		Hosts: []summary.HostRow{{ID: "w1", Host: "<h>", Status: "ok", CPUPct: 12.5}}}
	long := sampleResult(t, MaxPoints+30)
	views := map[string]*View{
		"report":          Build(r, []load.Check{{Name: "p99 < 1s", Actual: "<i>1ms</i>", Passed: true}}),
		"report of a run": BuildSummary(r, &summary.Summary{Run: info}),
		"bucketed report": Build(long, nil),
		"phased report":   Build(phasedResult(t), nil),
		"one endpoint":    Build(sampleResult(t, 4, "only"), nil),
		"empty view":      {},
		"hostile":         hostileView(hostile, false),
		"hostile live":    hostileView(hostile, true),
	}
	s := summary.Of(r, nil)
	s.Run = info
	views["summary with run"] = BuildSummary(r, &s)
	for name, v := range views {
		var b bytes.Buffer
		if err := v.Render(&b); err != nil {
			t.Fatalf("%s: Render: %v", name, err)
		}
		samePage(t, name, b.String(), refRender(t, "page", v))
		samePage(t, name+" (live update)", string(mainHTML(v)), refRender(t, "main", v))
	}
	var b bytes.Buffer
	if err := hostileView(hostile, false).Render(&b); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"<script>alert", "' onmouseover", "</title></style>", "a+b", "\x00"} {
		if strings.Contains(b.String(), bad) {
			t.Errorf("the hostile page holds %q unescaped", bad)
		}
	}
}

// FuzzPageMatchesHTMLTemplate puts any string in every field of a view:
// the page stays html/template's, byte for byte.
func FuzzPageMatchesHTMLTemplate(f *testing.F) {
	for _, s := range []string{"", hostile, "plain", "\"'<>&+\x00", "\xed\xa0\x80", "\ufdd0\uffff", "{{.Title}}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v := hostileView(s, true)
		var b bytes.Buffer
		if err := v.Render(&b); err != nil {
			t.Fatal(err)
		}
		samePage(t, "page", b.String(), refRender(t, "page", v))
	})
}

// TestJobsPageMatchesHTMLTemplate: the daemon's list of running steps is
// html/template's, with hostile run info and with no step.
func TestJobsPageMatchesHTMLTemplate(t *testing.T) {
	t.Parallel()
	for _, base := range []string{"", "jobs/"} {
		for _, n := range []int{0, 2} {
			var j Jobs
			runs := []jobRun{}
			for i := range n {
				info := &summary.RunInfo{Repository: hostile, Workflow: hostile + "w", Job: "j" + hostile, Step: hostile}
				_, done := j.Start(info, nil)
				defer done()
				jr := *j.runs[i+1]
				runs = append(runs, jr)
			}
			path := "/"
			if base != "" {
				path = ""
			}
			req := httptest.NewRequest("GET", "/", nil).WithContext(t.Context())
			req.URL.Path = path
			rec := httptest.NewRecorder()
			j.ServeHTTP(rec, req)
			rows := []template.HTML{}
			for _, jr := range runs {
				var b strings.Builder
				if err := refJobRow.Execute(&b, struct {
					Base string
					Run  jobRun
				}{base, jr}); err != nil {
					t.Fatal(err)
				}
				rows = append(rows, template.HTML(jr.mask(b.String())))
			}
			var want strings.Builder
			if err := refJobs.Execute(&want, rows); err != nil {
				t.Fatal(err)
			}
			samePage(t, "jobs page", rec.Body.String(), want.String())
		}
	}
}
