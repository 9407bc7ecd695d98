package cluster

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"
)

// readRetry waits about 100 ms after the first failure, doubles up to 2 s,
// starts over after reset, and returns at once when the context ends.
func TestReadRetry(t *testing.T) {
	gate.Short(t)
	synctest.Test(t, func(t *testing.T) {
		var r readRetry
		waited := func() time.Duration {
			start := time.Now()
			r.wait(t.Context())
			return time.Since(start)
		}
		within := func(what string, got, want time.Duration) {
			t.Helper()
			if lo, hi := want*8/10, want*12/10; got < lo || got > hi {
				t.Errorf("%s: waited %s, want %s ±20%%", what, got, want)
			}
		}
		for i, want := range []time.Duration{100, 200, 400, 800, 1600, 2000, 2000} {
			within(fmt.Sprintf("failure %d", i+1), waited(), want*time.Millisecond)
		}
		r.reset()
		within("first failure after reset", waited(), readRetryMin)

		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		start := time.Now()
		r.wait(ctx)
		if d := time.Since(start); d != 0 {
			t.Errorf("wait with a done context took %s, want 0", d)
		}
	})
}
