package load

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestRunTrapsPanics: a requester or a callback that panics on one of the
// engine's goroutines stops the run and comes back from Run as an error
// with the panic and its stack; the test process (the daemon) lives on.
func TestRunTrapsPanics(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	panicky := RequesterFunc(func(context.Context) error {
		if calls.Add(1) == 5 {
			i := func() int { return 3 }()
			_ = []int{1}[i] // a real runtime panic
		}
		return nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := Run(ctx, Options{Requester: panicky, Concurrency: 4, Duration: time.Minute})
	pe := Panic(err)
	if pe == nil || res != nil {
		t.Fatalf("Run(panicking requester) = %v, %v; want a panic error", res, err)
	}
	if !strings.Contains(err.Error(), "index out of range [3] with length 1") || !strings.Contains(string(pe.Stack), "guard_test.go") {
		t.Fatalf("error %q, stack\n%s\nwant the panic value and its frame", err, pe.Stack)
	}
	if ctx.Err() != nil {
		t.Fatal("the run went on until the test's deadline instead of stopping at the panic")
	}

	ok := RequesterFunc(func(context.Context) error { return nil })
	_, err = Run(ctx, Options{Requester: ok, Concurrency: 1, Rate: 100, Duration: time.Minute,
		ProgressInterval: time.Millisecond, Progress: func(Progress) { panic("progress callback") }})
	if Panic(err) == nil || !strings.Contains(err.Error(), "progress callback") {
		t.Fatalf("Run(panicking Progress) = %v, want the panic", err)
	}
}
