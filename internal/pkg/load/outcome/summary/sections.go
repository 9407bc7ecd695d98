package summary

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/forgeload/forgeload/internal/pkg/load"
)

// ProtocolSummary is the reported view of [load.ProtocolStats]. In a
// mixed-protocol run ([Summary.Protocols]) it also has the endpoints sent
// with the protocol and their totals; those fields are absent otherwise.
type ProtocolSummary struct {
	Protocol  string             `json:"protocol"`
	Counters  map[string]int64   `json:"counters,omitempty"`
	Timings   map[string]Latency `json:"timings,omitempty"`
	Endpoints []string           `json:"endpoints,omitempty"`
	Requests  int64              `json:"requests,omitempty"`
	Errors    int64              `json:"errors,omitempty"`
	// Latency is of the protocol's endpoints' requests together, from
	// their merged histograms; nil outside a mixed-protocol run.
	Latency *Latency `json:"latency,omitempty"`
}

func summarizeProtocol(p *load.ProtocolStats) *ProtocolSummary {
	if p == nil {
		return nil
	}
	out := &ProtocolSummary{Protocol: p.Protocol, Counters: p.Counters}
	if len(p.Timings) > 0 {
		out.Timings = make(map[string]Latency, len(p.Timings))
		for k, h := range p.Timings {
			out.Timings[k] = latencyOf(&load.Stats{Latency: h})
		}
	}
	return out
}

// summarizeProtocols summarises a mixed-protocol run's list, each entry
// with the totals of its endpoints.
func summarizeProtocols(r *load.Result) []*ProtocolSummary {
	var out []*ProtocolSummary
	for _, p := range r.Protocols {
		ps := summarizeProtocol(p)
		ps.Endpoints = p.Endpoints
		var st load.Stats
		for _, name := range p.Endpoints {
			for i := range r.Endpoints {
				if r.Endpoints[i].Name == name {
					st.Merge(&r.Endpoints[i].Stats)
				}
			}
		}
		ps.Requests, ps.Errors = st.Requests, st.Errors
		l := latencyOf(&st)
		ps.Latency = &l
		out = append(out, ps)
	}
	return out
}

// ProtocolSections returns the protocol sections of s: the one protocol's
// ([Summary.Protocol]), or a mixed-protocol run's list, or none.
func (s *Summary) ProtocolSections() []*ProtocolSummary {
	if s.Protocol != nil {
		return []*ProtocolSummary{s.Protocol}
	}
	return s.Protocols
}

// protocolRows returns the summary rows of a protocol section.
func protocolRows(p *ProtocolSummary) [][2]string {
	var rows [][2]string
	if len(p.Endpoints) > 0 {
		rows = append(rows, [2]string{"Endpoints", strings.Join(p.Endpoints, ", ")})
		rate := "0%"
		if p.Requests > 0 {
			rate = load.FormatPercent(float64(p.Errors) / float64(p.Requests))
		}
		rows = append(rows, [2]string{"Requests / errors", strconv.FormatInt(p.Requests, 10) + " / " + strconv.FormatInt(p.Errors, 10) + " (" + rate + ")"})
		if p.Latency != nil {
			rows = append(rows, [2]string{"Latency p50 / p99 / max", fmtMS(p.Latency.P50) + " / " + fmtMS(p.Latency.P99) + " / " + fmtMS(p.Latency.Max)})
		}
	}
	for _, k := range slices.Sorted(maps.Keys(p.Timings)) {
		l := p.Timings[k]
		rows = append(rows, [2]string{k + " p50 / p99 / max", fmtMS(l.P50) + " / " + fmtMS(l.P99) + " / " + fmtMS(l.Max)})
	}
	if len(p.Counters) > 0 {
		rows = append(rows, [2]string{"Counters", fmtCounts(p.Counters)})
	}
	return rows
}

// ChecksSummary is the reported view of a run's response checks.
type ChecksSummary struct {
	// Rate is the share of all check evaluations that passed.
	Rate   float64           `json:"rate"`
	Passed int64             `json:"passed"`
	Failed int64             `json:"failed"`
	Checks []load.CheckStats `json:"checks"`
}

func summarizeChecks(r *load.Result) *ChecksSummary {
	if len(r.Checks) == 0 {
		return nil
	}
	p, f := r.CheckTotals()
	s := &ChecksSummary{Passed: p, Failed: f, Checks: r.Checks}
	if p+f > 0 {
		s.Rate = float64(p) / float64(p+f)
	}
	return s
}

// checkRows returns one row per check: its result, name, and counts.
func checkRows(s *ChecksSummary) [][3]string {
	rows := make([][3]string, 0, len(s.Checks))
	for _, c := range s.Checks {
		res := "PASS"
		if c.Failed > 0 {
			res = "FAIL"
		}
		rows = append(rows, [3]string{res, c.Name, fmtPct(c.Rate()) + " passed (" +
			strconv.FormatInt(c.Passed, 10) + " ok, " + strconv.FormatInt(c.Failed, 10) + " failed)"})
	}
	return rows
}

// writeChecksText writes the checks section of the text summary.
func writeChecksText(w io.Writer, s *ChecksSummary) {
	if s == nil {
		return
	}
	fmt.Fprintf(w, "\nChecks: %s passed (%d of %d)\n", fmtPct(s.Rate), s.Passed, s.Passed+s.Failed)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, r := range checkRows(s) {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", r[0], r[1], r[2])
	}
	_ = tw.Flush()
}

// writeChecksMarkdown writes the checks section of the Markdown summary.
func writeChecksMarkdown(w io.Writer, s *ChecksSummary) {
	if s == nil {
		return
	}
	fmt.Fprintf(w, "\n#### Checks: %s passed (%d of %d)\n\n", fmtPct(s.Rate), s.Passed, s.Passed+s.Failed)
	fmt.Fprintln(w, "| Result | Check | Passed |")
	fmt.Fprintln(w, "|---|---|---|")
	for _, r := range checkRows(s) {
		fmt.Fprintf(w, "| %s | %s | %s |\n", r[0], mdEscape(r[1]), r[2])
	}
}

// PhaseSummary is one phase's row of a [Summary].
type PhaseSummary struct {
	Name      string  `json:"name"`
	StartS    float64 `json:"start_s"`
	EndS      float64 `json:"end_s"`
	Requests  int64   `json:"requests"`
	Errors    int64   `json:"errors"`
	ErrorRate float64 `json:"error_rate"`
	RPS       float64 `json:"rps"`
	Latency   Latency `json:"latency"`
}

// summarizePhases is the summary row of each of r's phase windows.
func summarizePhases(r *load.Result) []PhaseSummary {
	var out []PhaseSummary
	for i := range r.Phases {
		p := &r.Phases[i]
		ps := PhaseSummary{Name: p.Name, StartS: p.Start.Seconds(), EndS: p.End.Seconds(), Requests: p.Requests, Errors: p.Errors,
			ErrorRate: p.ErrorRate(), Latency: latencyOf(&p.Stats)}
		if covered := min(p.End, r.Elapsed) - p.Start; covered > 0 {
			ps.RPS = float64(p.Requests) / covered.Seconds()
		}
		out = append(out, ps)
	}
	return out
}

var phaseHeader = []string{"Phase", "From", "To", "Requests", "Errors", "RPS", "p50", "p95", "p99"}

func phaseCells(p *PhaseSummary) []string {
	return []string{p.Name, fmtSeconds(p.StartS), fmtSeconds(p.EndS), fmt.Sprint(p.Requests), fmtPct(p.ErrorRate),
		fmt.Sprintf("%.1f", p.RPS), fmtMS(p.Latency.P50), fmtMS(p.Latency.P95), fmtMS(p.Latency.P99)}
}

func fmtSeconds(s float64) string { return (time.Duration(s * float64(time.Second))).String() }

// writePhasesText writes the phases table of a text summary.
func writePhasesText(w io.Writer, phases []PhaseSummary) {
	if len(phases) == 0 {
		return
	}
	fmt.Fprintln(w, "\nPhases")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, strings.Join(phaseHeader, "\t")+"\t")
	for i := range phases {
		fmt.Fprintln(tw, strings.Join(phaseCells(&phases[i]), "\t")+"\t")
	}
	_ = tw.Flush()
}

// writePhasesMarkdown writes the phases table of a Markdown summary.
func writePhasesMarkdown(w io.Writer, phases []PhaseSummary) {
	if len(phases) == 0 {
		return
	}
	fmt.Fprintln(w, "\n| "+strings.Join(phaseHeader, " | ")+" |")
	fmt.Fprintln(w, "|"+strings.Repeat("---|", len(phaseHeader)))
	for i := range phases {
		cells := phaseCells(&phases[i])
		cells[0] = mdEscape(cells[0])
		fmt.Fprintln(w, "| "+strings.Join(cells, " | ")+" |")
	}
}

// unreportedRow is the summary row of u, or "" without one.
func unreportedRow(u *load.Unreported) string {
	if u == nil {
		return ""
	}
	return strconv.FormatInt(u.Counted, 10) + " requests counted without metrics (no latency or status); the target may have got up to " +
		strconv.FormatInt(u.Bound, 10) + " more: " + u.Detail
}
