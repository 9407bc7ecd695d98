package metrics

import (
	"fmt"
	"sync"
	"time"
)

// ErrorWindow tracks how long an operation (typically FetchTask) has been
// failing without a success in between, so that readiness can tolerate
// transient errors for a grace period. Time is an argument of every method,
// so tests need no real clock. The zero value has a grace of 0 (not ready on
// the first failure). It is safe for concurrent use.
type ErrorWindow struct {
	// Grace is how long failures may last before Check reports them. Set it
	// before first use.
	Grace time.Duration

	mu      sync.Mutex
	failing bool
	since   time.Time
	last    error
}

// Success records a success: the failure streak, if any, ends.
func (w *ErrorWindow) Success() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.failing, w.last = false, nil
}

// Failure records a failure at now with its error. The streak starts at the
// first failure after a success.
func (w *ErrorWindow) Failure(now time.Time, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.failing {
		w.failing, w.since = true, now
	}
	w.last = err
}

// Check returns nil unless failures have lasted, at now, for longer than
// Grace (or there was a failure and Grace is 0). Its error reads e.g.
// "forge errors for 45s (grace 30s): last error: ...".
func (w *ErrorWindow) Check(now time.Time) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.failing {
		return nil
	}
	d := now.Sub(w.since)
	if d < w.Grace || (d == w.Grace && w.Grace > 0) {
		return nil
	}
	if w.last == nil {
		return fmt.Errorf("forge errors for %s (grace %s)", d.Round(time.Second), w.Grace)
	}
	return fmt.Errorf("forge errors for %s (grace %s): last error: %w", d.Round(time.Second), w.Grace, w.last)
}
