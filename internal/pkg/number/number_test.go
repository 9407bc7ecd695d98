package number

import (
	"errors"
	"regexp"
	"strconv"
	"testing"
)

func TestScan(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		in   string
		want int
	}{
		{"", 0}, {"+", 0}, {"-", 0}, {".", 0}, {"-.", 0}, {"e5", 0}, {"ms", 0}, {" 1", 0},
		{"0", 1}, {"12", 2}, {"-12", 3}, {"+1.5", 4}, {"1.", 2}, {".5", 2}, {"-.5", 3},
		{"300ms", 3}, {"1.10)", 4}, {"99.9%", 4},
		{"1e3", 3}, {"1E+3", 4}, {"2.5e-3s", 6},
		{"1e", 1}, {"1e+", 1}, {"1ex", 1}, {"4em", 1}, // an exponent without digits is not taken
		{"1.2.3", 3}, {"0x10", 1},
	} {
		if got := Scan(tt.in); got != tt.want {
			t.Errorf("Scan(%q) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

func TestValid(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]bool{
		"1": true, "-1.5": true, "+.5": true, "5.": true, "1e10": true, "1E-3": true,
		"": false, "1e": false, "1 ": false, " 1": false, "1x": false, "--1": false, "0x1F": false, "Infinity": false,
	} {
		if got := Valid(in); got != want {
			t.Errorf("Valid(%q) = %t, want %t", in, got, want)
		}
	}
}

// reference is the grammar Scan implements, written as a regular
// expression.
var reference = regexp.MustCompile(`^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?`)

// FuzzScan checks Scan against the regular expression and that what it
// accepts parses as a float.
func FuzzScan(f *testing.F) {
	for _, s := range []string{"", "1", "-1.5e3x", ".e1", "1e", "+.5E-2ms", "9.", "00012"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n := Scan(s)
		if want := len(reference.FindString(s)); n != want {
			t.Fatalf("Scan(%q) = %d, want %d", s, n, want)
		}
		if n == 0 {
			return
		}
		// Out of range still means the syntax was right.
		if _, err := strconv.ParseFloat(s[:n], 64); err != nil && !errors.Is(err, strconv.ErrRange) {
			t.Fatalf("Scan(%q) took %q, which ParseFloat refuses: %v", s, s[:n], err)
		}
	})
}
