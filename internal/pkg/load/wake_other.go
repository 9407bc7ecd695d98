//go:build !linux

package load

import "time"

// wakeTimer is Linux-only (timerfd); elsewhere workers wait on their Go
// timers alone.
type wakeTimer struct{}

func newWakeTimer() *wakeTimer { return nil }

func (t *wakeTimer) sleep(d time.Duration) { time.Sleep(d) }

func (t *wakeTimer) close() {}
