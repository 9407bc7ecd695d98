package load

import "testing"

// TestResultMergeAddsChecksByName: the checks of two results add up by
// name, in the first result's order, and the totals are those of all.
func TestResultMergeAddsChecksByName(t *testing.T) {
	t.Parallel()
	r := &Result{Checks: []CheckStats{{Name: "a", Passed: 1, Failed: 2}, {Name: "b", Passed: 3}}}
	r.Merge(&Result{Checks: []CheckStats{{Name: "b", Passed: 1, Failed: 1}, {Name: "c", Failed: 4}}})
	want := []CheckStats{{Name: "a", Passed: 1, Failed: 2}, {Name: "b", Passed: 4, Failed: 1}, {Name: "c", Failed: 4}}
	if len(r.Checks) != len(want) {
		t.Fatalf("Checks = %+v, want %+v", r.Checks, want)
	}
	for i := range want {
		if r.Checks[i] != want[i] {
			t.Errorf("Checks[%d] = %+v, want %+v", i, r.Checks[i], want[i])
		}
	}
	if p, f := r.CheckTotals(); p != 5 || f != 7 {
		t.Errorf("CheckTotals = %d, %d; want 5, 7", p, f)
	}
	s := Summarize(r, nil)
	if s.Checks == nil || s.Checks.Passed != 5 || s.Checks.Failed != 7 || s.Checks.Rate != 5.0/12 {
		t.Errorf("summary checks = %+v, want 5 passed, 7 failed, rate 5/12", s.Checks)
	}
	if Summarize(&Result{}, nil).Checks != nil {
		t.Error("a result without checks has a checks summary")
	}
}
