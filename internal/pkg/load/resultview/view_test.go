package resultview

import (
	"bytes"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/forgeload/forgeload/internal/pkg/load"
	"github.com/forgeload/forgeload/internal/pkg/load/outcome/summary"
)

// xssName is an endpoint name that would run script if the page did not
// escape it.
const xssName = `<script>document.title="pwned"</script><img src=x onerror=alert(1)>`

// sampleResult builds a result of n seconds at 100 req/s over two
// endpoints, with latencies that grow over the run, a few 503s and
// timeouts, and late arrivals, as the engine would.
func sampleResult(t testing.TB, n int, names ...string) *load.Result {
	t.Helper()
	if len(names) == 0 {
		names = []string{"home", "api"}
	}
	r := &load.Result{Start: time.Date(2026, 11, 22, 15, 0, 0, 0, time.UTC), Open: true, TargetRPS: 100}
	for sec := range n {
		r.AddSnapshot(sampleSnapshot(sec, names))
	}
	r.Elapsed = time.Duration(n) * time.Second
	r.Finish()
	return r
}

func render(t testing.TB, r *load.Result, checks []load.Check) string {
	t.Helper()
	var b bytes.Buffer
	if err := WriteHTML(&b, r, checks); err != nil {
		t.Fatalf("WriteHTML: %v", err)
	}
	return b.String()
}

// renderRun is render for a run described by info.
func renderRun(t testing.TB, r *load.Result, checks []load.Check, info *summary.RunInfo) string {
	t.Helper()
	s := summary.Of(r, checks)
	s.Run = info
	var b bytes.Buffer
	if err := BuildSummary(r, &s).Render(&b); err != nil {
		t.Fatalf("Render: %v", err)
	}
	return b.String()
}

func TestWriteHTMLEscapesRunStrings(t *testing.T) {
	t.Parallel()
	r := sampleResult(t, 5, xssName, "ok")
	info := &summary.RunInfo{Repository: `o/<b>r</b>`, Config: []summary.ConfigRow{{Key: "headers.X", Value: `"><script>alert(2)</script>`}}}
	r.Classes = map[string]int64{`<svg onload=alert(3)>`: 1}
	page := renderRun(t, r, []load.Check{{Name: `http_req_duration{endpoint:<script>x</script>}:p99 < 1s`, Actual: "<i>1ms</i>", Passed: true}}, info)
	for _, bad := range []string{"<script>document", "<img src=x", "<script>alert", "<svg onload", "<b>r</b>", "<script>x</script>", "<i>1ms"} {
		if strings.Contains(page, bad) {
			t.Errorf("page contains %q unescaped", bad)
		}
	}
	if !strings.Contains(page, "&lt;script&gt;document.title=") {
		t.Errorf("page does not show the endpoint name as text")
	}
	// The one script of a static report is the hover's, as written: no
	// string of the run is in a script.
	if n := strings.Count(page, "<script"); n != 1 || !strings.Contains(page, hoverScript) {
		t.Errorf("a static report carries %d <script> elements, want only the hover's", n)
	}
}

func TestOneHourReportUnder1MB(t *testing.T) {
	t.Parallel()
	// An hour of seconds without their histograms: what matters here is
	// the number of rows drawn, and merging 3600 histograms costs 0.7 s
	// under -race (TestBucketPercentilesComeFromMergedHistograms covers them).
	base := sampleResult(t, 1)
	base.Seconds[0].Hist = nil
	for i := range base.Seconds[0].Endpoints {
		base.Seconds[0].Endpoints[i].Hist = nil
	}
	r := &load.Result{Start: base.Start, Open: true, TargetRPS: 100, Elapsed: time.Hour, Endpoints: base.Endpoints, Stats: base.Stats}
	for sec := range 3600 {
		row := base.Seconds[0]
		row.Second = sec
		r.Seconds = append(r.Seconds, row)
	}
	page := render(t, r, nil)
	t.Logf("one-hour report: %d bytes", len(page))
	if len(page) >= 1<<20 {
		t.Errorf("one-hour report is %d bytes, want under 1 MiB", len(page))
	}
	v := Build(r, nil)
	if v.Bucket != 6 {
		t.Errorf("bucket = %d s, want 6 (3600 s in at most %d points)", v.Bucket, MaxPoints)
	}
	for _, c := range v.Charts {
		for _, l := range c.Lines {
			if l.N > MaxPoints {
				t.Errorf("chart %s series %s has %d points, want at most %d", c.ID, l.Name, l.N, MaxPoints)
			}
		}
	}
	// The totals are the run's, never downsampled.
	want := summary.Of(r, nil).Latency.P99
	for _, c := range v.Cards {
		if c.Key == "p99_ms" && c.Raw != raw(want) {
			t.Errorf("p99 card = %s, want %v from the full histogram", c.Raw, want)
		}
	}
}

func TestBucketPercentilesComeFromMergedHistograms(t *testing.T) {
	t.Parallel()
	// Two seconds: one with 99 fast requests, one with 1 slow one. The
	// bucket's p50 must be the fast latency; averaging the seconds' p50s
	// would give about half the slow one.
	mk := func(sec int, d time.Duration, n int) load.Second {
		h := load.NewHistogram()
		for range n {
			h.Record(d)
		}
		return load.Second{Second: sec, Requests: int64(n), Hist: h.Pack(), P50: d}
	}
	const points = 4
	var secs []load.Second
	for i := range points {
		secs = append(secs, mk(2*i, time.Millisecond, 99), mk(2*i+1, time.Second, 1))
	}
	rows, size := buckets(secs, points)
	if size != 2 || len(rows) != points {
		t.Fatalf("buckets = %d rows of %d s, want %d of 2", len(rows), size, points)
	}
	if got := rows[0].p50; got != 1 {
		t.Errorf("bucket p50 = %v ms, want 1 (from the merged histogram)", got)
	}
	if got := rows[0].requests; got != 50 {
		t.Errorf("bucket rate = %v req/s, want 50 (the mean over its seconds)", got)
	}
}

func TestEveryChartHasData(t *testing.T) {
	t.Parallel()
	v := Build(sampleResult(t, 30), nil)
	ids := map[string]bool{}
	for _, c := range v.Charts {
		ids[c.ID] = true
		if len(c.Lines) == 0 {
			t.Errorf("chart %s has no series", c.ID)
		}
		for _, l := range c.Lines {
			if l.N < 2 {
				t.Errorf("chart %s series %s has %d points, want at least 2", c.ID, l.Name, l.N)
			}
		}
	}
	for _, id := range []string{"rate", "latency", "errors", "status", "spectrum", "generator"} {
		if !ids[id] {
			t.Errorf("no %s chart", id)
		}
	}
}

func TestNiceMax(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, top, step float64 }{
		{0, 1, 0.25},
		{97, 100, 20},
		{1000, 1000, 200},
		{3.2, 4, 1},
	} {
		top, step := niceMax(tc.in)
		if top != tc.top || step != tc.step {
			t.Errorf("niceMax(%v) = %v, %v, want %v, %v", tc.in, top, step, tc.top, tc.step)
		}
	}
}

func TestProtocolDetail(t *testing.T) {
	t.Parallel()
	r := sampleResult(t, 3)
	h := load.NewHistogram()
	h.Record(3 * time.Millisecond)
	r.Protocol = &load.ProtocolStats{Protocol: "websocket", Counters: map[string]int64{"<b>msgs": 7}, Timings: map[string]*load.Histogram{"connect": h}}
	page := render(t, r, nil)
	for _, want := range []string{"<td>websocket</td>", "websocket timing", "<td>connect</td>", "&lt;b&gt;msgs: 7"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

// TestMixedProtocols: the report of a mixed-protocol run has one row per
// protocol with its endpoints' totals, and a table of each protocol's own
// measurements. Before, it had one row named http with every endpoint.
func TestMixedProtocols(t *testing.T) {
	t.Parallel()
	r := sampleResult(t, 3, "home", "chat")
	h := load.NewHistogram()
	h.Record(3 * time.Millisecond)
	r.Protocols = []*load.ProtocolStats{{Protocol: "http", Endpoints: []string{"home"}},
		{Protocol: "websocket", Endpoints: []string{"chat"}, Counters: map[string]int64{"messages_sent": 7}, Timings: map[string]*load.Histogram{"connect": h}}}
	v := Build(r, nil)
	if len(v.Protocols) != 2 || v.Protocols[0].Protocol != "http" || v.Protocols[1].Protocol != "websocket" ||
		v.Protocols[0].Requests+v.Protocols[1].Requests != r.Requests || v.Protocols[1].Endpoints != 1 || v.Protocols[1].Latency.P99 == 0 {
		t.Fatalf("protocol rows %+v over %d requests, want http and websocket with their endpoints' totals", v.Protocols, r.Requests)
	}
	page := render(t, r, nil)
	for _, want := range []string{"<td>http</td>", "<td>websocket</td>", `id="protocol-detail-websocket"`, "websocket timing", "messages_sent: 7"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(page, `id="protocol-detail-http"`) {
		t.Error("page has a measurements table for http, which has none")
	}
}

func TestSystemUnderTest(t *testing.T) {
	t.Parallel()
	r := sampleResult(t, 3)
	r.SUT = []load.ResourceSummary{{Target: "<api>", Samples: 3, CPUCoresMax: 1.5, CPUCoresMean: 1.2, CPULimitCores: 2, CPUPctMax: 75, CPUPctMean: 60, MemBytesMax: 64 << 20, MemBytesMean: 60 << 20, MemLimitBytes: 512 << 20}}
	page := render(t, r, nil)
	for _, want := range []string{`<table id="sut">`, "<td>&lt;api&gt;</td>", "1.50 cores (75.0%)", "64.0 MiB", "512.0 MiB"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(render(t, sampleResult(t, 3), nil), `id="sut"`) {
		t.Errorf("a run without services shows a system-under-test table")
	}
}

// sampleSnapshot is second sec of sampleResult.
func sampleSnapshot(sec int, names []string) *load.Snapshot {
	s := &load.Snapshot{Second: sec, TargetRPS: 100, InFlight: 3}
	for i, name := range names {
		es := load.EndpointStats{Name: name}
		es.Latency = load.NewHistogram()
		for k := range 100 / len(names) {
			d := time.Duration(1000+sec*10+k*50+i*300) * time.Microsecond
			es.Latency.Record(d)
			es.Requests++
			status := 200
			if k == 0 && sec%3 == 0 {
				status, es.Errors = 503, es.Errors+1
				es.Classes = map[string]int64{"http_5xx": es.Classes["http_5xx"] + 1}
				es.Messages.Add("unexpected status 503", 1)
			}
			if es.Status == nil {
				es.Status = map[int]int64{}
			}
			es.Status[status]++
		}
		if sec%5 == 0 && i == 0 {
			es.Errors++
			es.Requests++
			es.Latency.Record(2 * time.Second)
			if es.Classes == nil {
				es.Classes = map[string]int64{}
			}
			es.Classes["timeout"]++
			es.Messages.Add("Get: context deadline exceeded (Client.Timeout exceeded while awaiting headers)", 1)
		}
		s.Endpoints = append(s.Endpoints, es)
		s.Stats.Merge(&es.Stats)
	}
	if sec == 2 {
		s.Late, s.Dropped = 4, 1
		s.DroppedBy = map[string]int64{"late": 1} // as a real second: every drop has its reason
	}
	return s
}

func TestHostsOfAMultiHostRun(t *testing.T) {
	t.Parallel()
	r := sampleResult(t, 3)
	info := &summary.RunInfo{Hosts: []summary.HostRow{
		{ID: "w1", Host: "gen-a", Segments: "0,2", Requests: 3000, RPS: 1000, CPUPct: 80, ClockOffset: "1ms", Status: "ok"},
		{ID: "w2", Host: "<gen-b>", Segments: "1", Requests: 1200, RPS: 400, Dropped: 3, ClockOffset: "-2ms", Status: "lost: lease expired"},
	}}
	page := renderRun(t, r, nil, info)
	for _, want := range []string{`<table id="hosts">`, "<td>gen-a</td>", "<td>&lt;gen-b&gt;</td>", `data-v="3000"`, `<td class="bad">lost: lease expired</td>`} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(render(t, sampleResult(t, 3), nil), `id="hosts"`) {
		t.Errorf("a one-host run shows a host table")
	}
}

// TestHTMLListsEachCheck: the report has one row per response check with
// its counts, and the overall checks rate; a run without checks has no
// such table.
func TestHTMLListsEachCheck(t *testing.T) {
	t.Parallel()
	r := sampleResult(t, 3)
	if strings.Contains(render(t, r, nil), `id="checks"`) {
		t.Error("a run without checks has a checks table")
	}
	r.Checks = []load.CheckStats{{Name: `checks[0] status in [200]`, Passed: 10}, {Name: `checks[1] body does not contain "<error>"`, Passed: 7, Failed: 3}}
	page := render(t, r, nil)
	for _, want := range []string{
		`<tr class="check" data-failed="0"><td><span class="pass">PASS</span></td><td><code>checks[0] status in [200]</code></td><td class="n">10</td><td class="n">0</td><td class="n">100.00%</td></tr>`,
		`<tr class="check" data-failed="3"><td><span class="fail">FAIL</span></td><td><code>checks[1] body does not contain &#34;&lt;error&gt;&#34;</code></td><td class="n">7</td><td class="n">3</td><td class="n">70.00%</td></tr>`,
		`<td class="n">17</td><td class="n">3</td><td class="n" data-k="checks_rate" data-v="0.85">85.00%</td>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %s", want)
		}
	}
}

// TestBucketsAllocateLittle: drawing a run's seconds allocates in
// proportion to the rows drawn, not a dense 140 KB histogram per row:
// the live dashboard redraws every second, in the process that generates
// the load. Before, 600 rows took some 84 MB a redraw. It does not run in
// parallel, so that no other test's allocations are counted.
func TestBucketsAllocateLittle(t *testing.T) {
	r := sampleResult(t, 2*MaxPoints, "home")
	for _, n := range []int{MaxPoints, 2 * MaxPoints} { // one second a row; two
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		rows, _ := buckets(r.Seconds[:n], MaxPoints)
		runtime.ReadMemStats(&after)
		if got := after.TotalAlloc - before.TotalAlloc; len(rows) != MaxPoints || got > 16<<20 {
			t.Errorf("drawing %d seconds in %d rows allocated %d MB, want under 16", n, len(rows), got>>20)
		}
	}
}
