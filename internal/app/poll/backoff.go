package poll

import (
	"math"
	"time"
)

// maxBackoffShift caps the exponent of the backoff: the interval grows to at
// most 2^5 = 32 times the base before the ceiling applies.
const maxBackoffShift = 5

// Interval returns how long the Poller waits after n consecutive empty
// responses or errors: base when n <= 1, otherwise base × 2^min(n-1, 5),
// capped at ceiling. A ceiling <= 0 means no cap. It is a pure function; the
// Poller adds [Jitter] to its result.
func Interval(n int, base, ceiling time.Duration) time.Duration {
	if base <= 0 {
		return 0
	}
	d := base
	if n > 1 {
		shift := min(n-1, maxBackoffShift)
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
