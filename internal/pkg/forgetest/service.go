package forgetest

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"connectrpc.com/connect"
	pingv1 "gitea.dev/actions-proto-go/ping/v1"
	"gitea.dev/actions-proto-go/ping/v1/pingv1connect"
	runnerv1 "gitea.dev/actions-proto-go/runner/v1"
	"gitea.dev/actions-proto-go/runner/v1/runnerv1connect"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// Header names of the protocol.
const (
	headerUUID         = "x-runner-uuid"
	headerToken        = "x-runner-token"
	headerCapabilities = "X-Gitea-Actions-Capabilities"
)

// Output size limits of Gitea's UpdateTask; larger outputs are ignored.
const (
	maxOutputKeyLen   = 255
	maxOutputValueLen = 1024 * 1024
)

// service implements the generated handlers on top of a Forge.
type service struct{ f *Forge }

var (
	_ runnerv1connect.RunnerServiceHandler = (*service)(nil)
	_ pingv1connect.PingServiceHandler     = (*service)(nil)
)

// UnregisteredMessage is the message of the error every authenticated call
// of an unknown, deleted or wrongly authenticated runner gets.
const UnregisteredMessage = "rpc error: code = Unauthenticated desc = unregistered runner"

// errUnregistered answers as Gitea does: its interceptor returns a gRPC
// status error (codes.Unauthenticated), which connect does not recognise,
// so the client sees HTTP 500 with code unknown and the status's text as
// the message. A plain error gets exactly that from connect-go.
func errUnregistered() error {
	return errors.New(UnregisteredMessage)
}

// authLocked returns the runner named by the request headers, comparing the
// token hash in constant time. f.mu must be held.
func (f *Forge) authLocked(h http.Header) (*runner, error) {
	r, err := f.authRunnerLocked(h)
	if err != nil && f.flavor == Forgejo {
		return nil, errForgejoUnregistered()
	}
	return r, err
}

func (f *Forge) authRunnerLocked(h http.Header) (*runner, error) {
	uuid, token := h.Get(headerUUID), h.Get(headerToken)
	for _, r := range f.runners {
		if r.uuid != uuid || r.deleted {
			continue
		}
		got := hashToken(r.salt, token)
		if subtle.ConstantTimeCompare(got[:], r.tokenHash[:]) != 1 {
			return nil, errUnregistered()
		}
		return r, nil
	}
	return nil, errUnregistered()
}

// Ping answers "Hello, <data>!" without authentication.
func (s *service) Ping(_ context.Context, req *connect.Request[pingv1.PingRequest]) (*connect.Response[pingv1.PingResponse], error) {
	return connect.NewResponse(&pingv1.PingResponse{Data: "Hello, " + req.Msg.GetData() + "!"}), nil
}

// Register creates a runner from a known registration token.
func (s *service) Register(_ context.Context, req *connect.Request[runnerv1.RegisterRequest]) (*connect.Response[runnerv1.RegisterResponse], error) {
	f := s.f
	m := req.Msg
	if m.GetToken() == "" || m.GetName() == "" {
		if f.flavor == Forgejo {
			return nil, connect.NewError(connect.CodeInvalidArgument, errors.New("missing runner token, name"))
		}
		return nil, errors.New("missing runner token, name")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.regTokens[m.GetToken()] {
		return nil, connect.NewError(connect.CodeInvalidArgument, errors.New("runner registration token not found"))
	}
	labels := m.GetLabels()
	//lint:ignore SA1019 old runners send only the deprecated label fields, and Gitea still reads them
	agent, custom := m.GetAgentLabels(), m.GetCustomLabels()
	if len(labels) == 0 && len(agent) > 0 {
		labels = append(slices.Clone(agent), custom...)
	}
	caps, ephemeral := m.GetCapabilities(), m.GetEphemeral()
	if f.flavor == Forgejo {
		caps, ephemeral = nil, false // Forgejo's Register reads neither
	}
	r, token := f.addRunnerLocked(m.GetName(), m.GetVersion(), labels, caps, ephemeral)
	return connect.NewResponse(&runnerv1.RegisterResponse{Runner: &runnerv1.Runner{
		Id: r.id, Uuid: r.uuid, Token: token, Name: r.name, Version: r.version,
		Labels: slices.Clone(r.labels), Ephemeral: r.ephemeral,
	}}), nil
}

// Declare replaces the runner's labels, version and capabilities.
func (s *service) Declare(_ context.Context, req *connect.Request[runnerv1.DeclareRequest]) (*connect.Response[runnerv1.DeclareResponse], error) {
	f := s.f
	f.mu.Lock()
	defer f.mu.Unlock()
	r, err := f.authLocked(req.Header())
	if err != nil {
		return nil, err
	}
	r.labels = slices.Clone(req.Msg.GetLabels())
	r.version = req.Msg.GetVersion()
	res := connect.NewResponse(&runnerv1.DeclareResponse{Runner: &runnerv1.Runner{
		Id: r.id, Uuid: r.uuid, Name: r.name, Version: r.version, Labels: slices.Clone(r.labels),
	}})
	if f.flavor == Forgejo {
		return res, nil // no capabilities either way
	}
	r.capabilities = slices.Clone(req.Msg.GetCapabilities())
	res.Header().Set(headerCapabilities, f.capabilities)
	return res, nil
}

// FetchTask implements the tasks_version rules and picks the oldest
// matching waiting job. In the Forgejo flavor a request key
// (x-runner-request-key) is recorded on the task it picks, and a key the
// runner sent before answers the task picked under it (see
// [Forge.recoverLocked]).
func (s *service) FetchTask(_ context.Context, req *connect.Request[runnerv1.FetchTaskRequest]) (*connect.Response[runnerv1.FetchTaskResponse], error) {
	f := s.f
	f.mu.Lock()
	defer f.mu.Unlock()
	r, err := f.authLocked(req.Header())
	if err != nil {
		return nil, err
	}
	key := f.requestKey(req.Header())
	if t := f.recoverLocked(r, key); len(t) > 0 {
		return connect.NewResponse(&runnerv1.FetchTaskResponse{Task: f.taskMsg(t[0])}), nil
	}
	if f.version == 0 {
		f.version = 1
	}
	latest := f.version
	res := &runnerv1.FetchTaskResponse{TasksVersion: latest}
	if req.Msg.GetTasksVersion() == latest {
		return connect.NewResponse(res), nil
	}
	if r.ephemeral {
		for _, id := range f.order {
			t := f.tasks[id]
			if t.runnerID != r.id {
				continue
			}
			if t.status == statusWaiting || t.status == statusRunning || t.status == statusBlocked {
				return connect.NewResponse(res), nil
			}
			r.deleted = true
			return nil, connect.NewError(connect.CodeInternal, errors.New("pick task: runner has been removed"))
		}
	}
	if t := f.pickLocked(r, key, nil); t != nil {
		res.Task = f.taskMsg(t)
	}
	return connect.NewResponse(res), nil
}

// pickLocked hands r the oldest waiting job its labels match (and, when
// handle is not nil, whose handle it is), recording key on it, or returns
// nil. f.mu must be held.
func (f *Forge) pickLocked(r *runner, key string, handle *string) *task {
	for _, id := range f.order {
		t := f.tasks[id]
		if t.status != statusWaiting || t.runnerID != 0 || !labelsMatch(r.labels, t.job.RunsOn) {
			continue
		}
		if handle != nil && t.handle != *handle {
			continue
		}
		if !f.callNeedsReady(t) {
			continue
		}
		now := f.now()
		t.runnerID = r.id
		t.status = statusRunning
		t.started = now
		t.updated = now
		t.requestKey = key
		return t
	}
	return nil
}

// taskMsg is the Task message of t.
func (f *Forge) taskMsg(t *task) *runnerv1.Task {
	return &runnerv1.Task{
		Id:              t.id,
		WorkflowPayload: slices.Clone(t.job.Payload),
		Context:         t.context,
		Secrets:         t.job.Secrets,
		Needs:           t.job.Needs,
		Vars:            t.job.Vars,
	}
}

// UpdateTask implements Gitea's task state machine.
func (s *service) UpdateTask(_ context.Context, req *connect.Request[runnerv1.UpdateTaskRequest]) (*connect.Response[runnerv1.UpdateTaskResponse], error) {
	f := s.f
	f.mu.Lock()
	defer f.mu.Unlock()
	r, err := f.authLocked(req.Header())
	if err != nil {
		return nil, err
	}
	state := req.Msg.GetState()
	t := f.tasks[state.GetId()]
	if t == nil || t.runnerID == 0 {
		return nil, connect.NewError(connect.CodeInternal, fmt.Errorf("update task: task with id %d does not exist", state.GetId()))
	}
	if t.runnerID != r.id {
		return nil, connect.NewError(connect.CodeInternal, errors.New("update task: invalid runner for task"))
	}
	t.updates++
	if !t.status.isDone() {
		now := f.now()
		t.updated = now
		f.copySteps(t, state.GetSteps())
		if res := state.GetResult(); res != runnerv1.Result_RESULT_UNSPECIFIED {
			if t.status == statusCancelling {
				t.status = statusCancelled
			} else {
				t.status = statusFromResult(res)
			}
			t.stopped = tsTime(state.GetStoppedAt())
			if t.stopped.IsZero() {
				t.stopped = now
			}
		}
		if t.status.isDone() && r.ephemeral {
			r.deleted = true
		}
	}
	for k, v := range req.Msg.GetOutputs() {
		if len(k) > maxOutputKeyLen || len(v) > maxOutputValueLen {
			continue // Gitea ignores oversized outputs with a warning
		}
		if _, ok := t.outputs[k]; !ok {
			t.outputs[k] = v
		}
	}
	sent := make([]string, 0, len(t.outputs))
	for k := range t.outputs {
		sent = append(sent, k)
	}
	sort.Strings(sent)
	return connect.NewResponse(&runnerv1.UpdateTaskResponse{
		State:       &runnerv1.TaskState{Id: state.GetId(), Result: t.status.asResult()},
		SentOutputs: sent,
	}), nil
}

// copySteps copies step states by index (StepState.id). Steps the payload
// did not declare are ignored, as in Gitea, unless the payload could not be
// parsed, in which case steps are created as they are reported.
func (f *Forge) copySteps(t *task, steps []*runnerv1.StepState) {
	for _, st := range steps {
		i := st.GetId()
		if i < 0 {
			continue
		}
		if i >= int64(len(t.steps)) {
			if t.stepsFixed || i > 1000 {
				continue
			}
			for int64(len(t.steps)) <= i {
				t.steps = append(t.steps, stepState{status: statusWaiting})
			}
		}
		s := &t.steps[i]
		s.logIndex = st.GetLogIndex()
		s.logLength = st.GetLogLength()
		s.started = tsTime(st.GetStartedAt())
		s.stopped = tsTime(st.GetStoppedAt())
		if res := st.GetResult(); res != runnerv1.Result_RESULT_UNSPECIFIED {
			s.status = statusFromResult(res)
		} else if !s.started.IsZero() {
			s.status = statusRunning
		}
	}
}

// UpdateLog appends rows from the acknowledged index and archives on
// no_more.
func (s *service) UpdateLog(_ context.Context, req *connect.Request[runnerv1.UpdateLogRequest]) (*connect.Response[runnerv1.UpdateLogResponse], error) {
	f := s.f
	f.mu.Lock()
	defer f.mu.Unlock()
	r, err := f.authLocked(req.Header())
	if err != nil {
		return nil, err
	}
	m := req.Msg
	t := f.tasks[m.GetTaskId()]
	if t == nil || t.runnerID == 0 {
		return nil, connect.NewError(connect.CodeInternal, fmt.Errorf("get task: task with id %d does not exist", m.GetTaskId()))
	}
	if t.runnerID != r.id {
		return nil, connect.NewError(connect.CodeInternal, errors.New("invalid runner for task"))
	}
	ack := int64(len(t.log))
	res := &runnerv1.UpdateLogResponse{AckIndex: ack}
	if f.flavor == Forgejo && len(m.GetRows()) == 0 {
		return connect.NewResponse(res), nil // Forgejo ignores no_more without rows
	}
	if m.GetIndex() > ack {
		return connect.NewResponse(res), nil // gap: the client must resend from ack
	}
	var fresh []*runnerv1.LogRow
	if end := m.GetIndex() + int64(len(m.GetRows())); end > ack {
		fresh = m.GetRows()[ack-m.GetIndex():]
	}
	if t.archived {
		if len(fresh) > 0 {
			return nil, connect.NewError(connect.CodeAlreadyExists, errors.New("log file has been archived"))
		}
		return connect.NewResponse(res), nil
	}
	for _, row := range fresh {
		t.log = append(t.log, row.GetContent())
		t.logTimes = append(t.logTimes, tsTime(row.GetTime()))
	}
	if m.GetNoMore() {
		t.archived = true
	}
	t.updated = f.now()
	res.AckIndex = int64(len(t.log))
	return connect.NewResponse(res), nil
}

// handleSummary stores a job summary uploaded with the task's runtime
// token, as Gitea's actions_pipeline summary endpoint does. The run and job
// in the path must match the token's scope.
func (f *Forge) handleSummary(w http.ResponseWriter, req *http.Request) {
	auth := req.Header.Get("Authorization")
	tok, ok := strings.CutPrefix(auth, "Bearer ")
	if !ok || tok == "" {
		http.Error(w, "missing bearer runtime token", http.StatusUnauthorized)
		return
	}
	step := -1 // job-level summary
	if sv := req.PathValue("step"); sv != "" {
		n, err := strconv.Atoi(sv)
		if err != nil || n < 0 {
			http.Error(w, "step index must be a non-negative integer", http.StatusBadRequest)
			return
		}
		step = n
	}
	job, err := strconv.ParseInt(req.PathValue("job"), 10, 64)
	if err != nil {
		http.Error(w, "job id must be an integer", http.StatusBadRequest)
		return
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, 8<<20))
	if err != nil {
		http.Error(w, "read summary body: "+err.Error(), http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, t := range f.tasks {
		if subtle.ConstantTimeCompare([]byte(t.runtimeToken), []byte(tok)) != 1 {
			continue
		}
		if req.PathValue("run") != t.runID || job != t.jobID {
			http.Error(w, fmt.Sprintf("run/job %s/%d do not match the runtime token's scope (run %s, job %d)", req.PathValue("run"), job, t.runID, t.jobID), http.StatusForbidden)
			return
		}
		t.summaries[step] = string(body)
		w.WriteHeader(http.StatusOK)
		return
	}
	http.Error(w, "invalid runtime token", http.StatusUnauthorized)
}

func tsTime(ts *timestamppb.Timestamp) time.Time {
	if ts == nil {
		return time.Time{}
	}
	return ts.AsTime()
}
