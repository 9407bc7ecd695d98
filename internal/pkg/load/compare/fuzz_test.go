package compare

import (
	"math"
	"os"
	"strings"
	"testing"
)

func FuzzRead(f *testing.F) {
	if b, err := os.ReadFile("testdata/v1.json"); err == nil {
		f.Add(string(b))
	}
	f.Add(`{"schema_version":2,"requests":3,"latency_hist":"SElTVEZBQUFBQ"}`)
	f.Add(`{"requests":1,"seconds":[{"second":0,"requests":1}]}`)
	f.Fuzz(func(t *testing.T, s string) {
		r, err := Read(strings.NewReader(s), "f.json")
		if err != nil {
			return
		}
		// Whatever was read compares with itself without a regression.
		if Regressed(Compare(r, r, Limits{"p99": 0, "rps": 0, "error_rate": 0})) {
			t.Fatalf("a result regressed against itself: %q", s)
		}
	})
}

func FuzzParseLimit(f *testing.F) {
	for _, s := range []string{"p99=10%", "error_rate=0.5%", "rps=0.05", "p99=", "=1", "sut_cpu:api=5%"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		_, v, err := ParseLimit(s)
		if err == nil && (v < 0 || math.IsNaN(v) || math.IsInf(v, 0)) {
			t.Fatalf("ParseLimit(%q) = %v, want a finite non-negative limit", s, v)
		}
	})
}

func FuzzNaturalCompare(f *testing.F) {
	for _, s := range [][2]string{{"run-9.json", "run-10.json"}, {"a02", "a2"}, {"2026-01-09", "2026-01-10"}, {"", "1"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		// An order: antisymmetric, and equal for equal names.
		if x, y := naturalCompare(a, b), naturalCompare(b, a); x > 0 != (y < 0) || x < 0 != (y > 0) || a == b && x != 0 {
			t.Fatalf("naturalCompare(%q, %q) = %d but (%q, %q) = %d", a, b, x, b, a, y)
		}
	})
}
