package duet

import (
	"fmt"
	"io"

	"github.com/forgeload/forgeload/internal/pkg/load/compare"
)

// line is the verdict in one line.
func (v Verdict) line() string {
	switch {
	case v.TooShort:
		return fmt.Sprintf("Paired A/B run: NOT JUDGED, only %d paired seconds (want %d)", v.Seconds, MinSeconds)
	case v.Regressed():
		return fmt.Sprintf("Paired A/B run: REGRESSION over %d paired seconds", v.Seconds)
	}
	return fmt.Sprintf("Paired A/B run: no regression beyond the limits over %d paired seconds", v.Seconds)
}

// WriteText writes the two sides and the verdict as an aligned table.
func (v Verdict) WriteText(w io.Writer) error {
	if _, err := fmt.Fprintf(w, "\n%s\n", v.line()); err != nil {
		return fmt.Errorf("write paired verdict: %w", err)
	}
	return compare.WriteText(w, "baseline "+v.Baseline, "candidate "+v.Candidate, v.Deltas)
}

// WriteMarkdown writes the two sides and the verdict as Markdown.
func (v Verdict) WriteMarkdown(w io.Writer) error {
	if _, err := fmt.Fprintf(w, "\n**%s**\n\n", v.line()); err != nil {
		return fmt.Errorf("write paired verdict: %w", err)
	}
	return compare.WriteMarkdown(w, "baseline "+v.Baseline+" (candidate "+v.Candidate+")", "candidate", v.Deltas)
}

// JSONMetric is one metric of [JSONVerdict].
type JSONMetric struct {
	Metric      string  `json:"metric"`
	Unit        string  `json:"unit"`
	Baseline    float64 `json:"baseline"`
	Candidate   float64 `json:"candidate"`
	Significant bool    `json:"significant"`
	Regressed   bool    `json:"regressed"`
	Limit       string  `json:"limit,omitempty"`
	Paired      string  `json:"paired,omitempty"`
}

// JSONVerdict is the verdict as the JSON result's "duet" field.
type JSONVerdict struct {
	Candidate string       `json:"candidate"`
	Baseline  string       `json:"baseline"`
	Seconds   int          `json:"seconds"`
	TooShort  bool         `json:"too_short,omitempty"`
	Regressed bool         `json:"regressed"`
	Metrics   []JSONMetric `json:"metrics"`
}

// JSON returns the verdict in its JSON form.
func (v Verdict) JSON() JSONVerdict {
	out := JSONVerdict{Candidate: v.Candidate, Baseline: v.Baseline, Seconds: v.Seconds, TooShort: v.TooShort, Regressed: v.Regressed()}
	for _, d := range v.Deltas {
		m := JSONMetric{Metric: d.Metric, Unit: d.Unit, Baseline: d.Old, Candidate: d.New, Significant: d.Significant, Regressed: d.Regressed, Paired: d.Noise}
		if d.HasLimit {
			m.Limit = compare.FormatLimit(d.Metric, d.Limit)
		}
		out.Metrics = append(out.Metrics, m)
	}
	return out
}
