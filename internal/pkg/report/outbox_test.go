package report

import (
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	runnerv1 "gitea.dev/actions-proto-go/runner/v1"
)

// TestOutboxKeepsWhatCloseCouldNotDeliver: an outage that covers a job's
// end for longer than CloseTimeout loses nothing. Close keeps the rows the
// forge had not acknowledged and the final result on disk; a new Outbox on
// the same directory (a restarted daemon) delivers them, in order, once the
// forge answers, and then nothing is left.
func TestOutboxKeepsWhatCloseCouldNotDeliver(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		log, buf := testLogger()
		ob, err := OpenOutbox(dir, log)
		if err != nil {
			t.Fatal(err)
		}
		f := newFakeForge()
		r := New(f, 7, 1, Options{CloseTimeout: 5 * time.Second, Outbox: ob, Logger: log, MemRows: 8, SpillDir: t.TempDir()})
		r.Start(t.Context())
		r.StepStart(0)
		want := lines("row", 40)
		writeLines(t, r.Writer(0), want[:10])
		time.Sleep(3 * time.Second) // the first rows reach the forge
		f.set(func(f *fakeForge) { f.down = true })
		writeLines(t, r.Writer(0), want[10:])
		r.StepEnd(0, success)
		r.SetOutputs(map[string]string{"p99_ms": "12"})
		if err := r.Close(success); err != nil {
			t.Fatalf("Close during an outage with an Outbox = %v, want nil", err)
		}
		if !strings.Contains(buf.String(), "kept on disk and delivered when it answers") {
			t.Errorf("the daemon log does not say the report was kept:\n%s", buf.String())
		}
		if got := ob.Pending(); !slices.Equal(got, []int64{7}) {
			t.Fatalf("Pending() = %v, want [7]", got)
		}

		// A restarted daemon finds it and says so.
		log2, buf2 := testLogger()
		ob2, err := OpenOutbox(dir, log2)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(buf2.String(), "1 finished tasks wait for the forge") || !strings.Contains(buf2.String(), "tasks 7") {
			t.Errorf("a restarted outbox does not log what is pending:\n%s", buf2.String())
		}
		if left, err := ob2.DeliverAll(t.Context(), f); left != 1 || err == nil {
			t.Fatalf("DeliverAll with the forge down = %d, %v; want 1 left and an error", left, err)
		}
		f.set(func(f *fakeForge) { f.down = false })
		if left, err := ob2.DeliverAll(t.Context(), f); left != 0 || err != nil {
			t.Fatalf("DeliverAll with the forge up = %d, %v; want 0, nil", left, err)
		}
		if got := f.log(); !slices.Equal(got, want) {
			t.Fatalf("forge log has %d rows, want %d in order; first diff at %d", len(got), len(want), firstDiff(got, want))
		}
		f.mu.Lock()
		final, archived, outputs := f.final, f.archived, f.outputs["p99_ms"]
		f.mu.Unlock()
		if final.GetResult() != runnerv1.Result_RESULT_SUCCESS || !archived || outputs != "12" {
			t.Fatalf("forge after delivery: result %v, archived %v, output %q; want success, archived, 12", final.GetResult(), archived, outputs)
		}
		if st := final.GetSteps()[0]; st.GetLogIndex() != 0 || st.GetLogLength() != 40 {
			t.Fatalf("step 0 = index %d length %d, want 0 and 40", st.GetLogIndex(), st.GetLogLength())
		}
		if got := ob2.Pending(); len(got) != 0 {
			t.Fatalf("Pending() after delivery = %v, want none", got)
		}
	})
}

// TestOutboxDropsWhatTheForgeRefuses: a kept report the forge refuses for
// good (the task is another runner's) is dropped, not retried forever.
func TestOutboxDropsWhatTheForgeRefuses(t *testing.T) {
	t.Parallel()
	ob, err := OpenOutbox(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	state := &runnerv1.UpdateTaskRequest{State: &runnerv1.TaskState{Id: 3, Result: runnerv1.Result_RESULT_FAILURE}}
	if err := ob.keep(3, state, nil); err != nil {
		t.Fatal(err)
	}
	refusing := refusingForge{newFakeForge()}
	if left, err := ob.DeliverAll(t.Context(), refusing); left != 0 || err != nil {
		t.Fatalf("DeliverAll against a refusing forge = %d, %v; want 0, nil", left, err)
	}
	if got := ob.Pending(); len(got) != 0 {
		t.Fatalf("Pending() = %v, want none", got)
	}
}
