package report

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"connectrpc.com/connect"
	runnerv1 "gitea.dev/actions-proto-go/runner/v1"
)

// slowForge is fakeForge answering after latency, as a busy Gitea does
// (commit statuses, webhooks), counting the calls in flight and the calls
// the runner abandoned (their context ended before the answer).
type slowForge struct {
	*fakeForge
	mu        sync.Mutex
	latency   time.Duration
	inFlight  map[string]int
	abandoned map[string]int
}

func newSlowForge() *slowForge {
	return &slowForge{fakeForge: newFakeForge(), inFlight: map[string]int{}, abandoned: map[string]int{}}
}

// wait holds a call of method for the latency; false if ctx ended first.
func (f *slowForge) wait(ctx context.Context, method string) bool {
	f.mu.Lock()
	d := f.latency
	f.inFlight[method]++
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.inFlight[method]--
		f.mu.Unlock()
	}()
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		f.mu.Lock()
		f.abandoned[method]++
		f.mu.Unlock()
		return false
	}
}

func (f *slowForge) UpdateLog(ctx context.Context, req *connect.Request[runnerv1.UpdateLogRequest]) (*connect.Response[runnerv1.UpdateLogResponse], error) {
	if !f.wait(ctx, "UpdateLog") {
		return nil, connect.NewError(connect.CodeCanceled, ctx.Err())
	}
	return f.fakeForge.UpdateLog(ctx, req)
}

func (f *slowForge) UpdateTask(ctx context.Context, req *connect.Request[runnerv1.UpdateTaskRequest]) (*connect.Response[runnerv1.UpdateTaskResponse], error) {
	if !f.wait(ctx, "UpdateTask") {
		return nil, connect.NewError(connect.CodeCanceled, ctx.Err())
	}
	return f.fakeForge.UpdateTask(ctx, req)
}

func (f *slowForge) stat(m map[string]int, method string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return m[method]
}

// failObserver counts failed report calls.
type failObserver struct{ fails atomic.Int64 }

func (o *failObserver) LogSent(ok bool, _ time.Duration) {
	if !ok {
		o.fails.Add(1)
	}
}

func (o *failObserver) StateSent(ok bool, _ time.Duration) {
	if !ok {
		o.fails.Add(1)
	}
}

func (o *failObserver) BufferRows(int) {}

// TestCloseAbortsNoCall: a normal job end must not abort the heartbeat or
// the UpdateLog the loops have in flight; Gitea logs such calls as "context
// canceled" and may abandon the work it began for them. Once the steps are
// reported, the forge takes 2 s per call, and Close is called while a
// heartbeat and an UpdateLog are both in flight. (Fake time; the daemon's
// TestE2EJobEndAbortsNoReportCall keeps the promise against the real
// client and forge.)
func TestCloseAbortsNoCall(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := newSlowForge()
		obs := &failObserver{}
		r := New(f, 7, 2, Options{Observer: obs})
		r.Start(t.Context())
		for i := range 2 {
			r.StepStart(i)
			r.Logf(i, "step %d", i)
			r.StepEnd(i, success)
		}
		synctest.Wait()
		f.mu.Lock()
		f.latency = 2 * time.Second
		f.mu.Unlock()
		r.Logf(-1, "after the steps") // an UpdateLog within a second, next to the 1 s heartbeat
		start := time.Now()
		for f.stat(f.inFlight, "UpdateTask") == 0 || f.stat(f.inFlight, "UpdateLog") == 0 {
			if time.Since(start) > time.Minute {
				t.Fatal("no heartbeat and UpdateLog in flight together within a minute")
			}
			time.Sleep(5 * time.Millisecond)
		}
		if err := r.Close(success); err != nil {
			t.Fatalf("Close() = %v", err)
		}
		if f.final == nil || f.final.Result != success {
			t.Fatalf("final state = %v, want SUCCESS", f.final)
		}
		for _, m := range []string{"UpdateTask", "UpdateLog"} {
			if n := f.stat(f.abandoned, m); n != 0 {
				t.Errorf("%d %s calls were aborted at the job end, want 0", n, m)
			}
		}
		// And so client_errors_total counts nothing on a healthy forge.
		if n := obs.fails.Load(); n != 0 {
			t.Errorf("the observer saw %d failed report calls, want 0", n)
		}
	})
}
