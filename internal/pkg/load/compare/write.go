package compare

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
)

func fmtVal(d Delta, v float64) string {
	switch d.Unit {
	case "ms":
		return strconv.FormatFloat(v, 'f', 2, 64) + "ms"
	case "%":
		return strconv.FormatFloat(v, 'f', 2, 64) + "%"
	case "req/s":
		return strconv.FormatFloat(v, 'f', 1, 64) + "/s"
	}
	return strconv.FormatFloat(v, 'f', 2, 64) + " " + d.Unit
}

func fmtChange(d Delta) string {
	sign := "+"
	if d.Change < 0 {
		sign = ""
	}
	s := sign + strings.TrimSuffix(fmtVal(d, d.Change), " "+d.Unit)
	if d.Unit == "%" {
		s = strings.TrimSuffix(s, "%") + " pts"
	}
	if d.Old != 0 && d.Unit != "%" {
		s += " (" + sign + strconv.FormatFloat(100*d.Rel, 'f', 1, 64) + "%)"
	}
	return s
}

// verdict is the row's mark: "REGRESSION", "worse", "better" for
// significant changes, "~" for noise.
func verdict(d Delta) string {
	switch {
	case d.Regressed:
		return "REGRESSION"
	case !d.Significant:
		return "~ noise"
	case d.Worse():
		return "worse"
	}
	return "better"
}

func limitText(d Delta) string {
	if !d.HasLimit {
		return ""
	}
	if d.Metric == "error_rate" {
		return "+" + strconv.FormatFloat(100*d.Limit, 'f', -1, 64) + " pts"
	}
	return strconv.FormatFloat(100*d.Limit, 'f', -1, 64) + "%"
}

// WriteText writes the deltas as an aligned table.
func WriteText(w io.Writer, old, new string, ds []Delta) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "Comparison: %s → %s\n", old, new)
	fmt.Fprintln(tw, "  metric\told\tnew\tchange\tverdict\tlimit\tnoise")
	for _, d := range ds {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\n", d.Metric, fmtVal(d, d.Old), fmtVal(d, d.New), fmtChange(d), verdict(d), limitText(d), d.Noise)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write comparison: %w", err)
	}
	if note := fewRunsNote(ds); note != "" {
		if _, err := fmt.Fprintln(w, "  "+note); err != nil {
			return fmt.Errorf("write comparison: %w", err)
		}
	}
	return nil
}

// FewRuns is the number of earlier runs below which the run-to-run bound
// is wide enough to be worth a note: CriticalMAD falls from 32 for 3 runs
// to 8.9 for 5.
const FewRuns = 5

// fewRunsNote says when the earlier runs are too few to judge their
// spread well, else "".
func fewRunsNote(ds []Delta) string {
	if len(ds) == 0 || ds[0].Runs < 2 || ds[0].Runs >= FewRuns {
		return ""
	}
	n := ds[0].Runs
	return fmt.Sprintf("note: only %d earlier runs, so the run-to-run bound is wide (%.2f × their MAD); %d or more judge better", n, CriticalMAD(n), FewRuns)
}

// WriteMarkdown writes the deltas as a Markdown table, for job summaries.
func WriteMarkdown(w io.Writer, old, new string, ds []Delta) error {
	esc := strings.NewReplacer("|", `\|`, "\n", " ", "<", "&lt;", ">", "&gt;")
	var b strings.Builder
	fmt.Fprintf(&b, "#### Compared with %s\n\n", esc.Replace(old))
	b.WriteString("| Metric | Baseline | This run | Change | Verdict | Limit |\n|---|--:|--:|--:|---|--:|\n")
	for _, d := range ds {
		v := verdict(d)
		if d.Regressed {
			v = "❌ " + v
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", esc.Replace(d.Metric), fmtVal(d, d.Old), fmtVal(d, d.New), fmtChange(d), v, limitText(d))
	}
	if note := fewRunsNote(ds); note != "" {
		b.WriteString("\n" + note + "\n")
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("write comparison: %w", err)
	}
	return nil
}
