package poll

import (
	"testing"
	"time"
)

// TestInterval checks what the Poller adds to backoff.Exp: the exponent
// stops at 5, so without a ceiling the wait stops growing at 32x the base.
func TestInterval(t *testing.T) {
	t.Parallel()
	const s = time.Second
	for _, tt := range []struct {
		n             int
		base, ceiling time.Duration
		want          time.Duration
	}{
		{1, 2 * s, 60 * s, 2 * s},
		{3, 2 * s, 60 * s, 8 * s},
		{6, 1 * s, 60 * s, 32 * s},
		{100, 1 * s, 1000 * s, 32 * s},
		{7, 2 * s, 0, 64 * s},
		{100, 2 * s, 30 * s, 30 * s},
	} {
		if got := Interval(tt.n, tt.base, tt.ceiling); got != tt.want {
			t.Errorf("Interval(%d, %s, %s) = %s, want %s", tt.n, tt.base, tt.ceiling, got, tt.want)
		}
	}
}
