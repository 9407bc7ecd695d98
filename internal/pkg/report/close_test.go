package report

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"connectrpc.com/connect"
	runnerv1 "gitea.dev/actions-proto-go/runner/v1"
)

// The tests in this file cover the ways out of Close's phases that the
// tests of whole sessions do not reach: a log the forge refuses for good, a
// forge that answers but takes no row, and an Outbox that cannot keep.

// called records a call of method that a wrapper of f answers itself.
func (f *fakeForge) called(method string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, method)
}

// refusingLogForge answers every UpdateLog with PermissionDenied, an error
// no retry can mend; UpdateTask works.
type refusingLogForge struct{ *fakeForge }

func (f refusingLogForge) UpdateLog(context.Context, *connect.Request[runnerv1.UpdateLogRequest]) (*connect.Response[runnerv1.UpdateLogResponse], error) {
	f.called("UpdateLog")
	return nil, connect.NewError(connect.CodePermissionDenied, errors.New("not your task"))
}

// stuckLogForge answers every UpdateLog without an error but takes no row:
// its ack stays at 0.
type stuckLogForge struct{ *fakeForge }

func (f stuckLogForge) UpdateLog(context.Context, *connect.Request[runnerv1.UpdateLogRequest]) (*connect.Response[runnerv1.UpdateLogResponse], error) {
	f.called("UpdateLog")
	return connect.NewResponse(&runnerv1.UpdateLogResponse{AckIndex: 0}), nil
}

// TestClosePermanentLogErrorStillSendsTheState: when the forge refuses the
// log for good, Close stops sending it at once (no backoff until
// CloseTimeout), still sends the final state, keeps nothing in the Outbox
// (it would be refused again) and says which rows were lost and why.
func TestClosePermanentLogErrorStillSendsTheState(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ob, err := OpenOutbox(t.TempDir(), nil)
		if err != nil {
			t.Fatal(err)
		}
		f := refusingLogForge{newFakeForge()}
		r := New(f, 4, 0, Options{CloseTimeout: 5 * time.Second, Outbox: ob})
		writeLines(t, r.Writer(-1), lines("p", 3))
		start := time.Now()
		err = r.Close(success)
		if d := time.Since(start); d != 0 {
			t.Errorf("Close took %v of fake time, want no wait after a permanent error", d)
		}
		if err == nil {
			t.Fatal("Close with the log refused = nil, want an error")
		}
		for _, s := range []string{"task 4", "3 log rows (from row 0) were not acknowledged", "not your task"} {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("Close error %q does not mention %q", err, s)
			}
		}
		if strings.Contains(err.Error(), "final state") {
			t.Errorf("Close error %q says the state was not delivered; it was", err)
		}
		if n := f.count("UpdateLog"); n != 1 {
			t.Errorf("UpdateLog calls = %d, want 1 (no retry after PermissionDenied)", n)
		}
		if f.final.GetResult() != success {
			t.Errorf("final result = %v, want SUCCESS", f.final.GetResult())
		}
		if got := ob.Pending(); len(got) != 0 {
			t.Errorf("Outbox holds %v, want nothing: the forge refuses the log for good", got)
		}
	})
}

// TestCloseGivesUpOnALogThatMakesNoProgress: a forge that answers every
// UpdateLog but never takes a row is retried with backoff until
// CloseTimeout; the error then names the rows and the deadline, and the
// final state is still sent.
func TestCloseGivesUpOnALogThatMakesNoProgress(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := stuckLogForge{newFakeForge()}
		r := New(f, 5, 0, Options{CloseTimeout: 5 * time.Second})
		writeLines(t, r.Writer(-1), lines("s", 2))
		start := time.Now()
		err := r.Close(failure)
		if d := time.Since(start); d != 5*time.Second {
			t.Errorf("Close took %v, want CloseTimeout (5s)", d)
		}
		if err == nil || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Close = %v, want an error wrapping context.DeadlineExceeded", err)
		}
		if !strings.Contains(err.Error(), "2 log rows (from row 0) were not acknowledged") {
			t.Errorf("Close error %q does not name the unacknowledged rows", err)
		}
		if n := f.count("UpdateLog"); n < 3 {
			t.Errorf("UpdateLog calls = %d, want retries until CloseTimeout", n)
		}
		if f.final.GetResult() != failure {
			t.Errorf("final result = %v, want FAILURE", f.final.GetResult())
		}
	})
}

// TestCloseOutboxThatCannotKeep: when the forge is down and the Outbox
// cannot write either, Close logs that and returns the delivery error,
// which counts the rows the forge did not take (not the rows left after
// the failed attempt to keep them).
func TestCloseOutboxThatCannotKeep(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		ob, err := OpenOutbox(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		log, buf := testLogger()
		f := newFakeForge()
		f.down = true
		r := New(f, 6, 0, Options{CloseTimeout: time.Second, Outbox: ob, Logger: log})
		writeLines(t, r.Writer(-1), lines("k", 2))
		err = r.Close(success)
		if err == nil {
			t.Fatal("Close with the forge down and no Outbox space = nil, want the delivery error")
		}
		for _, s := range []string{"2 log rows (from row 0)", "final state (result RESULT_SUCCESS)"} {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("Close error %q does not mention %q", err, s)
			}
		}
		if !strings.Contains(buf.String(), "could not be kept on disk either") {
			t.Errorf("the daemon log does not say the Outbox failed:\n%s", buf.String())
		}
	})
}
