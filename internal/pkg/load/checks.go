package load

import (
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
)

// CheckStats are one response check's counts over a run (see package
// check): how many responses passed and failed it. They merge by Name.
type CheckStats struct {
	// Name is the check's stable name: its place in the config and what it
	// checks, e.g. `checks[1] body does not contain "error"`.
	Name string `json:"name"`
	// Passed and Failed count the responses that passed and failed it.
	Passed int64 `json:"passed"`
	Failed int64 `json:"failed"`
}

// Rate returns the share of responses that passed, or 0 without any.
func (c CheckStats) Rate() float64 {
	if n := c.Passed + c.Failed; n > 0 {
		return float64(c.Passed) / float64(n)
	}
	return 0
}

// mergeChecks adds o's counts to cs by name, keeping cs's order and
// appending the names it lacks.
func mergeChecks(cs, o []CheckStats) []CheckStats {
	for _, c := range o {
		found := false
		for i := range cs {
			if cs[i].Name == c.Name {
				cs[i].Passed += c.Passed
				cs[i].Failed += c.Failed
				found = true
				break
			}
		}
		if !found {
			cs = append(cs, c)
		}
	}
	return cs
}

// CheckTotals returns the passes and failures of every check together,
// which the checks:rate threshold reads.
func (r *Result) CheckTotals() (passed, failed int64) {
	for _, c := range r.Checks {
		passed += c.Passed
		failed += c.Failed
	}
	return passed, failed
}

// ChecksSummary is the reported view of a run's response checks.
type ChecksSummary struct {
	// Rate is the share of all check evaluations that passed.
	Rate   float64      `json:"rate"`
	Passed int64        `json:"passed"`
	Failed int64        `json:"failed"`
	Checks []CheckStats `json:"checks"`
}

func summarizeChecks(r *Result) *ChecksSummary {
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
