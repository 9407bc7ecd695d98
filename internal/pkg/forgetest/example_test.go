package forgetest_test

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"connectrpc.com/connect"
	runnerv1 "gitea.dev/actions-proto-go/runner/v1"
	"gitea.dev/actions-proto-go/runner/v1/runnerv1connect"

	"github.com/forgeload/forgeload/internal/pkg/forgetest"
)

// Example queues a job, lets a runner pick and finish it over real RPC, and
// reads the result back, as a reporter or end-to-end test would.
func Example() {
	forge, err := forgetest.NewServer() // in a test: forgetest.New(t)
	if err != nil {
		panic(err)
	}
	defer forge.Close()
	uuid, token := forge.AddRunner("runner-1", []string{"forgeload"}, "cancelling")
	id := forge.QueueJob(forgetest.Job{RunsOn: []string{"forgeload"}, Payload: []byte(payload2Steps)})

	rpc := runnerv1connect.NewRunnerServiceClient(http.DefaultClient, forge.URL()+"/api/actions")
	auth := func(h http.Header) { h.Set("x-runner-uuid", uuid); h.Set("x-runner-token", token) }
	ctx := context.Background()

	fetch := connect.NewRequest(&runnerv1.FetchTaskRequest{})
	auth(fetch.Header())
	if _, err := rpc.FetchTask(ctx, fetch); err != nil {
		panic(err)
	}
	logReq := connect.NewRequest(&runnerv1.UpdateLogRequest{TaskId: id, Rows: []*runnerv1.LogRow{{Content: "hello"}}, NoMore: true})
	auth(logReq.Header())
	if _, err := rpc.UpdateLog(ctx, logReq); err != nil {
		panic(err)
	}
	done := connect.NewRequest(&runnerv1.UpdateTaskRequest{State: &runnerv1.TaskState{Id: id, Result: runnerv1.Result_RESULT_SUCCESS}})
	auth(done.Header())
	if _, err := rpc.UpdateTask(ctx, done); err != nil {
		panic(err)
	}

	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	v, err := forge.WaitTask(wctx, id, func(v forgetest.TaskView) bool { return v.Done })
	if err != nil {
		panic(err)
	}
	fmt.Println(v.Result, v.Log, v.Archived)
	// Output: RESULT_SUCCESS [hello] true
}
