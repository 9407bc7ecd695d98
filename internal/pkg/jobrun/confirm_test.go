package jobrun

import (
	"strings"
	"testing"
)

// TestParseConfirm: confirm is a whole number from 0 to 3, with a
// baseline to confirm against; a bad value names the key and the fix.
func TestParseConfirm(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		with map[string]string
		want int
		err  string
	}{
		{with: map[string]string{}, want: 0},
		{with: map[string]string{"baseline": "main", "confirm": "1"}, want: 1},
		{with: map[string]string{"baseline": "main", "confirm": " 3 "}, want: 3},
		{with: map[string]string{"confirm": "0"}, want: 0},
		{with: map[string]string{"baseline": "main", "confirm": "4"}, err: `with: confirm: "4" is not a whole number from 0 to 3`},
		{with: map[string]string{"baseline": "main", "confirm": "-1"}, err: "e.g. confirm: 1"},
		{with: map[string]string{"baseline": "main", "confirm": "true"}, err: `with: confirm: "true" is not a whole number`},
		{with: map[string]string{"baseline": "main", "confirm": "1.5"}, err: "from 0 to 3"},
		{with: map[string]string{"confirm": "1"}, err: "confirm is set but baseline is not: a rerun confirms a regression against a baseline, so add baseline: BRANCH"},
	} {
		got, err := parseConfirm(tc.with)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("parseConfirm(%v) = %d, %v, want an error with %q", tc.with, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("parseConfirm(%v) = %d, %v, want %d", tc.with, got, err, tc.want)
		}
	}
}

// FuzzParseConfirm: any value is either a count from 0 to MaxConfirm or
// an error that names the key.
func FuzzParseConfirm(f *testing.F) {
	for _, s := range []string{"0", "1", "3", "4", "-1", " 2 ", "", "1e0", "０", "99999999999999999999"} {
		f.Add(s, true)
	}
	f.Add("1", false)
	f.Fuzz(func(t *testing.T, v string, withBaseline bool) {
		with := map[string]string{"confirm": v}
		if withBaseline {
			with["baseline"] = "main"
		}
		n, err := parseConfirm(with)
		if err != nil {
			if !strings.Contains(err.Error(), "confirm") {
				t.Fatalf("parseConfirm(%q) error %q does not name the key", v, err)
			}
			return
		}
		if n < 0 || n > MaxConfirm || n > 0 && !withBaseline {
			t.Fatalf("parseConfirm(%q, baseline %v) = %d", v, withBaseline, n)
		}
	})
}
