package backoff

import (
	"math"
	"slices"
	"testing"
	"time"
)

func TestExp(t *testing.T) {
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
		{"many failures reach the ceiling", 100, 1 * s, 1000 * s, 1000 * s},
		{"no ceiling saturates", 1000, 1 * s, 0, time.Duration(math.MaxInt64)},
		{"ceiling caps", 6, 2 * s, 60 * s, 60 * s},
		{"ceiling caps even the base", 1, 2 * s, 1 * s, 1 * s},
		{"no ceiling", 7, 2 * s, 0, 128 * s},
		{"zero base never waits", 5, 0, 60 * s, 0},
		{"negative n is the base", -3, 2 * s, 60 * s, 2 * s},
		{"huge base does not overflow", 7, time.Duration(math.MaxInt64 / 2), 0, time.Duration(math.MaxInt64)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := Exp(tt.n, tt.base, tt.ceiling); got != tt.want {
				t.Errorf("Exp(%d, %s, %s) = %s, want %s", tt.n, tt.base, tt.ceiling, got, tt.want)
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

// FuzzBackoff checks the properties the loops rely on: the interval never
// shrinks as misses grow, never passes the ceiling, and jitter stays within
// ±20%.
func FuzzBackoff(f *testing.F) {
	f.Add(3, int64(2*time.Second), int64(60*time.Second), 0.3)
	f.Add(0, int64(0), int64(0), 0.0)
	f.Add(100, int64(math.MaxInt64), int64(-1), 0.999)
	f.Fuzz(func(t *testing.T, n int, base, ceiling int64, r float64) {
		b, c := time.Duration(base), time.Duration(ceiling)
		d := Exp(n, b, c)
		if d < 0 {
			t.Fatalf("Exp(%d, %s, %s) = %s, want >= 0", n, b, c, d)
		}
		if c > 0 && d > c {
			t.Fatalf("Exp(%d, %s, %s) = %s, want <= ceiling", n, b, c, d)
		}
		if n < math.MaxInt {
			if next := Exp(n+1, b, c); next < d {
				t.Fatalf("Exp(%d) = %s < Exp(%d) = %s, want non-decreasing", n+1, next, n, d)
			}
		}
		j := Jitter(d, r)
		lo, hi := float64(d)*0.8-1, float64(d)*1.2+1
		if float64(j) < lo || (float64(j) > hi && j != time.Duration(math.MaxInt64)) {
			t.Fatalf("Jitter(%s, %v) = %s, want within [0.8x, 1.2x]", d, r, j)
		}
	})
}

// TestBackoff: Min after the first failure, doubling to Max, Min again
// after Reset; a Min above Max gives Min once, then Max.
func TestBackoff(t *testing.T) {
	t.Parallel()
	const ms = time.Millisecond
	b := Backoff{Min: 100 * ms, Max: 500 * ms}
	var got []time.Duration
	for range 5 {
		got = append(got, b.Next())
	}
	b.Reset()
	got = append(got, b.Next())
	want := []time.Duration{100 * ms, 200 * ms, 400 * ms, 500 * ms, 500 * ms, 100 * ms}
	if !slices.Equal(got, want) {
		t.Errorf("Next() = %v, want %v", got, want)
	}
	odd := Backoff{Min: 10 * ms, Max: 3 * ms}
	if a, b := odd.Next(), odd.Next(); a != 10*ms || b != 3*ms {
		t.Errorf("Min above Max: Next() = %s then %s, want 10ms then 3ms", a, b)
	}
}
