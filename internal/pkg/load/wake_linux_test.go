package load

import (
	"os"
	"runtime"
	"testing"
	"time"
)

// TestWakeTimerNeverEarly: the timerfd wait lasts at least what was asked,
// for waits below and above the netpoller's millisecond.
func TestWakeTimerNeverEarly(t *testing.T) {
	t.Parallel()
	w := newWakeTimer()
	if w == nil {
		t.Fatal("newWakeTimer = nil: no timerfd on this Linux host")
	}
	defer w.close()
	for _, d := range []time.Duration{-time.Millisecond, 0, 50 * time.Microsecond, 300 * time.Microsecond, 1500 * time.Microsecond} {
		for range 20 {
			start := time.Now()
			w.sleep(d)
			if took := time.Since(start); took < d {
				t.Fatalf("sleep(%v) returned after %v", d, took)
			}
		}
	}
}

// TestPreciseWaitsWithOneP: the precise wait no longer needs a second P
// (the kernel sleep it replaced held its P, so it was off with
// GOMAXPROCS=1, which is how bench/run.sh pins the generator), every
// arrival is sent, none early, and the workers' timerfds are closed when
// the run ends. Not parallel: it sets GOMAXPROCS and preciseWindow.
func TestPreciseWaitsWithOneP(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	preciseWindow = time.Millisecond
	defer func() { preciseWindow = 0 }()
	if e := newEngine(&Options{Requester: noop{}, Rate: 1}); e.precise != time.Millisecond {
		t.Fatalf("engine precise window with GOMAXPROCS=1 = %v, want 1ms", e.precise)
	}
	fds := func() int {
		ents, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Fatal(err)
		}
		return len(ents)
	}
	// The first run may open descriptors that stay for the process's life
	// (the runtime's poller, when no test before this one used it, as when
	// the test runs alone without -test.timeout): count from after it.
	opts := Options{Requester: noop{}, Rate: 2000, Duration: 250 * time.Millisecond, Concurrency: 8, Grace: 30 * time.Second}
	if _, err := Run(t.Context(), opts); err != nil {
		t.Fatal(err)
	}
	before := fds()
	res, err := Run(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != 500 || res.Dropped != 0 {
		t.Errorf("sent %d, dropped %d; want 500, 0", res.Requests, res.Dropped)
	}
	if after := fds(); after != before {
		t.Errorf("open descriptors %d after the run, %d before: a worker's timerfd leaked", after, before)
	}
}
