package report_test

import (
	"context"
	"fmt"
	"io"
	"sync"

	"connectrpc.com/connect"
	runnerv1 "gitea.dev/actions-proto-go/runner/v1"

	"github.com/forgeload/forgeload/internal/pkg/report"
)

// printForge is a minimal in-memory forge that prints what it stores.
type printForge struct {
	mu   sync.Mutex
	rows int64
}

func (p *printForge) UpdateLog(_ context.Context, req *connect.Request[runnerv1.UpdateLogRequest]) (*connect.Response[runnerv1.UpdateLogResponse], error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	m := req.Msg
	for i, row := range m.Rows {
		if m.Index+int64(i) != p.rows {
			continue // a resent row
		}
		if row.Content != "" { // Close adds an empty row when all were sent
			fmt.Printf("row %d: %q\n", p.rows, row.Content)
		}
		p.rows++
	}
	return connect.NewResponse(&runnerv1.UpdateLogResponse{AckIndex: p.rows}), nil
}

func (p *printForge) UpdateTask(_ context.Context, req *connect.Request[runnerv1.UpdateTaskRequest]) (*connect.Response[runnerv1.UpdateTaskResponse], error) {
	st := req.Msg.State
	if st.Result != runnerv1.Result_RESULT_UNSPECIFIED {
		fmt.Println("final:", st.Result)
		for _, s := range st.Steps {
			fmt.Printf("step %d: %s rows %d+%d\n", s.Id, s.Result, s.LogIndex, s.LogLength)
		}
		fmt.Println("outputs:", req.Msg.Outputs)
	}
	return connect.NewResponse(&runnerv1.UpdateTaskResponse{State: &runnerv1.TaskState{Id: st.Id}}), nil
}

func Example() {
	r := report.New(&printForge{}, 42, 1, report.Options{Masks: []string{"s3cr3t-token"}})
	ctx := r.Start(context.Background())
	_ = ctx // run the job with ctx: it is cancelled if the forge stops the task

	r.Logf(-1, "setting up")
	r.StepStart(0)
	w := r.Writer(0)
	io.WriteString(w, "token is s3cr")
	io.WriteString(w, "3t-token\nno newline at the end")
	r.StepEnd(0, runnerv1.Result_RESULT_SUCCESS)
	r.SetOutputs(map[string]string{"p99_ms": "12"})
	if err := r.Close(runnerv1.Result_RESULT_SUCCESS); err != nil {
		fmt.Println(err)
	}
	// Output:
	// row 0: "setting up"
	// row 1: "token is ***"
	// row 2: "no newline at the end"
	// final: RESULT_SUCCESS
	// step 0: RESULT_SUCCESS rows 1+2
	// outputs: map[p99_ms:12]
}
