package compare

// Cells are a compared metric's values as the comparison tables write
// them: for other views of the same comparison (the HTML report).
type Cells struct {
	Old, New, Change, Verdict, Limit string
}

// Cells formats d as the text and Markdown tables do.
func (d Delta) Cells() Cells {
	return Cells{Old: fmtVal(d, d.Old), New: fmtVal(d, d.New), Change: fmtChange(d), Verdict: verdict(d), Limit: limitText(d)}
}
