package client_test

import (
	"context"
	"testing"

	"connectrpc.com/connect"
	runnerv1 "gitea.dev/actions-proto-go/runner/v1"

	"github.com/forgeload/forgeload/internal/pkg/client"
	"github.com/forgeload/forgeload/internal/pkg/forgetest"
)

// TestFetchSingleTask: against a Forgejo, a handle fetches exactly its
// job, and an unknown handle answers no task; against a Gitea, the RPC is
// Unimplemented.
func TestFetchSingleTask(t *testing.T) {
	t.Parallel()
	f := forgetest.New(t, forgetest.WithForgejo())
	uuid, token := f.AddRunner("one-job", []string{"forgeload"})
	c := mustNew(t, client.Options{Address: f.URL(), UUID: uuid, Token: token})
	payload := []byte("on: push\njobs:\n  a:\n    runs-on: forgeload\n    steps:\n      - run: echo\n")
	first := f.QueueJob(forgetest.Job{RunsOn: []string{"forgeload"}, Payload: payload})
	second := f.QueueJob(forgetest.Job{RunsOn: []string{"forgeload"}, Payload: payload, Secrets: map[string]string{"S": "v"}})
	ctx := context.Background()

	res, err := c.FetchSingleTask(ctx, connect.NewRequest(&client.FetchSingleTaskRequest{Handle: "not-a-handle"}))
	if err != nil || res.Msg.Task != nil || res.Msg.TasksVersion == 0 {
		t.Fatalf("unknown handle: %v %+v, want no task and a tasks_version", err, res)
	}
	res, err = c.FetchSingleTask(ctx, connect.NewRequest(&client.FetchSingleTaskRequest{Handle: f.Task(second).Handle}))
	if err != nil || res.Msg.Task.GetId() != second || res.Msg.Task.GetSecrets()["S"] != "v" ||
		res.Msg.Task.GetContext().GetFields()["job"].GetStringValue() != "a" {
		t.Fatalf("handle of the second job: %v %+v", err, res)
	}
	if f.Task(first).Picked {
		t.Fatal("the first job was picked")
	}

	g := forgetest.New(t)
	gu, gt := g.AddRunner("gitea", []string{"forgeload"})
	gc := mustNew(t, client.Options{Address: g.URL(), UUID: gu, Token: gt})
	if _, err := gc.FetchSingleTask(ctx, connect.NewRequest(&client.FetchSingleTaskRequest{Handle: "h"})); connect.CodeOf(err) != connect.CodeUnimplemented {
		t.Fatalf("Gitea: %v, want Unimplemented", err)
	}
}

// TestRequestKey: every FetchTask carries x-runner-request-key; the key
// stays the same after a failed call and changes after a successful one,
// so that Forgejo answers a task whose answer was lost again.
func TestRequestKey(t *testing.T) {
	t.Parallel()
	f := forgetest.New(t, forgetest.WithForgejo())
	uuid, token := f.AddRunner("r", []string{"forgeload"})
	c := mustNew(t, client.Options{Address: f.URL(), UUID: uuid, Token: token})
	ctx := context.Background()
	fetch := func() (string, error) {
		_, err := c.FetchTask(ctx, connect.NewRequest(&runnerv1.FetchTaskRequest{}))
		return f.LastHeader("FetchTask").Get(client.HeaderRequestKey), err
	}
	k1, err := fetch()
	if err != nil || len(k1) != 36 {
		t.Fatalf("first fetch: key %q, %v", k1, err)
	}
	k2, err := fetch()
	if err != nil || k2 == k1 || len(k2) != 36 {
		t.Fatalf("after a success the key must change: %q then %q (%v)", k1, k2, err)
	}
	f.SetFault("FetchTask", forgetest.Fault{Code: connect.CodeUnavailable, Count: 1})
	k3, err := fetch()
	if err == nil {
		t.Fatal("the injected fault did not fail the call")
	}
	k4, err := fetch()
	if err != nil || k4 != k3 || k3 == k2 {
		t.Fatalf("after a failure the key must be kept: %q then %q (%v), previous %q", k3, k4, err, k2)
	}
}
