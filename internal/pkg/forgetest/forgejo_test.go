package forgetest_test

import (
	"context"
	"testing"

	"connectrpc.com/connect"
	runnerv1 "gitea.dev/actions-proto-go/runner/v1"

	"github.com/forgeload/forgeload/internal/pkg/forgetest"
)

// TestForgejoRegisterSecret: the offline registration derives the uuid as
// Forgejo does (the secret's first 16 characters' ASCII codes as the uuid's
// bytes), takes the secret as the token, is idempotent, and refuses
// secrets that are not 40 hexadecimal characters.
func TestForgejoRegisterSecret(t *testing.T) {
	t.Parallel()
	f := forgetest.New(t, forgetest.WithForgejo())
	const secret = "0123456789abcdef0123456789abcdef01234567"
	uuid, err := f.RegisterSecret(secret, "r", []string{"forgeload"})
	if err != nil || uuid != "30313233-3435-3637-3839-616263646566" {
		t.Fatalf("uuid %q (%v)", uuid, err)
	}
	if again, err := f.RegisterSecret(secret, "renamed", []string{"x"}); err != nil || again != uuid || len(f.Runners()) != 1 || f.Runners()[0].Name != "renamed" {
		t.Fatalf("second registration: %q %v, runners %+v", again, err, f.Runners())
	}
	c := newRC(t, f, uuid, secret)
	if _, err := c.fetch(0); err != nil {
		t.Fatalf("FetchTask with the secret as token: %v", err)
	}
	for _, bad := range []string{"0123", "z123456789abcdef0123456789abcdef01234567"} {
		if _, err := f.RegisterSecret(bad, "r", nil); err == nil {
			t.Errorf("RegisterSecret(%q) accepted", bad)
		}
	}
}

// TestForgejoDifferences: an unknown runner gets connect Unauthenticated,
// Declare sends no capabilities header, a cancel is immediate whatever the
// runner declared, and no_more without rows does not archive the log.
func TestForgejoDifferences(t *testing.T) {
	t.Parallel()
	f := forgetest.New(t, forgetest.WithForgejo())
	_, err := newRC(t, f, "nobody", "x").fetch(0)
	wantCode(t, err, connect.CodeUnauthenticated, "unregistered runner")

	c := register(t, f, []string{"forgeload"}, true, "cancelling")
	res, err := c.svc.Declare(context.Background(), req(c, &runnerv1.DeclareRequest{Version: "v", Labels: []string{"forgeload"}, Capabilities: []string{"cancelling"}}))
	if err != nil || res.Header().Get("X-Gitea-Actions-Capabilities") != "" {
		t.Fatalf("Declare: %v, capabilities header %q", err, res.Header().Get("X-Gitea-Actions-Capabilities"))
	}
	if r := f.Runners()[0]; r.Ephemeral || len(r.Capabilities) != 0 {
		t.Fatalf("runner %+v: Forgejo's Register reads neither ephemeral nor capabilities", r)
	}
	id := f.QueueJob(forgetest.Job{RunsOn: []string{"forgeload"}, Payload: []byte(payload2Steps)})
	if c.mustFetch(0).Task == nil {
		t.Fatal("no task")
	}
	c.mustUpdate(&runnerv1.UpdateTaskRequest{State: &runnerv1.TaskState{Id: id}})
	f.Cancel(id)
	if v := f.Task(id); !v.Done || v.Result != runnerv1.Result_RESULT_CANCELLED {
		t.Fatalf("after Cancel: %+v, want cancelled at once", v.Status)
	}
	if ack, err := c.log(id, 0, true); err != nil || ack != 0 || f.Task(id).Archived {
		t.Fatalf("no_more without rows: ack %d %v, archived %v; want nothing archived", ack, err, f.Task(id).Archived)
	}
	if ack, err := c.log(id, 0, true, "last"); err != nil || ack != 1 || !f.Task(id).Archived {
		t.Fatalf("no_more with a row: ack %d %v, archived %v", ack, err, f.Task(id).Archived)
	}
}
