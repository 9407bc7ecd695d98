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
}
