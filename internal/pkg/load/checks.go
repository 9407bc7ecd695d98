package load

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
