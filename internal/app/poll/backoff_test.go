package poll

import (
	"math"
	"testing"
	"time"
)

func TestInterval(t *testing.T) {
	t.Parallel()
	const s = time.Second
	tests := []struct {
		name    string
		n       int
		base    time.Duration
		ceiling time.Duration
		want    time.Duration
	}{
		{"no misses yet waits the base", 0, 2 * s, 60 * s, 2 * s},
		{"first miss waits the base", 1, 2 * s, 60 * s, 2 * s},
		{"second miss doubles", 2, 2 * s, 60 * s, 4 * s},
		{"third miss quadruples", 3, 2 * s, 60 * s, 8 * s},
		{"sixth miss is 32x", 6, 1 * s, 60 * s, 32 * s},
		{"exponent stops at 5", 100, 1 * s, 1000 * s, 32 * s},
		{"ceiling caps", 6, 2 * s, 60 * s, 60 * s},
		{"ceiling caps even the base", 1, 2 * s, 1 * s, 1 * s},
		{"no ceiling", 7, 2 * s, 0, 64 * s},
		{"zero base never waits", 5, 0, 60 * s, 0},
		{"negative n is the base", -3, 2 * s, 60 * s, 2 * s},
		{"huge base does not overflow", 7, time.Duration(math.MaxInt64 / 2), 0, time.Duration(math.MaxInt64)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := Interval(tt.n, tt.base, tt.ceiling); got != tt.want {
				t.Errorf("Interval(%d, %s, %s) = %s, want %s", tt.n, tt.base, tt.ceiling, got, tt.want)
			}
		})
	}
}

func TestJitter(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		d    time.Duration
		r    float64
		want time.Duration
	}{
		{"r=0 is the lower bound 0.8x", 10 * time.Second, 0, 8 * time.Second},
		{"r=0.5 is the middle", 10 * time.Second, 0.5, 10 * time.Second},
		{"r=1 is the upper bound 1.2x", 10 * time.Second, 1, 12 * time.Second},
		{"r below 0 is clamped", 10 * time.Second, -5, 8 * time.Second},
		{"r above 1 is clamped", 10 * time.Second, 7, 12 * time.Second},
		{"NaN is clamped to the lower bound", 10 * time.Second, math.NaN(), 8 * time.Second},
		{"zero stays zero", 0, 0.7, 0},
		{"huge does not overflow", time.Duration(math.MaxInt64), 1, time.Duration(math.MaxInt64)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := Jitter(tt.d, tt.r); got != tt.want {
				t.Errorf("Jitter(%s, %v) = %s, want %s", tt.d, tt.r, got, tt.want)
			}
		})
	}
}

// FuzzBackoff checks the properties the loop relies on: the interval never
// shrinks as misses grow, never passes the ceiling, and jitter stays within
// ±20%.
func FuzzBackoff(f *testing.F) {
	f.Add(3, int64(2*time.Second), int64(60*time.Second), 0.3)
	f.Add(0, int64(0), int64(0), 0.0)
	f.Add(100, int64(math.MaxInt64), int64(-1), 0.999)
	f.Fuzz(func(t *testing.T, n int, base, ceiling int64, r float64) {
		b, c := time.Duration(base), time.Duration(ceiling)
		d := Interval(n, b, c)
		if d < 0 {
			t.Fatalf("Interval(%d, %s, %s) = %s, want >= 0", n, b, c, d)
		}
		if c > 0 && d > c {
			t.Fatalf("Interval(%d, %s, %s) = %s, want <= ceiling", n, b, c, d)
		}
		if n < math.MaxInt {
			if next := Interval(n+1, b, c); next < d {
				t.Fatalf("Interval(%d) = %s < Interval(%d) = %s, want non-decreasing", n+1, next, n, d)
			}
		}
		j := Jitter(d, r)
		lo, hi := float64(d)*0.8-1, float64(d)*1.2+1
		if float64(j) < lo || (float64(j) > hi && j != time.Duration(math.MaxInt64)) {
			t.Fatalf("Jitter(%s, %v) = %s, want within [0.8x, 1.2x]", d, r, j)
		}
	})
}
