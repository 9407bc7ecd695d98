package backoff

import (
	"math"
	"time"
)

// Exp returns the wait after n consecutive failures: base when n <= 1,
// otherwise base × 2^(n-1), capped at ceiling. A ceiling <= 0 means no cap;
// the result saturates at the largest Duration instead of overflowing. A
// base <= 0 gives 0. It is a pure function.
func Exp(n int, base, ceiling time.Duration) time.Duration {
	if base <= 0 {
		return 0
	}
	d := base
	if n > 1 {
		shift := min(n-1, 62)
		if base > time.Duration(math.MaxInt64>>shift) {
			d = time.Duration(math.MaxInt64)
		} else {
			d = base << shift
		}
	}
	if ceiling > 0 && d > ceiling {
		d = ceiling
	}
	return d
}

// Jitter spreads d uniformly over [0.8·d, 1.2·d] using r, a random number in
// [0, 1): r = 0 gives 0.8·d, r = 0.5 gives d and r → 1 gives 1.2·d. Values of
// r outside [0, 1] are clamped. It is a pure function.
func Jitter(d time.Duration, r float64) time.Duration {
	if d <= 0 {
		return 0
	}
	switch {
	case r < 0 || math.IsNaN(r):
		r = 0
	case r > 1:
		r = 1
	}
	f := float64(d) * (0.8 + 0.4*r)
	if f >= math.MaxInt64 {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(f)
}

// Backoff is the state of one retry loop: Next returns Min after the first
// failure, then doubles up to Max; Reset starts over after a success. The
// zero value with Min and Max set is ready. It is not safe for concurrent
// use.
type Backoff struct {
	Min, Max time.Duration
	n        int
}

// Next returns the wait before the next attempt and counts one failure.
func (b *Backoff) Next() time.Duration {
	b.n++
	if b.n == 1 {
		return b.Min
	}
	return Exp(b.n, b.Min, b.Max)
}

// Reset forgets the failures.
func (b *Backoff) Reset() { b.n = 0 }
