package resultview

import (
	_ "embed"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/forgeload/forgeload/internal/pkg/load"
	"github.com/forgeload/forgeload/internal/pkg/load/outcome/summary"
)

// The page is written by the Go code below, not by html/template: a
// template calls methods by name, and once a program can do that the
// linker keeps every exported method of every type in the binary (some
// 15 MB of forgeload's 46, and 3 MB of a load run's resident memory; see
// docs/dependencies.md). Every string that comes from the run goes
// through [pageWriter.text], which escapes exactly as html/template does
// for HTML text and quoted attribute values (TestPageMatchesHTMLTemplate
// and FuzzPageMatchesHTMLTemplate compare the two byte for byte); nothing
// from the run is written into a script, a style or a URL.

//go:embed page.css
var pageCSS string

// WriteHTML writes the self-contained HTML report of r and its threshold
// checks to w.
func WriteHTML(w io.Writer, r *load.Result, checks []load.Check) error {
	return Build(r, checks).Render(w)
}

// Render writes v as a complete HTML page.
func (v *View) Render(w io.Writer) error {
	var p pageWriter
	p.page(v)
	if _, err := w.Write(p.b); err != nil {
		return fmt.Errorf("write html report: %w", err)
	}
	return nil
}

// mainHTML is the page's <main> element's content, which the live
// dashboard sends with each update.
func mainHTML(v *View) []byte {
	var p pageWriter
	p.main(v)
	return p.b
}

// pageWriter builds a page in memory.
type pageWriter struct{ b []byte }

// s writes markup written here, never text from the run.
func (p *pageWriter) s(markup string) { p.b = append(p.b, markup...) }

// text writes s escaped for HTML text and quoted attribute values.
func (p *pageWriter) text(s string) { p.b = appendEscaped(p.b, s) }

// int writes n in decimal (digits need no escaping).
func (p *pageWriter) int(n int64) { p.b = strconv.AppendInt(p.b, n, 10) }

// num writes f as fmt's %v does (and so html/template).
func (p *pageWriter) num(f float64) { p.b = strconv.AppendFloat(p.b, f, 'g', -1, 64) }

// f1 writes f with one decimal.
func (p *pageWriter) f1(f float64) { p.b = strconv.AppendFloat(p.b, f, 'f', 1, 64) }

// bool writes true or false.
func (p *pageWriter) bool(v bool) { p.b = strconv.AppendBool(p.b, v) }

// attrIf writes markup when cond holds.
func (p *pageWriter) attrIf(cond bool, markup string) {
	if cond {
		p.s(markup)
	}
}

// escapes is html/template's table for HTML text and attribute values
// (its htmlReplacementTable): NUL becomes U+FFFD, and the five characters
// that can end a text or an attribute, and '+', become references.
var escapes = [...]string{
	0:    "\uFFFD",
	'"':  "&#34;",
	'&':  "&amp;",
	'\'': "&#39;",
	'+':  "&#43;",
	'<':  "&lt;",
	'>':  "&gt;",
}

// appendEscaped appends s to b as html/template's htmlEscaper writes a
// string: invalid UTF-8 is copied as it is, like html/template does.
func appendEscaped(b []byte, s string) []byte {
	written := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			_, w := utf8.DecodeRuneInString(s[i:])
			i += w
			continue
		}
		if int(c) < len(escapes) && escapes[c] != "" {
			b = append(b, s[written:i]...)
			b = append(b, escapes[c]...)
			written = i + 1
		}
		i++
	}
	return append(b, s[written:]...)
}

// cssColor is a series colour as the style attribute may hold it: the
// palette's "#rrggbb", or html/template's ZgotmplZ for anything else.
func cssColor(s string) string {
	if len(s) != 7 || s[0] != '#' {
		return "ZgotmplZ"
	}
	for _, c := range []byte(s[1:]) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return "ZgotmplZ"
		}
	}
	return s
}

func (p *pageWriter) page(v *View) {
	p.s("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n" +
		"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n" +
		"<meta name=\"generator\" content=\"forgeload\">\n<link rel=\"icon\" href=\"data:,\">\n<title>")
	p.text(v.Title)
	p.s("</title>\n<style>\n")
	p.s(pageCSS)
	p.s("</style>\n</head>\n<body>\n<header>\n<h1>")
	p.text(v.Title)
	p.s("</h1>\n<p>")
	if r := v.Run; r != nil {
		for _, f := range []string{r.Repository, r.Ref, r.Commit} {
			if f != "" {
				p.text(f)
				p.s(" · ")
			}
		}
	}
	if v.Started != "" {
		p.s("started ")
		p.text(v.Started)
	}
	p.s("</p>\n</header>\n<main id=\"main\">")
	p.main(v)
	p.s("</main>\n")
	p.s(hoverScript)
	if v.Live {
		p.s(`<script>
(function(){
  var es = new EventSource("events");
  es.addEventListener("update", function(e){ document.getElementById("main").innerHTML = e.data; });
  es.addEventListener("done", function(){ es.close(); });
})();
</script>`)
	}
	p.s("\n</body>\n</html>\n")
}

func (p *pageWriter) main(v *View) {
	p.s("\n")
	p.liveState(v)
	p.s("\n")
	if v.Summary.Aborted != "" {
		p.s(`<p class="aborted" id="aborted">`)
		p.text(v.Summary.Aborted)
		p.s("</p>")
	}
	p.s("\n<section id=\"summary\">\n<div class=\"cards\">\n")
	for _, c := range v.Cards {
		p.s(`<div class="card`)
		p.attrIf(c.Bad, " bad")
		p.s(`" data-k="`)
		p.text(c.Key)
		p.s(`" data-v="`)
		p.text(c.Raw)
		p.s(`"><div class="l">`)
		p.text(c.Label)
		p.s(`</div><div class="v">`)
		p.text(c.Value)
		p.s("</div></div>\n")
	}
	p.s("</div>\n</section>\n\n")
	p.thresholds(v.Thresholds)
	p.s("\n\n")
	p.baseline(v.Baseline)
	p.s("\n")
	p.checks(v.Summary.Checks)
	p.s("\n\n<h2>Over time</h2>\n<div class=\"charts\">")
	for _, c := range v.Charts {
		p.chart(c)
	}
	p.s("</div>\n\n")
	p.endpoints(v.Summary.Endpoints)
	p.phases(v.Summary.Phases)
	p.s("\n\n")
	p.protocols(v)
	p.s("\n\n<h2>Errors and status codes</h2>\n<table id=\"errors\">\n<tr><th>Error classes</th><td>")
	p.text(load.FormatCounts(v.Summary.ErrorClasses))
	p.s("</td></tr>\n<tr><th>Status codes</th><td>")
	p.text(load.FormatCounts(v.Summary.Status))
	p.s("</td></tr>\n</table>\n")
	p.messages(&v.Summary)
	p.s("\n")
	if v.Run != nil {
		p.hosts(v.Run.Hosts)
	}
	p.s("\n\n")
	p.sut(v.Summary.SUT)
	p.s("\n\n<h2>Generator health</h2>\n<table id=\"health\">\n")
	for _, h := range v.Health {
		p.s("<tr><th>")
		p.text(h.Label)
		p.s("</th><td")
		p.attrIf(h.Bad, ` class="bad"`)
		p.s(">")
		p.text(h.Value)
		p.s("</td></tr>\n")
	}
	p.s("</table>\n\n")
	p.run(v.Run)
	p.s("\n")
}

func (p *pageWriter) liveState(v *View) {
	if !v.Live {
		return
	}
	p.s("<p>")
	if v.Running {
		p.s(`<span class="live" id="live-state" data-state="running">live · running</span>`)
	} else {
		p.s(`<span class="live done" id="live-state" data-state="done">finished</span>`)
	}
	p.s(` <span class="note">updated `)
	p.text(v.Updated)
	p.s("</span></p>")
}

func (p *pageWriter) thresholds(checks []load.Check) {
	if len(checks) == 0 {
		return
	}
	p.s("\n<h2>Thresholds</h2>\n<table id=\"thresholds\">\n<tr><th>Result</th><th>Threshold</th><th>Actual</th></tr>\n")
	for _, c := range checks {
		p.s(`<tr data-passed="`)
		p.bool(c.Passed)
		p.s(`"><td>`)
		switch {
		case c.Skipped:
			p.s(`<span class="note">SKIP</span>`)
		case c.Passed:
			p.s(`<span class="pass">PASS</span>`)
		default:
			p.s(`<span class="fail">FAIL</span>`)
		}
		p.s("</td><td><code>")
		p.text(c.Name)
		p.s("</code></td><td>")
		p.text(c.Actual)
		p.s("</td></tr>\n")
	}
	p.s("</table>\n")
}

// baseline writes the comparison with the baseline, if there is one.
func (p *pageWriter) baseline(b *Baseline) {
	if b == nil {
		return
	}
	p.s("\n<h2>Compared with the baseline</h2>\n<p class=\"note\" id=\"baseline-name\">")
	p.text(b.Name)
	p.s("</p>\n<table id=\"baseline\">\n<tr><th>Metric</th><th class=\"n\">Baseline</th><th class=\"n\">This run</th><th class=\"n\">Change</th><th>Verdict</th><th class=\"n\">Limit</th><th>Noise</th></tr>\n")
	for _, r := range b.Rows {
		p.s(`<tr class="delta" data-metric="`)
		p.text(r.Metric)
		p.s(`" data-verdict="`)
		p.text(r.Verdict)
		p.s(`"><td>`)
		p.text(r.Metric)
		p.s(`</td><td class="n">`)
		p.text(r.Old)
		p.s(`</td><td class="n">`)
		p.text(r.New)
		p.s(`</td><td class="n`)
		p.attrIf(r.Worse, " bad")
		p.s(`">`)
		p.text(r.Change)
		p.s(`</td><td`)
		p.attrIf(r.Regressed, ` class="fail"`)
		p.s(`>`)
		p.text(r.Verdict)
		p.s(`</td><td class="n">`)
		p.text(r.Limit)
		p.s(`</td><td class="note">`)
		p.text(r.Noise)
		p.s("</td></tr>\n")
	}
	p.s("</table>\n")
}

func (p *pageWriter) checks(s *summary.ChecksSummary) {
	if s == nil {
		return
	}
	p.s("\n<h2>Checks</h2>\n<table id=\"checks\">\n" +
		`<tr><th>Result</th><th>Check</th><th class="n">Passed</th><th class="n">Failed</th><th class="n">Pass rate</th></tr>` + "\n")
	for _, c := range s.Checks {
		p.s(`<tr class="check" data-failed="`)
		p.int(c.Failed)
		p.s(`"><td>`)
		if c.Failed != 0 {
			p.s(`<span class="fail">FAIL</span>`)
		} else {
			p.s(`<span class="pass">PASS</span>`)
		}
		p.s("</td><td><code>")
		p.text(c.Name)
		p.s(`</code></td><td class="n">`)
		p.int(c.Passed)
		p.s(`</td><td class="n">`)
		p.int(c.Failed)
		p.s(`</td><td class="n">`)
		p.text(load.FormatPercent(c.Rate()))
		p.s("</td></tr>\n")
	}
	p.s(`<tr><th colspan="2">All checks (checks:rate)</th><td class="n">`)
	p.int(s.Passed)
	p.s(`</td><td class="n">`)
	p.int(s.Failed)
	p.s(`</td><td class="n" data-k="checks_rate" data-v="`)
	p.text(raw(s.Rate))
	p.s(`">`)
	p.text(load.FormatPercent(s.Rate))
	p.s("</td></tr>\n</table>\n")
}

// cell writes a numeric cell with its key and raw value for scripts.
func (p *pageWriter) cell(key, rawValue, shown string) {
	p.s(`<td class="n" data-k="`)
	p.s(key)
	p.s(`" data-v="`)
	p.text(rawValue)
	p.s(`">`)
	p.text(shown)
	p.s("</td>")
}

// n writes a plain numeric cell.
func (p *pageWriter) n(shown string) {
	p.s(`<td class="n">`)
	p.text(shown)
	p.s("</td>")
}

func (p *pageWriter) endpoints(eps []summary.EndpointSummary) {
	p.s("<h2>Endpoints</h2>\n<table id=\"endpoints\">\n" +
		`<tr><th>Endpoint</th><th class="n">Requests</th><th class="n">req/s</th><th class="n">Errors</th><th class="n">p50</th><th class="n">p90</th><th class="n">p99</th><th class="n">p99.9</th><th class="n">max</th><th>Status</th></tr>` + "\n")
	for _, e := range eps {
		req := strconv.FormatInt(e.Requests, 10)
		p.s(`<tr class="endpoint"><td class="name">`)
		p.text(e.Name)
		p.s("</td>")
		p.cell("requests", req, req)
		p.n(strconv.FormatFloat(e.RPS, 'f', 1, 64))
		p.cell("error_rate", raw(e.ErrorRate), load.FormatPercent(e.ErrorRate))
		p.cell("p50_ms", raw(e.Latency.P50), load.FormatMS(e.Latency.P50))
		p.n(load.FormatMS(e.Latency.P90))
		p.cell("p99_ms", raw(e.Latency.P99), load.FormatMS(e.Latency.P99))
		p.n(load.FormatMS(e.Latency.P999))
		p.n(load.FormatMS(e.Latency.Max))
		p.s("<td>")
		p.text(load.FormatCounts(e.Status))
		p.s("</td></tr>\n")
	}
	p.s("</table>\n")
}

func (p *pageWriter) phases(phases []summary.PhaseSummary) {
	if len(phases) == 0 {
		return
	}
	p.s("\n<h2>Phases</h2>\n<table id=\"phases\">\n" +
		`<tr><th>Phase</th><th class="n">From</th><th class="n">To</th><th class="n">Requests</th><th class="n">req/s</th><th class="n">Errors</th><th class="n">p50</th><th class="n">p95</th><th class="n">p99</th></tr>` + "\n")
	for _, ph := range phases {
		req := strconv.FormatInt(ph.Requests, 10)
		p.s(`<tr class="phase"><td class="name">`)
		p.text(ph.Name)
		p.s("</td>")
		p.n(raw(ph.StartS) + " s")
		p.n(raw(ph.EndS) + " s")
		p.cell("requests", req, req)
		p.n(strconv.FormatFloat(ph.RPS, 'f', 1, 64))
		p.n(load.FormatPercent(ph.ErrorRate))
		p.n(load.FormatMS(ph.Latency.P50))
		p.n(load.FormatMS(ph.Latency.P95))
		p.cell("p99_ms", raw(ph.Latency.P99), load.FormatMS(ph.Latency.P99))
		p.s("</tr>\n")
	}
	p.s("</table>\n")
}

func (p *pageWriter) protocols(v *View) {
	p.s("<h2>Protocols</h2>\n<table id=\"protocols\">\n" +
		`<tr><th>Protocol</th><th class="n">Endpoints</th><th class="n">Requests</th><th class="n">req/s</th><th class="n">Errors</th><th class="n">p50</th><th class="n">p99</th></tr>` + "\n")
	for _, r := range v.Protocols {
		p.s("<tr><td>")
		p.text(r.Protocol)
		p.s("</td>")
		p.n(strconv.Itoa(r.Endpoints))
		p.n(strconv.FormatInt(r.Requests, 10))
		p.n(strconv.FormatFloat(r.RPS, 'f', 1, 64))
		p.n(load.FormatPercent(r.ErrorRate))
		p.n(load.FormatMS(r.Latency.P50))
		p.n(load.FormatMS(r.Latency.P99))
		p.s("</tr>\n")
	}
	p.s("</table>\n")
	if ps := v.Summary.Protocol; ps != nil {
		p.protocolDetail(ps, "protocol-detail")
		return
	}
	// A mixed-protocol run: a table for each protocol with measurements of
	// its own.
	for _, ps := range v.Summary.Protocols {
		if len(ps.Timings) > 0 || len(ps.Counters) > 0 {
			p.protocolDetail(ps, "protocol-detail-"+ps.Protocol)
		}
	}
}

// protocolDetail writes a protocol's own measurements, in a table with
// the given id.
func (p *pageWriter) protocolDetail(ps *summary.ProtocolSummary, id string) {
	p.s("\n<table id=\"")
	p.text(id)
	p.s("\">\n<tr><th>")
	p.text(ps.Protocol)
	p.s(` timing</th><th class="n">p50</th><th class="n">p90</th><th class="n">p99</th><th class="n">max</th></tr>` + "\n")
	for _, k := range slices.Sorted(maps.Keys(ps.Timings)) {
		l := ps.Timings[k]
		p.s("<tr><td>")
		p.text(k)
		p.s("</td>")
		p.n(load.FormatMS(l.P50))
		p.n(load.FormatMS(l.P90))
		p.n(load.FormatMS(l.P99))
		p.n(load.FormatMS(l.Max))
		p.s("</tr>\n")
	}
	if len(ps.Counters) != 0 {
		p.s(`<tr><th>Counters</th><td colspan="4">`)
		p.text(load.FormatCounts(ps.Counters))
		p.s("</td></tr>")
	}
	p.s("\n</table>\n")
}

func (p *pageWriter) hosts(hosts []summary.HostRow) {
	if len(hosts) == 0 {
		return
	}
	p.s("\n<h2>Hosts</h2>\n<table id=\"hosts\">\n" +
		`<tr><th>Worker</th><th>Host</th><th>Segments</th><th class="n">Requests</th><th class="n">req/s</th><th class="n">Dropped</th><th class="n">CPU %</th><th class="n">Clock offset</th><th>Status</th></tr>` + "\n")
	for _, h := range hosts {
		req := strconv.FormatInt(h.Requests, 10)
		p.s(`<tr class="host">`)
		for _, f := range []string{h.ID, h.Host, h.Segments} {
			p.s("<td>")
			p.text(f)
			p.s("</td>")
		}
		p.cell("requests", req, req)
		p.n(strconv.FormatFloat(h.RPS, 'f', 1, 64))
		p.s(`<td class="n`)
		p.attrIf(h.Dropped != 0, " bad")
		p.s(`">`)
		p.int(h.Dropped)
		p.s("</td>")
		p.n(strconv.FormatFloat(h.CPUPct, 'f', 0, 64))
		p.n(h.ClockOffset)
		p.s("<td")
		p.attrIf(h.Status != "ok", ` class="bad"`)
		p.s(">")
		p.text(h.Status)
		p.s("</td></tr>\n")
	}
	p.s("</table>\n")
}

func (p *pageWriter) sut(rows []load.ResourceSummary) {
	if len(rows) == 0 {
		return
	}
	cores := func(f float64) string { return strconv.FormatFloat(f, 'f', 2, 64) + " cores" }
	bytes := func(f float64) string { return load.FormatBytes(int64(f)) }
	ubytes := func(n uint64) string { return load.FormatBytes(int64(min(n, 1<<62))) }
	p.s("\n<h2>System under test</h2>\n<table id=\"sut\">\n" +
		`<tr><th>Service</th><th class="n">CPU peak</th><th class="n">CPU mean</th><th class="n">CPU limit</th><th class="n">Memory peak</th><th class="n">Memory mean</th><th class="n">Memory limit</th><th class="n">Net in / out</th><th class="n">Disk read / write</th><th class="n">Samples</th></tr>` + "\n")
	for _, r := range rows {
		p.s(`<tr class="sut"><td>`)
		p.text(r.Target)
		p.s("</td>")
		p.cell("cpu_cores_max", raw(r.CPUCoresMax), cores(r.CPUCoresMax)+" ("+strconv.FormatFloat(r.CPUPctMax, 'f', 1, 64)+"%)")
		p.n(cores(r.CPUCoresMean) + " (" + strconv.FormatFloat(r.CPUPctMean, 'f', 1, 64) + "%)")
		p.n(cores(r.CPULimitCores))
		p.cell("mem_bytes_max", raw(r.MemBytesMax), bytes(r.MemBytesMax))
		p.n(bytes(r.MemBytesMean))
		p.n(bytes(r.MemLimitBytes))
		p.n(ubytes(r.NetRxBytes) + " / " + ubytes(r.NetTxBytes))
		p.n(ubytes(r.BlockReadBytes) + " / " + ubytes(r.BlockWriteBytes))
		p.n(strconv.Itoa(r.Samples))
		p.s("</tr>\n")
	}
	p.s("</table>\n")
}

func (p *pageWriter) run(r *summary.RunInfo) {
	if r == nil {
		return
	}
	p.s("\n<h2>Run</h2>\n<table id=\"run\">\n")
	rows := []struct{ label, value string }{
		{"Repository", r.Repository}, {"Ref", r.Ref}, {"Commit", r.Commit}, {"Workflow", r.Workflow},
		{"Job", r.Job}, {"Run", r.RunID}, {"Step", r.Step}, {"Runner", r.Runner}, {"forgeload", r.Version},
	}
	for _, row := range rows {
		if row.value != "" {
			p.s("<tr><th>")
			p.s(row.label)
			p.s("</th><td>")
			if row.label == "Commit" {
				p.s("<code>")
				p.text(row.value)
				p.s("</code>")
			} else {
				p.text(row.value)
			}
			p.s("</td></tr>")
		}
		p.s("\n")
	}
	p.s("</table>\n")
	if len(r.Config) != 0 {
		p.s("\n<h2>Load config <span class=\"note\">(secrets masked)</span></h2>\n<table id=\"config\">\n")
		for _, c := range r.Config {
			p.s("<tr><th><code>")
			p.text(c.Key)
			p.s("</code></th><td><pre>")
			p.text(c.Value)
			p.s("</pre></td></tr>\n")
		}
		p.s("</table>\n")
	}
	p.s("\n")
}

func (p *pageWriter) chart(c *Chart) {
	pl := c.Plot
	p.s(`<figure class="chart-box" data-chart="`)
	p.text(c.ID)
	p.s("\">\n<figcaption>")
	p.text(c.Title)
	p.s(` <span class="note">(`)
	p.text(c.YLabel)
	p.s(")</span></figcaption>\n<svg class=\"chart\" viewBox=\"0 0 ")
	p.int(int64(c.W))
	p.s(" ")
	p.int(int64(c.H))
	p.s(`" role="img" aria-label="`)
	p.text(c.Title)
	p.s(`" data-x="`)
	p.text(c.Xs)
	p.s(`" data-xlabel="`)
	p.text(c.XLabel)
	p.s(`" data-unit="`)
	p.text(c.YLabel)
	p.s("\" xmlns=\"http://www.w3.org/2000/svg\">\n")
	for _, b := range c.Bands {
		p.s(`<rect class="phase`)
		p.attrIf(b.Shade, " alt")
		p.s(`" data-phase="`)
		p.text(b.Name)
		p.s(`" x="`)
		p.f1(b.X)
		p.s(`" y="`)
		p.f1(pl.Y)
		p.s(`" width="`)
		p.f1(b.W)
		p.s(`" height="`)
		p.f1(pl.H)
		p.s(`"><title>phase `)
		p.text(b.Name)
		p.s(`</title></rect><text class="phase-name" x="`)
		p.f1(b.X + 4)
		p.s(`" y="`)
		p.f1(pl.Y + 11)
		p.s(`">`)
		p.text(b.Name)
		p.s("</text>\n")
	}
	p.chartAxes(c)
	p.chartLines(c)
}

func (p *pageWriter) chartAxes(c *Chart) {
	pl := c.Plot
	for _, t := range c.YTicks {
		p.s(`<line class="grid" x1="`)
		p.num(pl.X)
		p.s(`" x2="`)
		p.num(pl.X + pl.W)
		p.s(`" y1="`)
		p.f1(t.Pos)
		p.s(`" y2="`)
		p.f1(t.Pos)
		p.s(`"/><text x="`)
		p.num(pl.X - 6)
		p.s(`" y="`)
		p.f1(t.Pos + 4)
		p.s(`" text-anchor="end">`)
		p.text(t.Label)
		p.s("</text>\n")
	}
	for _, t := range c.XTicks {
		p.s(`<text x="`)
		p.f1(t.Pos)
		p.s(`" y="`)
		p.num(pl.Y + pl.H + 16)
		p.s(`" text-anchor="middle">`)
		p.text(t.Label)
		p.s("</text>\n")
	}
	p.s(`<line class="axis" x1="`)
	p.num(pl.X)
	p.s(`" x2="`)
	p.num(pl.X + pl.W)
	p.s(`" y1="`)
	p.num(pl.Y + pl.H)
	p.s(`" y2="`)
	p.num(pl.Y + pl.H)
	p.s("\"/>\n<text x=\"")
	p.num(pl.X + pl.W)
	p.s(`" y="`)
	p.num(pl.Y + pl.H + 30)
	p.s(`" text-anchor="end">`)
	p.text(c.XLabel)
	p.s("</text>\n")
}

func (p *pageWriter) chartLines(c *Chart) {
	for _, l := range c.Lines {
		p.s(`<polyline class="series" data-series="`)
		p.text(l.Name)
		p.s(`" data-points="`)
		p.int(int64(l.N))
		p.s(`" data-v="`)
		p.text(l.Values)
		p.s(`" stroke="`)
		p.text(l.Color)
		p.s(`"`)
		p.attrIf(l.Dashed, ` stroke-dasharray="6 4"`)
		p.s(` points="`)
		p.text(l.Points)
		p.s(`"><title>`)
		p.text(l.Name)
		p.s(": last ")
		p.text(l.Last)
		p.s("</title></polyline>\n")
	}
	p.s("</svg>\n<div class=\"legend\">")
	for _, l := range c.Lines {
		p.s(`<span><i style="background:`)
		p.text(cssColor(l.Color))
		p.s(`"></i>`)
		p.text(l.Name)
		p.s("</span>")
	}
	p.s("</div>\n")
	if c.Note != "" {
		p.s(`<div class="note">`)
		p.text(c.Note)
		p.s("</div>")
	}
	p.s("\n</figure>\n")
}

// messages writes the most frequent error messages, if the run failed.
func (p *pageWriter) messages(s *summary.Summary) {
	if len(s.ErrorMessages) == 0 {
		return
	}
	p.s("\n<table id=\"error-messages\">\n" +
		`<tr><th class="n">Count</th><th>Endpoint</th><th>Error message</th></tr>` + "\n")
	for _, m := range s.ErrorMessages {
		p.s(`<tr class="message"><td class="n">`)
		p.int(m.Count)
		p.s("</td><td>")
		p.text(m.Endpoint)
		p.s("</td><td><code>")
		p.text(m.Message)
		p.s("</code></td></tr>\n")
	}
	if s.ErrorMessagesOther > 0 {
		p.s(`<tr class="message-other"><td class="n">`)
		p.int(s.ErrorMessagesOther)
		p.s(`</td><td colspan="2" class="note">other messages</td></tr>` + "\n")
	}
	p.s("</table>\n")
}
