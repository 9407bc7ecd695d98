package forgetest

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"connectrpc.com/connect"
	runnerv1 "gitea.dev/actions-proto-go/runner/v1"
	"google.golang.org/protobuf/encoding/protojson"
)

// Forgejo 15's one-job flow, as read in Forgejo's source
// (routers/api/actions/runner/runner.go, services/actions/task.go,
// models/actions/run_job.go, routers/api/v1/shared/runners.go,
// modules/structs) and Forgejo Runner's (internal/app/poll/single.go):
//
//   - Every job attempt has a handle, a random UUID.
//   - GET /api/v1/repos/{owner}/{repo}/actions/runners/jobs lists the
//     repository's waiting and running jobs (a bare JSON array, null when
//     empty), each with its handle; labels=a,b keeps the jobs whose runs-on
//     labels are all among a and b (labels= with nothing keeps the jobs
//     without runs-on). The fake authenticates it with "Authorization: token
//     <[Forge.AdminToken]>", standing for a repository admin's token.
//   - runner.v1.RunnerService/FetchSingleTask{tasks_version, optional handle}
//     answers {task, tasks_version}: the task of the oldest waiting job the
//     runner's labels match and, when a handle is given (not empty), whose
//     handle it is; no task (not an error) when there is none: an unknown
//     handle, a job already taken, or labels that do not match. An
//     ephemeral runner that already has a task gets none.
//   - x-runner-request-key: the task picked by a FetchTask or
//     FetchSingleTask is recorded with the request's key; a later call of
//     the same runner with the same key answers that task again
//     (tasks_version 0) instead of picking (FetchSingleTask: Internal when
//     more than one task has the key). Forgejo gives a recovered task a new
//     token; the fake answers it as it was.
//
// The fake serves FetchSingleTask in the Connect protocol's JSON encoding
// only (the message field numbers were not read): a binary request fails.
// It rejects unknown fields, which a real connect-go server would skip, so
// that a misspelt field fails a test. In the Gitea flavor both routes answer
// 404, as a forge without them does (connect clients see Unimplemented).

const headerRequestKey = "x-runner-request-key"

const fetchSingleTaskProcedure = "/runner.v1.RunnerService/FetchSingleTask"

// AdminToken returns the token that the fake's repository-admin routes
// (the runner jobs list) accept as "Authorization: token <AdminToken>".
func (f *Forge) AdminToken() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.adminToken == "" {
		f.adminToken = randHex(20)
	}
	return f.adminToken
}

// forgejoRoutes serves FetchSingleTask and the runner jobs list.
func (f *Forge) forgejoRoutes(mux *http.ServeMux, opts connect.Option) {
	h := connect.NewUnaryHandler(fetchSingleTaskProcedure, f.fetchSingleTask, opts, connect.WithCodec(singleCodec{}), connect.WithCompressMinBytes(1024))
	mux.HandleFunc("/api/actions"+fetchSingleTaskProcedure, func(w http.ResponseWriter, req *http.Request) {
		if f.flavor != Forgejo {
			http.NotFound(w, req)
			return
		}
		http.StripPrefix("/api/actions", h).ServeHTTP(w, req)
	})
	mux.HandleFunc("GET /api/v1/repos/{owner}/{repo}/actions/runners/jobs", f.apiRunnerJobs)
}

// requestKey is the request's x-runner-request-key in the Forgejo flavor;
// Gitea ignores it.
func (f *Forge) requestKey(h http.Header) string {
	if f.flavor != Forgejo {
		return ""
	}
	return h.Get(headerRequestKey)
}

// recoverLocked returns the tasks picked for r under key, oldest first
// (none without a key). f.mu must be held.
func (f *Forge) recoverLocked(r *runner, key string) []*task {
	if key == "" {
		return nil
	}
	var out []*task
	for _, id := range f.order {
		if t := f.tasks[id]; t.runnerID == r.id && t.requestKey == key {
			out = append(out, t)
		}
	}
	return out
}

// singleRequest and singleResponse are FetchSingleTask's messages.
type singleRequest struct {
	tasksVersion int64
	handle       *string
}

type singleResponse struct {
	task         *runnerv1.Task
	tasksVersion int64
}

func (f *Forge) fetchSingleTask(_ context.Context, req *connect.Request[singleRequest]) (*connect.Response[singleResponse], error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, err := f.authLocked(req.Header())
	if err != nil {
		return nil, err
	}
	key := f.requestKey(req.Header())
	switch rec := f.recoverLocked(r, key); {
	case len(rec) == 1:
		return connect.NewResponse(&singleResponse{task: f.taskMsg(rec[0])}), nil
	case len(rec) > 1:
		return nil, connect.NewError(connect.CodeInternal, fmt.Errorf("cannot recover %d tasks because runner requested only one", len(rec)))
	}
	if f.version == 0 {
		f.version = 1
	}
	res := &singleResponse{tasksVersion: f.version}
	if req.Msg.tasksVersion == f.version {
		return connect.NewResponse(res), nil
	}
	if r.ephemeral {
		for _, t := range f.tasks {
			if t.runnerID == r.id {
				return connect.NewResponse(res), nil // Forgejo: ErrEphemeralRunnerHasAssignedTask, no task
			}
		}
	}
	handle := req.Msg.handle
	if handle != nil && *handle == "" {
		handle = nil
	}
	if t := f.pickLocked(r, key, handle); t != nil {
		res.task = f.taskMsg(t)
	}
	return connect.NewResponse(res), nil
}

// singleCodec is the fake's Connect "json" codec for FetchSingleTask: it
// reads the request strictly and writes the response as protojson would.
type singleCodec struct{}

func (singleCodec) Name() string { return "json" }

func (singleCodec) Unmarshal(data []byte, v any) error {
	m, ok := v.(*singleRequest)
	if !ok {
		return fmt.Errorf("forgetest: FetchSingleTask codec cannot decode %T", v)
	}
	var wire struct {
		TasksVersion      json.RawMessage `json:"tasksVersion"`
		TasksVersionProto json.RawMessage `json:"tasks_version"`
		Handle            *string         `json:"handle"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&wire); err != nil {
		return fmt.Errorf("FetchSingleTaskRequest: %w", err)
	}
	version := wire.TasksVersion
	if version == nil {
		version = wire.TasksVersionProto
	}
	*m = singleRequest{handle: wire.Handle}
	if len(version) > 0 && string(version) != "null" {
		s := strings.Trim(string(version), `"`)
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return fmt.Errorf("FetchSingleTaskRequest: tasks_version %s: %w", version, err)
		}
		m.tasksVersion = n
	}
	return nil
}

func (singleCodec) Marshal(v any) ([]byte, error) {
	m, ok := v.(*singleResponse)
	if !ok {
		return nil, fmt.Errorf("forgetest: FetchSingleTask codec cannot encode %T", v)
	}
	out := map[string]json.RawMessage{}
	if m.tasksVersion != 0 {
		out["tasksVersion"] = json.RawMessage(strconv.Quote(strconv.FormatInt(m.tasksVersion, 10)))
	}
	if m.task != nil {
		b, err := protojson.Marshal(m.task)
		if err != nil {
			return nil, err
		}
		out["task"] = b
	}
	return json.Marshal(out)
}

// apiRunnerJob is Forgejo's structs.ActionRunJob.
type apiRunnerJob struct {
	ID      int64    `json:"id"`
	RunID   int64    `json:"run_id"`
	Attempt int64    `json:"attempt"`
	Handle  string   `json:"handle"`
	RepoID  int64    `json:"repo_id"`
	OwnerID int64    `json:"owner_id"`
	Name    string   `json:"name"`
	HTMLURL string   `json:"html_url"`
	Needs   []string `json:"needs"`
	RunsOn  []string `json:"runs_on"`
	TaskID  int64    `json:"task_id"`
	Status  string   `json:"status"`
}

// apiRunnerJobs is Forgejo's GET …/actions/runners/jobs.
func (f *Forge) apiRunnerJobs(w http.ResponseWriter, req *http.Request) {
	if f.flavor != Forgejo {
		http.NotFound(w, req)
		return
	}
	admin := f.AdminToken()
	tok, _ := strings.CutPrefix(req.Header.Get("Authorization"), "token ")
	if subtle.ConstantTimeCompare([]byte(tok), []byte(admin)) != 1 {
		http.Error(w, `{"message":"token is required"}`, http.StatusUnauthorized)
		return
	}
	repo := req.PathValue("owner") + "/" + req.PathValue("repo")
	var labels []string
	filter := req.URL.Query().Has("labels")
	if filter {
		labels = strings.Split(strings.TrimSpace(req.URL.Query().Get("labels")), ",")
	}
	f.mu.Lock()
	var list []apiRunnerJob // null when empty, as Forgejo answers
	for _, id := range f.order {
		t := f.tasks[id]
		if taskRepo(t) != repo || (t.status != statusWaiting && t.status != statusRunning) {
			continue
		}
		if filter && !(labels[0] == "" && len(t.job.RunsOn) == 0 || itRunsOn(t.job.RunsOn, labels)) {
			continue
		}
		run, _ := strconv.ParseInt(t.runID, 10, 64)
		j := apiRunnerJob{
			ID: t.jobID, RunID: run, Attempt: 1, Handle: t.handle, RepoID: 1, OwnerID: 0,
			Name:    t.context.GetFields()["job"].GetStringValue(),
			HTMLURL: fmt.Sprintf("%s/%s/actions/runs/%d/jobs/0/attempt/1", f.URL(), repo, run),
			RunsOn:  slices.Clone(t.job.RunsOn), Status: t.status.String(),
		}
		for k := range t.job.Needs {
			j.Needs = append(j.Needs, k)
		}
		slices.Sort(j.Needs)
		if t.runnerID != 0 {
			j.TaskID = t.id
		}
		list = append(list, j)
	}
	f.mu.Unlock()
	writeJSON(w, list)
}

// itRunsOn is Forgejo's ActionRunJob.ItRunsOn: labels is not empty, the
// job has runs-on labels, and every one of them is in labels.
func itRunsOn(runsOn, labels []string) bool {
	if len(labels) == 0 || len(runsOn) == 0 {
		return false
	}
	return labelsMatch(labels, runsOn)
}
