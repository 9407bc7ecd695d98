package report

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	runnerv1 "gitea.dev/actions-proto-go/runner/v1"
	"github.com/sirupsen/logrus"
)

const (
	success   = runnerv1.Result_RESULT_SUCCESS
	failure   = runnerv1.Result_RESULT_FAILURE
	cancelled = runnerv1.Result_RESULT_CANCELLED
	unspec    = runnerv1.Result_RESULT_UNSPECIFIED
)

// syncBuffer is a bytes.Buffer safe for concurrent use, for daemon logs.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func testLogger() (*logrus.Entry, *syncBuffer) {
	buf := &syncBuffer{}
	l := logrus.New()
	l.SetOutput(buf)
	l.SetLevel(logrus.DebugLevel)
	return logrus.NewEntry(l), buf
}

func writeLines(t *testing.T, w io.Writer, ls []string) {
	t.Helper()
	for _, l := range ls {
		if _, err := io.WriteString(w, l+"\n"); err != nil {
			t.Fatalf("Write(%q) = %v, want nil", l, err)
		}
	}
}

// TestLogsAndStepsEndToEnd checks the whole life of a task against a forge
// that never fails: rows in order, step ranges, rows outside steps, the
// no_more request before the final state, and the final state's contents.
func TestLogsAndStepsEndToEnd(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := newFakeForge()
		r := New(f, 7, 3, Options{})
		r.Start(t.Context())
		r.Logf(-1, "setup")
		r.StepStart(0)
		writeLines(t, r.Writer(0), lines("a", 3))
		r.StepEnd(0, success)
		r.StepStart(1)
		w := r.Writer(1)
		writeLines(t, w, lines("b", 2))
		io.WriteString(w, "unterminated")
		r.StepEnd(1, failure)
		r.Logf(-1, "teardown\nsecond line")
		if err := r.Close(failure); err != nil {
			t.Fatalf("Close = %v, want nil", err)
		}

		want := []string{"setup", "a 0", "a 1", "a 2", "b 0", "b 1", "unterminated", "teardown", "second line"}
		if got := f.log(); !slices.Equal(got, want) {
			t.Fatalf("forge log = %q, want %q", got, want)
		}
		if !f.archived {
			t.Fatal("log not archived: no no_more request was accepted")
		}
		// The final UpdateTask comes after the no_more UpdateLog.
		f.mu.Lock()
		calls := slices.Clone(f.calls)
		noMoreAt := f.noMoreAt
		final := f.final
		f.mu.Unlock()
		if i := slices.Index(calls[noMoreAt:], "UpdateTask"); i < 0 {
			t.Fatalf("no UpdateTask after the no_more UpdateLog; calls %v", calls)
		}
		if final == nil {
			t.Fatal("no final state received")
		}
		if final.Result != failure || final.StoppedAt == nil || final.StartedAt == nil || final.Id != 7 {
			t.Fatalf("final state = %v, want result FAILURE with start and stop times for task 7", final)
		}
		type span struct {
			id       int64
			res      runnerv1.Result
			idx, n   int64
			hasTimes bool
			hasStart bool
		}
		var got []span
		for _, s := range final.Steps {
			got = append(got, span{s.Id, s.Result, s.LogIndex, s.LogLength, s.StoppedAt != nil, s.StartedAt != nil})
		}
		wantSteps := []span{
			{0, success, 1, 3, true, true},
			{1, failure, 4, 3, true, true},
			{2, cancelled, 0, 0, false, false}, // never started: cancelled, no times
		}
		if !slices.Equal(got, wantSteps) {
			t.Fatalf("final steps = %+v, want %+v", got, wantSteps)
		}
	})
}

// TestHeartbeat checks that UpdateTask is sent every Interval even when
// nothing changes, with result UNSPECIFIED.
func TestHeartbeat(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := newFakeForge()
		r := New(f, 1, 1, Options{Interval: time.Second})
		r.Start(t.Context())
		synctest.Wait()
		if got := f.count("UpdateTask"); got != 1 {
			t.Fatalf("UpdateTask calls at start = %d, want 1", got)
		}
		time.Sleep(5*time.Second + time.Millisecond)
		synctest.Wait()
		if got := f.count("UpdateTask"); got != 6 {
			t.Fatalf("UpdateTask calls after 5s = %d, want 6 (one per second plus the first)", got)
		}
		st := f.lastState()
		if st.State.Result != unspec || st.State.StartedAt == nil || len(st.State.Steps) != 1 {
			t.Fatalf("heartbeat state = %v, want UNSPECIFIED with started_at and 1 step", st.State)
		}
		// A step change is reported at once, not on the next tick.
		time.Sleep(100 * time.Millisecond)
		r.StepStart(0)
		synctest.Wait()
		st = f.lastState()
		if st.State.Steps[0].StartedAt == nil {
			t.Fatalf("step state right after StepStart = %v, want started", st.State.Steps[0])
		}
		if err := r.Close(success); err != nil {
			t.Fatalf("Close = %v", err)
		}
	})
}

// TestLogLatency checks that a lone row is sent within LogInterval, that a
// full batch goes at once, and that a step change flushes at once.
func TestLogLatency(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := newFakeForge()
		r := New(f, 1, 2, Options{LogInterval: time.Second, BatchRows: 10})
		r.Start(t.Context())
		w := r.Writer(-1)
		writeLines(t, w, []string{"one"})
		time.Sleep(900 * time.Millisecond)
		synctest.Wait()
		if got := f.log(); len(got) != 0 {
			t.Fatalf("rows sent after 0.9s = %q, want none yet (batched)", got)
		}
		time.Sleep(100 * time.Millisecond)
		synctest.Wait()
		if got := f.log(); !slices.Equal(got, []string{"one"}) {
			t.Fatalf("rows sent after 1s = %q, want [one]", got)
		}

		// A full batch does not wait.
		writeLines(t, w, lines("x", 10))
		synctest.Wait()
		if got := len(f.log()); got != 11 {
			t.Fatalf("rows after a full batch = %d, want 11 at once", got)
		}

		// Nor does a step start.
		writeLines(t, w, []string{"before step"})
		r.StepStart(0)
		synctest.Wait()
		if got := f.log(); got[len(got)-1] != "before step" {
			t.Fatalf("last row after StepStart = %q, want %q at once", got[len(got)-1], "before step")
		}

		// Output flowing steadily is sent at least once a second.
		start := time.Now()
		for i := range 30 {
			writeLines(t, w, []string{fmt.Sprint("steady ", i)})
			time.Sleep(100 * time.Millisecond)
			synctest.Wait()
			log := f.log()
			last := log[len(log)-1]
			var n int
			if _, err := fmt.Sscanf(last, "steady %d", &n); err == nil && i-n > 10 {
				t.Fatalf("at %v the forge's newest row is %q while %d was written: more than 1s late", time.Since(start), last, i)
			}
		}
		if err := r.Close(success); err != nil {
			t.Fatalf("Close = %v", err)
		}
	})
}

// TestOutageKeepsEveryRow writes steadily through a 10 s outage (fake
// time) that spans a step change: the forge ends with exactly the rows
// produced, in order, each step's range, and the final state. The same
// promise is kept in real time, through the real client and the daemon, by
// cmd's TestE2EForgeOutageLosesNothing.
func TestOutageKeepsEveryRow(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := newFakeForge()
		log, buf := testLogger()
		r := New(f, 1, 2, Options{Logger: log, BatchRows: 7})
		r.Start(t.Context())
		var want []string
		// Two steps of 150 rows, one every 100 ms; the forge is down from
		// row 50 of the first to row 50 of the second (10 s), so the step
		// change and the first step's end are reported during the outage.
		for s := range 2 {
			r.StepStart(s)
			w := r.Writer(s)
			for i := range 150 {
				if s == 0 && i == 50 {
					f.set(func(f *fakeForge) { f.down = true })
				}
				if s == 1 && i == 50 {
					f.set(func(f *fakeForge) { f.down = false })
				}
				l := fmt.Sprintf("step %d row %d", s, i)
				want = append(want, l)
				writeLines(t, w, []string{l})
				time.Sleep(100 * time.Millisecond)
			}
			r.StepEnd(s, success)
		}
		if err := r.Close(success); err != nil {
			t.Fatalf("Close = %v", err)
		}
		if got := f.log(); !slices.Equal(got, want) {
			t.Fatalf("forge log has %d rows, want the %d produced in order; first diff at %d", len(got), len(want), firstDiff(got, want))
		}
		if f.final == nil || f.final.Result != success {
			t.Fatalf("final state = %v, want SUCCESS", f.final)
		}
		if steps := f.final.GetSteps(); len(steps) != 2 {
			t.Fatalf("final state has %d steps, want 2", len(steps))
		}
		for i, st := range f.final.GetSteps() {
			if st.LogIndex != int64(150*i) || st.LogLength != 150 || st.Result != success {
				t.Fatalf("step %d = %+v, want log_index %d, log_length 150, SUCCESS", i, st, 150*i)
			}
		}
		// Errors are logged once per outage, not once per attempt.
		if n := strings.Count(buf.String(), "sending log rows failed"); n != 1 {
			t.Fatalf("daemon log has %d 'sending log rows failed' lines, want 1:\n%s", n, buf.String())
		}
	})
}

func firstDiff(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestPartialAcks checks resending from ack_index when the forge stores only
// part of each batch: no row is lost or duplicated.
func TestPartialAcks(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := newFakeForge()
		f.maxAccept = 3
		r := New(f, 1, 0, Options{BatchRows: 10})
		r.Start(t.Context())
		want := lines("p", 95)
		writeLines(t, r.Writer(-1), want)
		if err := r.Close(success); err != nil {
			t.Fatalf("Close = %v", err)
		}
		if got := f.log(); !slices.Equal(got, want) {
			t.Fatalf("forge log = %q, want %q", got, want)
		}
	})
}

// TestLogsLost checks the forge losing acknowledged rows: an error is logged
// loudly, placeholder rows fill the hole, and later rows keep their indexes.
func TestLogsLost(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := newFakeForge()
		log, buf := testLogger()
		r := New(f, 1, 0, Options{Logger: log})
		r.Start(t.Context())
		w := r.Writer(-1)
		writeLines(t, w, lines("r", 5))
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if got := len(f.log()); got != 5 {
			t.Fatalf("rows stored = %d, want 5", got)
		}
		f.set(func(f *fakeForge) { f.rows = f.rows[:3] }) // the forge loses rows 3 and 4
		writeLines(t, w, []string{"r 5"})
		if err := r.Close(success); err != nil {
			t.Fatalf("Close = %v", err)
		}
		want := []string{"r 0", "r 1", "r 2", LostRowText, LostRowText, "r 5"}
		if got := f.log(); !slices.Equal(got, want) {
			t.Fatalf("forge log = %q, want %q", got, want)
		}
		if !strings.Contains(buf.String(), "logs lost") || !strings.Contains(buf.String(), "level=error") {
			t.Fatalf("daemon log does not report 'logs lost' as an error:\n%s", buf.String())
		}
	})
}

// TestAckBeyondSent checks that an ack past the rows sent is clamped and
// logged, and no row is skipped.
func TestAckBeyondSent(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := newFakeForge()
		f.ackLie = 100
		log, buf := testLogger()
		r := New(f, 1, 0, Options{Logger: log})
		r.Start(t.Context())
		writeLines(t, r.Writer(-1), lines("q", 3))
		time.Sleep(2 * time.Second)
		f.set(func(f *fakeForge) { f.ackLie = 0 })
		writeLines(t, r.Writer(-1), []string{"q 3"})
		if err := r.Close(success); err != nil {
			t.Fatalf("Close = %v", err)
		}
		if got := f.log(); !slices.Equal(got, lines("q", 4)) {
			t.Fatalf("forge log = %q, want %q", got, lines("q", 4))
		}
		if !strings.Contains(buf.String(), "acknowledged log rows up to") {
			t.Fatalf("daemon log does not mention the bad ack:\n%s", buf.String())
		}
	})
}

// TestServerCancel checks that a non-UNSPECIFIED result in an UpdateTask
// response cancels the job context within one interval, and that Close then
// reports the server's result.
func TestServerCancel(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := newFakeForge()
		r := New(f, 1, 2, Options{Interval: time.Second})
		ctx := r.Start(t.Context())
		r.StepStart(0)
		time.Sleep(1500 * time.Millisecond)
		if ctx.Err() != nil {
			t.Fatal("job context cancelled before the forge stopped the task")
		}
		f.set(func(f *fakeForge) { f.result = cancelled })
		clicked := time.Now()
		select {
		case <-ctx.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("job context not cancelled 5s after the forge stopped the task")
		}
		if d := time.Since(clicked); d > time.Second {
			t.Fatalf("job context cancelled %v after the stop, want ≤ 1 interval", d)
		}
		select {
		case <-r.Cancelled():
		default:
			t.Fatal("Cancelled() not closed")
		}
		if got := r.ServerResult(); got != cancelled {
			t.Fatalf("ServerResult = %v, want CANCELLED", got)
		}
		if r.Context() != ctx {
			t.Fatal("Context() differs from the context returned by Start")
		}
		if err := r.Close(success); err != nil {
			t.Fatalf("Close = %v", err)
		}
		if got := f.lastState().State; got.Result != cancelled || got.Steps[0].Result != cancelled || got.Steps[0].StoppedAt == nil {
			t.Fatalf("final state = %v, want CANCELLED with step 0 CANCELLED and stopped", got)
		}
	})
}

// TestCloseResult checks how Close picks the final result.
func TestCloseResult(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		cancelJob bool
		give      runnerv1.Result
		want      runnerv1.Result
	}{
		{"given result is kept", false, success, success},
		{"unspecified means early termination", false, unspec, failure},
		{"cancelled job context wins", true, success, cancelled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				f := newFakeForge()
				r := New(f, 1, 0, Options{})
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				jobCtx := r.Start(ctx)
				if tt.cancelJob {
					cancel()
					<-jobCtx.Done()
				}
				if err := r.Close(tt.give); err != nil {
					t.Fatalf("Close = %v", err)
				}
				if got := f.final.GetResult(); got != tt.want {
					t.Fatalf("Close(%v) sent result %v, want %v", tt.give, got, tt.want)
				}
				if jobCtx.Err() == nil {
					t.Fatal("job context still live after Close")
				}
			})
		})
	}
}

// TestCloseSendsAtLeastOneRow checks the sentinel row and idempotent Close.
func TestCloseSendsAtLeastOneRow(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := newFakeForge()
		r := New(f, 1, 0, Options{})
		r.Start(t.Context())
		writeLines(t, r.Writer(-1), []string{"only"})
		time.Sleep(2 * time.Second) // everything acknowledged before Close
		if err := r.Close(success); err != nil {
			t.Fatalf("Close = %v", err)
		}
		if err := r.Close(failure); err != nil {
			t.Fatalf("second Close = %v, want nil", err)
		}
		f.mu.Lock()
		last := f.logReqs[len(f.logReqs)-1]
		nFinal := 0
		for _, s := range f.stateReqs {
			if s.State.Result != unspec {
				nFinal++
			}
		}
		f.mu.Unlock()
		if !last.NoMore || len(last.Rows) == 0 {
			t.Fatalf("last UpdateLog = %v, want no_more with at least one row", last)
		}
		f.mu.Lock()
		nRows := len(f.rows)
		f.mu.Unlock()
		if got := f.log(); !slices.Equal(got, []string{"only"}) || nRows != 2 {
			t.Fatalf("forge log = %q (%d rows), want [only] plus an empty row", got, nRows)
		}
		if nFinal != 1 || f.final.Result != success {
			t.Fatalf("final UpdateTasks = %d with %v, want 1 with SUCCESS", nFinal, f.final.GetResult())
		}
		// Writes after Close are discarded without error.
		if n, err := io.WriteString(r.Writer(-1), "late\n"); n != 5 || err != nil {
			t.Fatalf("Write after Close = %d, %v, want 5, nil", n, err)
		}
	})
}

// TestCloseRetriesAndAlreadyExists checks Close's retries on failures, and
// that AlreadyExists (log archived) ends the log phase.
func TestCloseRetriesAndAlreadyExists(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := newFakeForge()
		f.failLogs, f.failStates = 4, 4
		r := New(f, 1, 0, Options{})
		writeLines(t, r.Writer(-1), lines("z", 3)) // Close without Start works too
		if err := r.Close(success); err != nil {
			t.Fatalf("Close = %v", err)
		}
		if got := f.log(); !slices.Equal(got, lines("z", 3)) {
			t.Fatalf("forge log = %q", got)
		}
		if f.final.GetResult() != success {
			t.Fatalf("final result = %v, want SUCCESS", f.final.GetResult())
		}

		f2 := newFakeForge()
		f2.archived = true
		r2 := New(f2, 2, 0, Options{})
		writeLines(t, r2.Writer(-1), lines("y", 3))
		if err := r2.Close(success); err != nil {
			t.Fatalf("Close with an archived log = %v, want nil", err)
		}
		if f2.final.GetResult() != success {
			t.Fatalf("final result after AlreadyExists = %v, want SUCCESS", f2.final.GetResult())
		}
	})
}

// TestCloseForgeDown checks that Close gives up after CloseTimeout and says
// what was not delivered.
func TestCloseForgeDown(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := newFakeForge()
		f.down = true
		r := New(f, 9, 0, Options{CloseTimeout: 5 * time.Second})
		r.Start(t.Context())
		writeLines(t, r.Writer(-1), lines("d", 4))
		start := time.Now()
		err := r.Close(success)
		if err == nil {
			t.Fatal("Close with the forge down = nil, want an error")
		}
		if d := time.Since(start); d < 5*time.Second || d > 6*time.Second {
			t.Fatalf("Close took %v, want about CloseTimeout (5s)", d)
		}
		for _, s := range []string{"task 9", "4 log rows", "final state (result RESULT_SUCCESS)"} {
			if !strings.Contains(err.Error(), s) {
				t.Fatalf("Close error %q does not mention %q", err, s)
			}
		}
	})
}

// TestOutputs checks that outputs are resent until acknowledged, then not
// sent again, and that oversize ones are dropped with a warning row.
func TestOutputs(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := newFakeForge()
		f.failStates = 1 // the first attempt with outputs fails
		r := New(f, 1, 0, Options{Masks: []string{"tok-secret"}})
		r.SetOutputs(map[string]string{
			"p99_ms":                 "12",
			"leak":                   "x tok-secret y",
			strings.Repeat("k", 256): "v",
			"big":                    strings.Repeat("v", 1<<20+1),
		})
		r.Start(t.Context())
		synctest.Wait()
		time.Sleep(1100 * time.Millisecond)
		synctest.Wait()
		time.Sleep(1100 * time.Millisecond)
		synctest.Wait()
		f.mu.Lock()
		var withOutputs int
		for _, s := range f.stateReqs {
			if len(s.Outputs) > 0 {
				withOutputs++
				if len(s.Outputs) != 1 || s.Outputs["p99_ms"] != "12" {
					t.Errorf("UpdateTask outputs = %v, want only p99_ms=12", s.Outputs)
				}
			}
		}
		n := len(f.stateReqs)
		f.mu.Unlock()
		if withOutputs != 1 || n < 2 {
			t.Fatalf("%d of %d UpdateTasks carried outputs, want exactly 1 (until acknowledged)", withOutputs, n)
		}
		if err := r.Close(success); err != nil {
			t.Fatalf("Close = %v", err)
		}
		log := strings.Join(f.log(), "\n")
		if strings.Count(log, "was dropped") != 3 || !strings.Contains(log, "contains a secret") {
			t.Fatalf("log = %q, want three 'was dropped' warnings, one for a secret", log)
		}
	})
}

// TestMasking checks masks in every form: split across writes, multi-line,
// added at runtime, and too short to be applied.
func TestMasking(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := newFakeForge()
		r := New(f, 1, 1, Options{Masks: []string{"hunter2", "line-one\nline-two\n", "ab", ""}})
		r.Start(t.Context())
		w := r.Writer(0)
		io.WriteString(w, "pass=hun")
		io.WriteString(w, "ter2 end\n")
		io.WriteString(w, "cert:\nline-one\nline-two\n")
		r.AddMask("runtime-secret")
		io.WriteString(w, "later runtime-sec")
		io.WriteString(w, "ret and ab\r\n")
		io.WriteString(w, "bad \xff utf8\n")
		io.WriteString(w, "partial hunter2")
		r.Logf(0, "logf %s", "hunter2")
		r.StepEnd(0, success)
		if err := r.Close(success); err != nil {
			t.Fatalf("Close = %v", err)
		}
		want := []string{"pass=*** end", "cert:", "***", "***", "later *** and ab", "bad \uFFFD utf8", "logf ***", "partial ***"}
		if got := f.log(); !slices.Equal(got, want) {
			t.Fatalf("forge log = %q, want %q", got, want)
		}
	})
}

// TestLongLineWithSecret checks that an endless line is cut into rows
// without ever cutting through a secret.
func TestLongLineWithSecret(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := newFakeForge()
		const secret = "s3cr3t-value"
		r := New(f, 1, 0, Options{Masks: []string{secret}})
		r.Start(t.Context())
		w := r.Writer(-1)
		// Place the secret so that it straddles the forced cut point.
		pad := strings.Repeat("x", maxRowBytes-4)
		io.WriteString(w, pad)
		for i := 0; i < 20; i++ {
			io.WriteString(w, secret[:5])
			io.WriteString(w, secret[5:]+strings.Repeat("y", 3000))
		}
		io.WriteString(w, "\n")
		if err := r.Close(success); err != nil {
			t.Fatalf("Close = %v", err)
		}
		all := strings.Join(f.log(), "")
		if strings.Contains(all, secret) || strings.Contains(all, secret[:5]+"\n") {
			t.Fatal("the secret reached the forge")
		}
		if n := strings.Count(all, "***"); n != 20 {
			t.Fatalf("masks in the log = %d, want 20", n)
		}
		for _, row := range f.log() {
			if len(row) > maxRowBytes {
				t.Fatalf("row of %d bytes, want ≤ %d", len(row), maxRowBytes)
			}
		}
	})
}

// TestSpillKeepsEveryRow checks that with a tiny memory bound and the forge
// down, rows are spilled to disk and all come back in order.
func TestSpillKeepsEveryRow(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		f := newFakeForge()
		f.down = true
		r := New(f, 1, 1, Options{MemRows: 8, BatchRows: 5, SpillDir: dir})
		r.Start(t.Context())
		r.StepStart(0)
		w := r.Writer(0)
		want := lines("spill", 500)
		for i, l := range want {
			writeLines(t, w, []string{l})
			if i%50 == 0 {
				time.Sleep(300 * time.Millisecond)
			}
		}
		r.mu.Lock()
		disk, mem := r.store.diskRows, len(r.store.mem)
		r.mu.Unlock()
		if disk == 0 || mem > 8 {
			t.Fatalf("with MemRows 8: %d rows on disk, %d in memory; want rows spilled and ≤ 8 in memory", disk, mem)
		}
		f.set(func(f *fakeForge) { f.down = false })
		time.Sleep(5 * time.Second)
		r.StepEnd(0, success)
		if err := r.Close(success); err != nil {
			t.Fatalf("Close = %v", err)
		}
		if got := f.log(); !slices.Equal(got, want) {
			t.Fatalf("forge log has %d rows, want %d in order; first diff at %d", len(got), len(want), firstDiff(got, want))
		}
		if st := f.final.Steps[0]; st.LogIndex != 0 || st.LogLength != 500 {
			t.Fatalf("step 0 = index %d length %d, want 0 and 500", st.LogIndex, st.LogLength)
		}
		ents, _ := os.ReadDir(dir)
		if len(ents) != 0 {
			t.Fatalf("spill dir holds %d files after Close, want 0", len(ents))
		}
	})
}

// TestObserver checks the metrics hooks.
func TestObserver(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := newFakeForge()
		f.failLogs = 1
		obs := &countObserver{}
		r := New(f, 1, 0, Options{Observer: obs})
		r.Start(t.Context())
		writeLines(t, r.Writer(-1), lines("o", 3))
		time.Sleep(3 * time.Second)
		if err := r.Close(success); err != nil {
			t.Fatalf("Close = %v", err)
		}
		obs.mu.Lock()
		defer obs.mu.Unlock()
		if obs.logOK == 0 || obs.logFail != 1 || obs.stateOK < 3 || obs.maxRows != 3 || obs.lastRows != 0 {
			t.Fatalf("observer = %+v, want logs ok>0 fail=1, states ok≥3, buffer max 3 then 0", obs)
		}
	})
}

type countObserver struct {
	mu                                sync.Mutex
	logOK, logFail, stateOK, stateErr int
	maxRows, lastRows                 int
}

var _ Observer = (*countObserver)(nil)

func (o *countObserver) LogSent(ok bool, _ time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if ok {
		o.logOK++
	} else {
		o.logFail++
	}
}

func (o *countObserver) StateSent(ok bool, _ time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if ok {
		o.stateOK++
	} else {
		o.stateErr++
	}
}

func (o *countObserver) BufferRows(n int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.maxRows = max(o.maxRows, n)
	o.lastRows = n
}

// TestWriterNeverBlocks checks that producers keep going while every RPC
// hangs until its timeout.
func TestWriterNeverBlocks(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := &hangingClient{}
		r := New(c, 1, 0, Options{RPCTimeout: time.Hour, CloseTimeout: 2 * time.Second})
		r.Start(t.Context())
		start := time.Now()
		w := r.Writer(-1)
		writeLines(t, w, lines("h", 10000))
		if d := time.Since(start); d != 0 {
			t.Fatalf("writing 10000 rows took %v of bubble time with a hung forge, want 0", d)
		}
		if err := r.Close(success); err == nil {
			t.Fatal("Close with a hung forge = nil, want an error")
		}
	})
}

// TestStepRanges checks log_index/log_length when rows arrive before
// StepStart, when a step has no rows, and when rows come after StepEnd.
func TestStepRanges(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := newFakeForge()
		r := New(f, 1, 3, Options{})
		r.Start(t.Context())
		r.Logf(-1, "setup")
		r.Logf(0, "early")   // row 1, before StepStart(0)
		r.StepStart(0)       // keeps log_index 1
		r.Logf(0, "running") // row 2
		r.StepEnd(0, success)
		r.Logf(0, "late") // row 3: after StepEnd, belongs to no step
		r.StepStart(1)    // no rows: log_index 4, log_length 0
		r.StepEnd(1, runnerv1.Result_RESULT_SKIPPED)
		r.StepStart(2)
		r.Logf(2, "two")
		r.Logf(-1, "between")
		r.Logf(2, "two again")
		r.StepEnd(2, success)
		if err := r.Close(success); err != nil {
			t.Fatalf("Close = %v", err)
		}
		got := [][2]int64{}
		for _, s := range f.final.Steps {
			got = append(got, [2]int64{s.LogIndex, s.LogLength})
		}
		want := [][2]int64{{1, 2}, {4, 0}, {4, 3}}
		if !slices.Equal(got, want) {
			t.Fatalf("step (log_index, log_length) = %v, want %v", got, want)
		}
		if f.final.Steps[1].Result != runnerv1.Result_RESULT_SKIPPED {
			t.Fatalf("step 1 result = %v, want SKIPPED", f.final.Steps[1].Result)
		}
	})
}

// TestFullBufferIsBounded: while the forge takes no rows, a spill file at
// its cap (or a disk that refuses writes) lets memory grow to twice its
// bounds and no further; later rows are dropped, and a row says how many.
func TestFullBufferIsBounded(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name       string
		dir        func(t *testing.T) string
		spillBytes int64
		logged     string
	}{
		{"unwritable SpillDir", func(t *testing.T) string { return t.TempDir() + "/missing" }, 0, "SpillDir"},
		{"spill file at its cap", func(t *testing.T) string { return t.TempDir() }, 200, "cap"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				f := newFakeForge()
				f.down = true
				log, buf := testLogger()
				r := New(f, 1, 0, Options{MemRows: 4, SpillDir: tt.dir(t), SpillBytes: tt.spillBytes, Logger: log})
				r.Start(t.Context())
				want := lines("m", 100)
				writeLines(t, r.Writer(-1), want)
				r.mu.Lock()
				mem, disk := len(r.store.mem), r.store.writeOff
				r.mu.Unlock()
				if mem > 8 || (tt.spillBytes > 0 && disk > tt.spillBytes) {
					t.Fatalf("%d rows in memory (want ≤ 8), %d bytes on disk (cap %d)", mem, disk, tt.spillBytes)
				}
				f.set(func(f *fakeForge) { f.down = false })
				if err := r.Close(success); err != nil {
					t.Fatalf("Close = %v", err)
				}
				got := f.log()
				kept := len(got) - 1
				if kept < 8 || kept >= len(want) || !slices.Equal(got[:kept], want[:kept]) {
					t.Fatalf("forge log = %q, want the first rows in order, then the dropped-rows row", got)
				}
				if marker := fmt.Sprintf(DroppedRowsText, len(want)-kept); got[kept] != marker {
					t.Fatalf("last row = %q, want %q", got[kept], marker)
				}
				if n := strings.Count(buf.String(), "log buffer of task 1 is full"); n != 1 {
					t.Fatalf("daemon log reports the full buffer %d times, want 1:\n%s", n, buf.String())
				}
				if !strings.Contains(buf.String(), tt.logged) {
					t.Fatalf("daemon log does not name the cause (%q):\n%s", tt.logged, buf.String())
				}
			})
		})
	}
}

// TestConcurrentWritersFlappingForge has several producers write at once
// while the forge keeps failing and recovering: every row arrives exactly
// once, and each producer's rows keep their order.
func TestConcurrentWritersFlappingForge(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := newFakeForge()
		r := New(f, 1, 4, Options{BatchRows: 16, MemRows: 32, SpillDir: t.TempDir()})
		r.Start(t.Context())
		const producers, perProducer = 8, 300
		var wg sync.WaitGroup
		for p := range producers {
			wg.Go(func() {
				w := r.Writer(p % 4)
				for i := range perProducer {
					fmt.Fprintf(w, "p%d ", p)
					fmt.Fprintf(w, "%d\n", i)
					if i%25 == 0 {
						time.Sleep(time.Duration(p+1) * 37 * time.Millisecond)
					}
				}
			})
		}
		stop := make(chan struct{})
		var flap sync.WaitGroup
		flap.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				case <-time.After(170 * time.Millisecond):
				}
				f.set(func(f *fakeForge) {
					f.failLogs = i % 4
					f.failStates = i % 3
					f.down = i%7 == 3
				})
			}
		})
		wg.Wait()
		close(stop)
		flap.Wait()
		f.set(func(f *fakeForge) { f.down, f.failLogs, f.failStates = false, 0, 0 })
		if err := r.Close(success); err != nil {
			t.Fatalf("Close = %v", err)
		}
		next := make([]int, producers)
		got := f.log()
		for _, row := range got {
			var p, i int
			if _, err := fmt.Sscanf(row, "p%d %d", &p, &i); err != nil {
				t.Fatalf("unexpected row %q", row)
			}
			if i != next[p] {
				t.Fatalf("producer %d: row %d arrived when %d was expected (lost, duplicated or reordered)", p, i, next[p])
			}
			next[p]++
		}
		if len(got) != producers*perProducer {
			t.Fatalf("forge has %d rows, want %d", len(got), producers*perProducer)
		}
	})
}

// TestEndlessLineOfAPeriodicSecret checks the forced cut of an endless line
// made only of overlapping copies of a secret: the line buffer stays bounded
// and no row reveals the secret.
func TestEndlessLineOfAPeriodicSecret(t *testing.T) {
	t.Parallel()
	r := New(newFakeForge(), 1, 0, Options{Masks: []string{"aaa"}})
	w := r.Writer(-1).(*lineWriter)
	chunk := strings.Repeat("a", 1000)
	for range 300 {
		io.WriteString(w, chunk)
		w.mu.Lock()
		n := len(w.buf)
		w.mu.Unlock()
		if n > 2*maxRowBytes {
			t.Fatalf("unfinished line buffer holds %d bytes, want it bounded", n)
		}
	}
	w.flush()
	rows := storedRows(t, r)
	if len(rows) < 4 {
		t.Fatalf("300000 bytes without a newline gave %d rows, want the line cut", len(rows))
	}
	// Back-to-back copies are one run of the secret: each row is one mask.
	for _, row := range rows {
		if row != "***" {
			t.Fatalf("row %.40q…, want only ***", row)
		}
	}
}

// TestArchivedMidJob checks a forge that archives the log while the job
// still runs (its reaper failed the task): the Reporter stops sending and
// buffering rows, logs it once, and Close still sends the final state.
func TestArchivedMidJob(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := newFakeForge()
		log, buf := testLogger()
		r := New(f, 1, 0, Options{Logger: log})
		r.Start(t.Context())
		w := r.Writer(-1)
		writeLines(t, w, []string{"kept"})
		time.Sleep(2 * time.Second)
		f.set(func(f *fakeForge) { f.archived = true })
		writeLines(t, w, lines("late", 50))
		time.Sleep(5 * time.Second)
		writeLines(t, w, lines("later", 50))
		r.mu.Lock()
		held := r.store.end - r.store.base
		r.mu.Unlock()
		if held != 0 {
			t.Fatalf("Reporter holds %d rows after the forge archived the log, want 0", held)
		}
		logCalls := f.count("UpdateLog")
		time.Sleep(10 * time.Second)
		if n := f.count("UpdateLog"); n != logCalls {
			t.Fatalf("UpdateLog calls went from %d to %d after the log was archived, want none", logCalls, n)
		}
		if err := r.Close(success); err != nil {
			t.Fatalf("Close = %v", err)
		}
		if got := f.log(); !slices.Equal(got, []string{"kept"}) {
			t.Fatalf("forge log = %q, want [kept]", got)
		}
		if f.final.GetResult() != success {
			t.Fatalf("final result = %v, want SUCCESS", f.final.GetResult())
		}
		if n := strings.Count(buf.String(), "has archived the log"); n != 1 {
			t.Fatalf("daemon log reports the archive %d times, want 1:\n%s", n, buf.String())
		}
		if !strings.Contains(buf.String(), "50 log rows written after the forge archived") {
			t.Fatalf("daemon log does not count the discarded rows:\n%s", buf.String())
		}
	})
}

// TestLostAckIsProbedNotResent: when an UpdateLog's answer is lost (it
// timed out after the forge stored its rows), the reporter asks for the
// ack with an empty UpdateLog before sending more, rather than resending
// the rows: Gitea does not serialise one task's UpdateLog calls, so a resend
// racing the first call stores the rows twice.
func TestLostAckIsProbedNotResent(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := newFakeForge()
		f.lostAcks = 1
		r := New(f, 1, 0, Options{})
		r.Start(t.Context())
		want := lines("row", 5)
		writeLines(t, r.Writer(-1), want)
		time.Sleep(5 * time.Second)
		writeLines(t, r.Writer(-1), []string{"after"})
		if err := r.Close(success); err != nil {
			t.Fatalf("Close = %v", err)
		}
		if got := f.log(); !slices.Equal(got, append(want, "after")) {
			t.Fatalf("forge log = %q", got)
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		if len(f.logReqs) < 3 || len(f.logReqs[0].Rows) != 5 || len(f.logReqs[1].Rows) != 0 || f.logReqs[1].Index != 0 {
			t.Fatalf("UpdateLog requests: want the 5 rows, then an empty probe at 0; got %d requests, the second with %d rows at %d",
				len(f.logReqs), len(f.logReqs[1].Rows), f.logReqs[1].Index)
		}
		for i, req := range f.logReqs[2:] {
			if req.Index < 5 {
				t.Errorf("request %d resent rows from %d, below the probed ack 5", i+2, req.Index)
			}
		}
	})
}
