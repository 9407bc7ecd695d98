package cluster

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/forgeload/forgeload/internal/pkg/backoff"
)

// Bounds of [readRetry]: the first wait after a failed stream read, and the
// longest. The longest equals the XREAD block window, so a reader never
// sleeps longer after an error than it would wait for news on a healthy
// connection.
const (
	readRetryMin = 100 * time.Millisecond
	readRetryMax = 2 * time.Second
)

// readRetry paces a loop that re-reads a Redis stream after an error (a
// broken connection, Redis restarting): the wait starts at readRetryMin,
// doubles with each consecutive failure up to readRetryMax and is jittered
// by ±20%, so the workers of a run do not hammer a recovering Redis in step.
// Any successful read, including a blocking read that times out empty,
// resets it. The zero value is ready. It is not safe for concurrent use.
type readRetry struct {
	b backoff.Backoff
}

// wait sleeps for the next back-off, or until ctx is done.
func (r *readRetry) wait(ctx context.Context) {
	if r.b.Min == 0 {
		r.b = backoff.Backoff{Min: readRetryMin, Max: readRetryMax}
	}
	t := time.NewTimer(backoff.Jitter(r.b.Next(), rand.Float64()))
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// reset forgets the failures after a read that worked.
func (r *readRetry) reset() { r.b.Reset() }
