package resultview

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"strconv"

	"github.com/forgeload/forgeload/internal/pkg/load"
)

//go:embed page.html
var pageHTML string

var pageTmpl = template.Must(template.New("page").Funcs(template.FuncMap{
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
}).Parse(pageHTML))

var _ load.SummaryWriter = WriteHTML

// WriteHTML writes the self-contained HTML report of r and its threshold
// checks to w.
func WriteHTML(w io.Writer, r *load.Result, checks []load.Check) error {
	return Build(r, checks).Render(w)
}

// Render writes v as a complete HTML page.
func (v *View) Render(w io.Writer) error {
	if err := pageTmpl.ExecuteTemplate(w, "page", v); err != nil {
		return fmt.Errorf("write html report: %w", err)
	}
	return nil
}
