package forgetest_test

import (
	"context"
	"fmt"
	"testing"

	"connectrpc.com/connect"
	runnerv1 "gitea.dev/actions-proto-go/runner/v1"

	"github.com/forgeload/forgeload/internal/pkg/forgetest"
)

// FuzzQueueJobPayload checks that any workflow payload can be queued and
// handed out unchanged, whatever its YAML looks like.
func FuzzQueueJobPayload(f *testing.F) {
	f.Add([]byte(payload2Steps))
	f.Add([]byte("jobs: {a: {steps: [1]}, b: {}}"))
	f.Add([]byte("jobs: [\n"))
	f.Add([]byte(""))
	forge := forgetest.New(f)
	f.Fuzz(func(t *testing.T, p []byte) {
		id := forge.QueueJob(forgetest.Job{RunsOn: []string{"fuzz"}, Payload: p})
		v := forge.Task(id)
		if !v.Exists || v.Status != "waiting" || v.Picked {
			t.Fatalf("queued task = %+v, want a waiting task", v)
		}
	})
}

// FuzzUpdateLogAck sends UpdateLog batches at arbitrary indexes, each row
// carrying its absolute index, and checks Gitea's ack rules: the stored log
// is exactly rows 0..n-1 with no gap or duplicate, and ack_index is always
// the stored length.
func FuzzUpdateLogAck(f *testing.F) {
	f.Add([]byte{0, 3, 1, 4, 9, 1, 5, 0, 2, 2})
	f.Add([]byte{1, 1})
	f.Add([]byte{0, 0, 0, 5, 5, 5})
	forge := forgetest.New(f)
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 64 {
			ops = ops[:64]
		}
		c := register(t, forge, []string{"fuzz-log"}, false)
		id := forge.QueueJob(forgetest.Job{RunsOn: []string{"fuzz-log"}})
		if m := c.mustFetch(0); m.Task == nil || m.Task.Id != id {
			t.Fatalf("FetchTask = %v, want task %d", m, id)
		}
		var stored int64
		for i := 0; i+1 < len(ops); i += 2 {
			index, n := int64(ops[i]%16), int(ops[i+1]%8)
			rows := make([]string, n)
			for k := range rows {
				rows[k] = fmt.Sprint(index + int64(k))
			}
			ack, err := c.log(id, index, false, rows...)
			if err != nil {
				t.Fatalf("UpdateLog(%d, %d rows): %v", index, n, err)
			}
			if index <= stored && index+int64(n) > stored {
				stored = index + int64(n)
			}
			if ack != stored {
				t.Fatalf("UpdateLog(%d, %d rows) ack = %d, want %d", index, n, ack, stored)
			}
		}
		v := forge.Task(id)
		if int64(len(v.Log)) != stored {
			t.Fatalf("stored %d rows, want %d", len(v.Log), stored)
		}
		for i, row := range v.Log {
			if row != fmt.Sprint(i) {
				t.Fatalf("row %d = %q, want %q (log %q)", i, row, fmt.Sprint(i), v.Log)
			}
		}
		// Finishing archives; then any new row is refused.
		if _, err := c.log(id, stored, true, "end"); err != nil {
			t.Fatalf("final UpdateLog: %v", err)
		}
		if _, err := c.log(id, stored+1, false, "late"); connect.CodeOf(err) != connect.CodeAlreadyExists {
			t.Fatalf("row after no_more: %v, want AlreadyExists", err)
		}
		_, _ = c.svc.UpdateTask(context.Background(), req(c, &runnerv1.UpdateTaskRequest{State: &runnerv1.TaskState{Id: id, Result: runnerv1.Result_RESULT_SUCCESS}}))
	})
}
