package report

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"connectrpc.com/connect"
	runnerv1 "gitea.dev/actions-proto-go/runner/v1"
)

// fakeForge is a hand-written Client with Gitea's UpdateLog/UpdateTask
// semantics, plus fault injection. It never blocks, so it works inside
// testing/synctest bubbles.
type fakeForge struct {
	mu sync.Mutex

	rows      []*runnerv1.LogRow // the stored task log
	archived  bool
	noMoreAt  int // index in calls of the accepted no_more request, -1 if none
	calls     []string
	logReqs   []*runnerv1.UpdateLogRequest
	stateReqs []*runnerv1.UpdateTaskRequest
	outputs   map[string]string
	done      bool
	final     *runnerv1.TaskState
	result    runnerv1.Result // result returned to the runner (server stop)

	down       bool // every call fails with Unavailable
	failLogs   int  // the next failLogs UpdateLog calls fail
	failStates int  // the next failStates UpdateTask calls fail
	maxAccept  int  // if > 0, store at most this many new rows per call
	lostAcks   int  // the next lostAcks UpdateLog calls that carry rows store them, then fail as if timed out
	ackLie     int64
}

var _ Client = (*fakeForge)(nil)

func newFakeForge() *fakeForge {
	return &fakeForge{outputs: map[string]string{}, noMoreAt: -1}
}

var errDown = connect.NewError(connect.CodeUnavailable, errors.New("forge is down"))

func (f *fakeForge) UpdateLog(_ context.Context, req *connect.Request[runnerv1.UpdateLogRequest]) (*connect.Response[runnerv1.UpdateLogResponse], error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "UpdateLog")
	if f.down {
		return nil, errDown
	}
	if f.failLogs > 0 {
		f.failLogs--
		return nil, errDown
	}
	m := req.Msg
	f.logReqs = append(f.logReqs, m)
	if f.archived {
		return nil, connect.NewError(connect.CodeAlreadyExists, errors.New("log file has been archived"))
	}
	ack := int64(len(f.rows))
	if len(m.Rows) == 0 || m.Index > ack || m.Index+int64(len(m.Rows)) <= ack {
		// A gap, or nothing new: Gitea stores nothing and ignores no_more.
		return connect.NewResponse(&runnerv1.UpdateLogResponse{AckIndex: ack + f.ackLie}), nil
	}
	add := m.Rows[ack-m.Index:]
	whole := true
	if f.maxAccept > 0 && len(add) > f.maxAccept {
		add = add[:f.maxAccept]
		whole = false
	}
	f.rows = append(f.rows, add...)
	ack = int64(len(f.rows))
	if m.NoMore && whole {
		f.archived = true
		f.noMoreAt = len(f.calls) - 1
	}
	if f.lostAcks > 0 {
		f.lostAcks--
		return nil, connect.NewError(connect.CodeDeadlineExceeded, context.DeadlineExceeded)
	}
	return connect.NewResponse(&runnerv1.UpdateLogResponse{AckIndex: ack + f.ackLie}), nil
}

func (f *fakeForge) UpdateTask(_ context.Context, req *connect.Request[runnerv1.UpdateTaskRequest]) (*connect.Response[runnerv1.UpdateTaskResponse], error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "UpdateTask")
	if f.down {
		return nil, errDown
	}
	if f.failStates > 0 {
		f.failStates--
		return nil, errDown
	}
	m := req.Msg
	f.stateReqs = append(f.stateReqs, m)
	for k, v := range m.Outputs {
		if _, ok := f.outputs[k]; !ok {
			f.outputs[k] = v
		}
	}
	res := f.result
	if !f.done && m.State.GetResult() != runnerv1.Result_RESULT_UNSPECIFIED {
		f.done = true
		f.final = m.State
		if res == runnerv1.Result_RESULT_UNSPECIFIED {
			res = m.State.GetResult()
		}
		f.result = res
	}
	resp := &runnerv1.UpdateTaskResponse{State: &runnerv1.TaskState{Id: m.State.GetId(), Result: res}}
	for k := range f.outputs {
		resp.SentOutputs = append(resp.SentOutputs, k)
	}
	return connect.NewResponse(resp), nil
}

func (f *fakeForge) set(fn func(f *fakeForge)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

// log returns the stored rows' contents, without the empty row Close adds
// when every row was acknowledged before it.
func (f *fakeForge) log() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]string, len(f.rows))
	for i, r := range f.rows {
		out[i] = r.Content
	}
	if f.archived && len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return out
}

func (f *fakeForge) count(method string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.calls {
		if c == method {
			n++
		}
	}
	return n
}

func (f *fakeForge) lastState() *runnerv1.UpdateTaskRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.stateReqs) == 0 {
		return nil
	}
	return f.stateReqs[len(f.stateReqs)-1]
}

// lines returns "prefix 0" … "prefix n-1".
func lines(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s %d", prefix, i)
	}
	return out
}

// refusingForge answers UpdateTask with Internal "invalid runner for task",
// as Gitea does for a task of another runner.
type refusingForge struct{ *fakeForge }

func (refusingForge) UpdateTask(context.Context, *connect.Request[runnerv1.UpdateTaskRequest]) (*connect.Response[runnerv1.UpdateTaskResponse], error) {
	return nil, connect.NewError(connect.CodeInternal, errors.New("update task: invalid runner for task"))
}
