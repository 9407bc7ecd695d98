package forgetest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	runnerv1 "gitea.dev/actions-proto-go/runner/v1"
	"google.golang.org/protobuf/types/known/structpb"
	"gopkg.in/yaml.v3"
)

// jobIDOffset separates job ids from task ids.
const jobIDOffset = 100

// status is Gitea's internal task status.
type status int

const (
	statusUnknown status = iota
	statusSuccess
	statusFailure
	statusCancelled
	statusSkipped
	statusWaiting
	statusRunning
	statusBlocked
	statusCancelling
)

var statusNames = map[status]string{
	statusUnknown: "unknown", statusSuccess: "success", statusFailure: "failure",
	statusCancelled: "cancelled", statusSkipped: "skipped", statusWaiting: "waiting",
	statusRunning: "running", statusBlocked: "blocked", statusCancelling: "cancelling",
}

func (s status) String() string { return statusNames[s] }

func (s status) isDone() bool {
	return s == statusSuccess || s == statusFailure || s == statusCancelled || s == statusSkipped
}

// asResult maps a status to the wire result, as Gitea's Status.AsResult:
// cancelling is reported as RESULT_CANCELLED.
func (s status) asResult() runnerv1.Result {
	switch s {
	case statusSuccess:
		return runnerv1.Result_RESULT_SUCCESS
	case statusFailure:
		return runnerv1.Result_RESULT_FAILURE
	case statusCancelled, statusCancelling:
		return runnerv1.Result_RESULT_CANCELLED
	case statusSkipped:
		return runnerv1.Result_RESULT_SKIPPED
	}
	return runnerv1.Result_RESULT_UNSPECIFIED
}

func statusFromResult(r runnerv1.Result) status {
	switch r {
	case runnerv1.Result_RESULT_SUCCESS:
		return statusSuccess
	case runnerv1.Result_RESULT_FAILURE:
		return statusFailure
	case runnerv1.Result_RESULT_CANCELLED:
		return statusCancelled
	case runnerv1.Result_RESULT_SKIPPED:
		return statusSkipped
	}
	return statusUnknown
}

type runner struct {
	id           int64
	uuid         string
	name         string
	version      string
	labels       []string
	capabilities []string
	ephemeral    bool
	salt         []byte
	tokenHash    [32]byte
	deleted      bool
}

func (r *runner) cancelling() bool { return slices.Contains(r.capabilities, "cancelling") }

func (r *runner) info() RunnerInfo {
	return RunnerInfo{
		ID: r.id, UUID: r.uuid, Name: r.name, Version: r.version,
		Labels: slices.Clone(r.labels), Capabilities: slices.Clone(r.capabilities),
		Ephemeral: r.ephemeral, Deleted: r.deleted,
	}
}

func hashToken(salt []byte, token string) [32]byte {
	return sha256.Sum256(append(slices.Clone(salt), token...))
}

// RunnerInfo is a snapshot of one registered runner, as returned by
// [Forge.Runners].
type RunnerInfo struct {
	ID           int64
	UUID         string
	Name         string
	Labels       []string
	Version      string
	Ephemeral    bool
	Capabilities []string // as sent on Register or the latest Declare
	Deleted      bool     // removed by DeleteRunner or after its ephemeral task
}

// Job is a workflow job to queue with [Forge.QueueJob].
type Job struct {
	// RunsOn are the job's runs-on labels; a runner matches when its labels
	// contain every entry (exact, case-sensitive).
	RunsOn []string
	// Payload becomes Task.workflow_payload.
	Payload []byte
	// Context becomes Task.context. Defaults (repository, sha, ref,
	// run_id "1", server_url, ...) are filled for keys it lacks, and the
	// per-task "token" and "gitea_runtime_token" are set unless given.
	// Values must be JSON-like (strings, numbers, bools, maps, slices).
	Context map[string]any
	// Secrets become Task.secrets; GITHUB_TOKEN and GITEA_TOKEN (= the task
	// token) are always added, as Gitea does.
	Secrets map[string]string
	// Vars become Task.vars.
	Vars map[string]string
	// Needs become Task.needs.
	Needs map[string]*runnerv1.TaskNeed
	// ReadOnlyToken makes the task token read-only, as Gitea gives the
	// jobs of a pull request from a fork: the comment routes answer a
	// post or an edit with it 403.
	ReadOnlyToken bool
}

type stepState struct {
	status              status
	started, stopped    time.Time
	logIndex, logLength int64
}

type task struct {
	id           int64
	jobID        int64
	job          Job
	context      *structpb.Struct
	runID        string
	token        string
	runtimeToken string
	stepsFixed   bool   // step count known from the payload
	handle       string // Forgejo's per-attempt job handle
	requestKey   string // x-runner-request-key of the fetch that picked it (Forgejo)

	status           status
	runnerID         int64 // 0 until picked
	started, stopped time.Time
	updated          time.Time
	steps            []stepState
	log              []string
	logTimes         []time.Time
	archived         bool
	outputs          map[string]string
	updates          int
	summaries        map[int]string

	// callNeeds are the tasks of the called jobs this called job needs
	// (WithCallExpansion), callNeedIDs their job ids: it is handed out
	// only once they are done.
	callNeeds   []int64
	callNeedIDs []string
}

// StepView is a snapshot of one step's state as reported by the runner.
type StepView struct {
	Result    runnerv1.Result // RESULT_UNSPECIFIED while not finished
	Status    string          // Gitea status: waiting, running, success, failure, cancelled, skipped
	StartedAt time.Time       // zero until reported
	StoppedAt time.Time       // zero until reported
	LogIndex  int64
	LogLength int64
}

// TaskView is a snapshot of one task, as returned by [Forge.Task].
type TaskView struct {
	ID     int64
	Exists bool   // false for an id QueueJob never returned
	Picked bool   // handed to a runner by FetchTask
	Runner string // uuid of the runner that picked it
	// Status is Gitea's status name: waiting, running, cancelling,
	// success, failure, cancelled or skipped.
	Status string
	// Result is the final result; RESULT_UNSPECIFIED until Done.
	Result     runnerv1.Result
	Done       bool
	Cancelling bool
	StartedAt  time.Time
	StoppedAt  time.Time
	Steps      []StepView
	Log        []string    // row contents in order
	LogTimes   []time.Time // row times, parallel to Log (zero when not sent)
	Archived   bool        // UpdateLog with no_more was received
	Outputs    map[string]string
	Updates    int    // UpdateTask calls for this task
	Token      string // the per-task token (context "token", GITEA_TOKEN)
	// JobID is the job's numeric id, as in the runtime token's scope and
	// the job-summary URL; it differs from the task id (it is ID+100) so
	// that mixing them up fails.
	JobID int64
	// RunID is the context's run_id, as in the job-summary URL.
	RunID string
	// Handle is the job's handle, the opaque per-attempt id that Forgejo
	// lists for waiting jobs and FetchSingleTask takes (set in both
	// flavors; only the Forgejo flavor serves it).
	Handle string
	// RuntimeToken is context "gitea_runtime_token", the Bearer token of
	// the job-summary upload. Like Gitea's, it is an HS256 JWT whose claims
	// carry scp "Actions.Results:<run>:<job>", TaskID, RunID and JobID.
	RuntimeToken string
}

func (t *task) view(f *Forge) TaskView {
	v := TaskView{
		ID: t.id, Exists: true, Picked: t.runnerID != 0, Status: t.status.String(),
		Done: t.status.isDone(), Cancelling: t.status == statusCancelling,
		StartedAt: t.started, StoppedAt: t.stopped, Log: slices.Clone(t.log),
		Archived: t.archived, Outputs: maps.Clone(t.outputs), Updates: t.updates,
		Token: t.token, RuntimeToken: t.runtimeToken, JobID: t.jobID, RunID: t.runID,
		LogTimes: slices.Clone(t.logTimes), Handle: t.handle,
	}
	if v.Outputs == nil {
		v.Outputs = map[string]string{}
	}
	if v.Done {
		v.Result = t.status.asResult()
	}
	if r := f.runnerByID(t.runnerID); r != nil {
		v.Runner = r.uuid
	}
	for _, s := range t.steps {
		sv := StepView{Status: s.status.String(), StartedAt: s.started, StoppedAt: s.stopped, LogIndex: s.logIndex, LogLength: s.logLength}
		if s.status.isDone() {
			sv.Result = s.status.asResult()
		}
		v.Steps = append(v.Steps, sv)
	}
	return v
}

func (f *Forge) runnerByID(id int64) *runner {
	for _, r := range f.runners {
		if r.id == id {
			return r
		}
	}
	return nil
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails (crypto/rand docs)
	return hex.EncodeToString(b)
}

func newUUID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// AddRegistrationToken makes token valid for Register. Tokens are reusable,
// as in Gitea.
func (f *Forge) AddRegistrationToken(token string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.regTokens[token] = true
}

// AddRunner registers a runner directly, as a successful Register would,
// and returns its credentials. It is a shortcut for tests that start from
// an already registered runner.
func (f *Forge) AddRunner(name string, labels []string, capabilities ...string) (uuid, token string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, token := f.addRunnerLocked(name, "", labels, capabilities, false)
	return r.uuid, token
}

func (f *Forge) addRunnerLocked(name, version string, labels, caps []string, ephemeral bool) (*runner, string) {
	f.nextRunnerID++
	token := randHex(20)
	salt := []byte(randHex(8))
	r := &runner{
		id: f.nextRunnerID, uuid: newUUID(), name: name, version: version,
		labels: slices.Clone(labels), capabilities: slices.Clone(caps), ephemeral: ephemeral,
		salt: salt, tokenHash: hashToken(salt, token),
	}
	f.runners = append(f.runners, r)
	return r, token
}

// Runners returns a snapshot of every runner ever registered, in
// registration order, including deleted ones (Deleted is true).
func (f *Forge) Runners() []RunnerInfo {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]RunnerInfo, 0, len(f.runners))
	for _, r := range f.runners {
		out = append(out, r.info())
	}
	return out
}

// DeleteRunner removes the runner with uuid; its later calls fail as
// Gitea's do, with code unknown and [UnregisteredMessage]. Unknown uuids are ignored.
func (f *Forge) DeleteRunner(uuid string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range f.runners {
		if r.uuid == uuid {
			r.deleted = true
		}
	}
}

// TasksVersion returns the current tasks_version (0 until the first
// FetchTask or QueueJob).
func (f *Forge) TasksVersion() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.version
}

// QueueJob adds a waiting job, bumps tasks_version, and returns the task id
// the job will have once a runner picks it. It panics if j.Context cannot be
// converted to a protobuf Struct, which is a bug in the calling test.
func (f *Forge) QueueJob(j Job) int64 {
	if f.expandCalls {
		if _, err := parseCaller(j.Payload); err == nil {
			panic("forgetest: QueueJob: a Forge made WithCallExpansion (Gitea 1.27) never sends a calling job (uses:) to a runner; queue it with QueueCall")
		}
	}
	return f.queueJob(j, nil, nil)
}

// queueJob is QueueJob, with the tasks of the called jobs the job needs
// (and their job ids) when it is a called job (QueueCall).
func (f *Forge) queueJob(j Job, callNeeds []int64, callNeedIDs []string) int64 {
	jobKey, nsteps := parsePayload(j.Payload)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nextTaskID++
	t := &task{
		id: f.nextTaskID, jobID: f.nextTaskID + jobIDOffset, status: statusWaiting,
		token: randHex(20), outputs: map[string]string{}, summaries: map[int]string{},
		handle: newUUID(), callNeeds: callNeeds, callNeedIDs: callNeedIDs,
	}
	j.RunsOn = slices.Clone(j.RunsOn)
	j.Secrets = maps.Clone(j.Secrets)
	if j.Secrets == nil {
		j.Secrets = map[string]string{}
	}
	j.Secrets["GITHUB_TOKEN"] = t.token
	j.Secrets["GITEA_TOKEN"] = t.token
	if f.flavor == Forgejo {
		j.Secrets["FORGEJO_TOKEN"] = t.token
	}
	j.Vars = maps.Clone(j.Vars)
	j.Needs = maps.Clone(j.Needs)
	ctx := f.defaultContext(jobKey)
	if f.repo != "" {
		owner, _, _ := strings.Cut(f.repo, "/")
		ctx["repository"], ctx["repository_owner"], ctx["sha"] = f.repo, owner, f.repoSHA
		ctx["repositoryUrl"] = f.URL() + "/" + f.repo + ".git"
	}
	for k, v := range j.Context {
		ctx[k] = v
	}
	if _, ok := j.Context["token"]; !ok {
		ctx["token"] = t.token
	}
	t.runID = fmt.Sprint(ctx["run_id"])
	if rt, ok := j.Context["gitea_runtime_token"].(string); ok {
		t.runtimeToken = rt
	} else {
		t.runtimeToken = runtimeToken(f.jwtKey, f.now(), t.id, t.runID, t.jobID)
		ctx["gitea_runtime_token"] = t.runtimeToken
	}
	if f.flavor == Forgejo {
		ctx["forgejo_runtime_token"] = ctx["gitea_runtime_token"]
	}
	s, err := toStruct(ctx)
	if err != nil {
		panic(fmt.Sprintf("forgetest: QueueJob: Job.Context cannot become a protobuf Struct (use strings, numbers, bools, maps and slices): %v", err))
	}
	t.context = s
	if nsteps >= 0 {
		t.stepsFixed = true
		t.steps = make([]stepState, nsteps)
		for i := range t.steps {
			t.steps[i].status = statusWaiting
		}
	}
	t.job = j
	f.tasks[t.id] = t
	f.order = append(f.order, t.id)
	f.version++
	return t.id
}

func (f *Forge) defaultContext(jobKey string) map[string]any {
	ctx := f.giteaContext(jobKey)
	if f.flavor == Forgejo {
		ctx["forgejo_default_actions_url"] = ctx["gitea_default_actions_url"]
		ctx["forgejo_server_version"] = ForgejoServerVersion
		ctx["repository_id"] = "1"
		ctx["ref_protected"] = false
	}
	return ctx
}

func (f *Forge) giteaContext(jobKey string) map[string]any {
	u := f.URL()
	return map[string]any{
		"actor":                     "forgeload-tester",
		"api_url":                   u + "/api/v1",
		"base_ref":                  "",
		"env":                       "",
		"event":                     map[string]any{},
		"event_name":                "push",
		"event_path":                "",
		"gitea_default_actions_url": "https://github.com",
		"graphql_url":               "",
		"head_ref":                  "",
		"job":                       jobKey,
		"ref":                       "refs/heads/main",
		"ref_name":                  "main",
		"ref_protected":             "false",
		"ref_type":                  "branch",
		"path":                      "",
		"repository":                "forgeload/demo",
		"repository_owner":          "forgeload",
		"repositoryUrl":             u + "/forgeload/demo.git",
		"retention_days":            "90",
		"run_id":                    "1",
		"run_number":                "1",
		"run_attempt":               "1",
		"secret_source":             "Actions",
		"server_url":                u + "/",
		"sha":                       "0123456789abcdef0123456789abcdef01234567",
		"triggering_actor":          "forgeload-tester",
		"workflow":                  "load.yaml",
		"workspace":                 "",
	}
}

// toStruct converts m to a Struct, going through JSON for value types
// structpb does not accept directly (typed maps and slices).
func toStruct(m map[string]any) (*structpb.Struct, error) {
	if s, err := structpb.NewStruct(m); err == nil {
		return s, nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	var generic map[string]any
	if err := json.Unmarshal(b, &generic); err != nil {
		return nil, err
	}
	return structpb.NewStruct(generic)
}

// parsePayload returns the single job's key and its number of steps, or
// ("", -1) when the payload is not a one-job workflow.
func parsePayload(p []byte) (string, int) {
	var wf struct {
		Jobs map[string]struct {
			Steps []yaml.Node `yaml:"steps"`
		} `yaml:"jobs"`
	}
	if err := yaml.Unmarshal(p, &wf); err != nil || len(wf.Jobs) != 1 {
		return "", -1
	}
	for k, j := range wf.Jobs {
		return k, len(j.Steps)
	}
	return "", -1
}

// Task returns a snapshot of task id. For an unknown id, Exists is false.
func (f *Forge) Task(id int64) TaskView {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.tasks[id]
	if t == nil {
		return TaskView{ID: id}
	}
	return t.view(f)
}

// Tasks returns snapshots of every queued task in queue order.
func (f *Forge) Tasks() []TaskView {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]TaskView, 0, len(f.order))
	for _, id := range f.order {
		out = append(out, f.tasks[id].view(f))
	}
	return out
}

// WaitTask polls task id every 10 ms until cond returns true for its
// snapshot, or ctx ends. It returns the last snapshot, and ctx.Err() on
// timeout.
func (f *Forge) WaitTask(ctx context.Context, id int64, cond func(TaskView) bool) (TaskView, error) {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		v := f.Task(id)
		if cond(v) {
			return v, nil
		}
		select {
		case <-ctx.Done():
			return f.Task(id), fmt.Errorf("wait for task %d (status %s): %w", id, v.Status, ctx.Err())
		case <-tick.C:
		}
	}
}

// Cancel cancels task id as Gitea's StopTask(cancelling) does. A waiting
// job is cancelled before any runner gets it. A running task whose runner
// advertised the "cancelling" capability and which was updated within
// [CancellingTimeout] becomes cancelling: the runner sees RESULT_CANCELLED
// on its next UpdateTask, and the final result is stored as cancelled
// whatever it reports. Otherwise the task is cancelled at once (done,
// unfinished steps cancelled); a later final UpdateTask is ignored, but
// UpdateLog is accepted until no_more. Done tasks are left alone.
func (f *Forge) Cancel(id int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.tasks[id]
	if t == nil || t.status.isDone() || t.status == statusCancelling {
		return
	}
	now := f.now()
	if t.status == statusRunning {
		if r := f.runnerByID(t.runnerID); r != nil && r.cancelling() && now.Sub(t.updated) < CancellingTimeout {
			t.status = statusCancelling
			t.updated = now
			return
		}
	}
	t.stop(statusCancelled, now)
}

// stop ends the task with st, as Gitea's StopTask: unfinished steps get st
// too.
func (t *task) stop(st status, now time.Time) {
	t.status = st
	t.stopped = now
	t.updated = now
	for i := range t.steps {
		s := &t.steps[i]
		if !s.status.isDone() {
			s.status = st
			if s.stopped.IsZero() {
				s.stopped = now
			}
		}
	}
}

// Reap stops task id as Gitea's zombie-task reaper does when a runner has
// stopped reporting: a running task becomes failure, a cancelling one
// cancelled, and its log is archived, so later UpdateLog rows get
// AlreadyExists and the next UpdateTask response carries the result.
// Waiting and done tasks are left alone.
func (f *Forge) Reap(id int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.tasks[id]
	if t == nil || t.runnerID == 0 || t.status.isDone() {
		return
	}
	st := statusFailure
	if t.status == statusCancelling {
		st = statusCancelled
	}
	t.stop(st, f.now())
	t.archived = true
}

// Summaries returns the job summaries uploaded so far, by task id. Uploads
// go to PUT /api/actions_pipeline/_apis/pipelines/workflows/{run}/jobs/{job}/steps/{i}/summary
// (or .../jobs/{job}/summary for the whole job) with "Authorization: Bearer
// <gitea_runtime_token>"; {run} and {job} are [TaskView.RunID] and
// [TaskView.JobID]. A later upload for the same step replaces the earlier
// one; a task's uploads are joined with the job-level one first, then by
// step index.
func (f *Forge) Summaries() map[int64]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[int64]string{}
	for id, t := range f.tasks {
		if len(t.summaries) == 0 {
			continue
		}
		steps := slices.Collect(maps.Keys(t.summaries))
		sort.Ints(steps)
		s := ""
		for _, i := range steps {
			s += t.summaries[i]
		}
		out[id] = s
	}
	return out
}

func labelsMatch(runnerLabels, runsOn []string) bool {
	for _, l := range runsOn {
		if !slices.Contains(runnerLabels, l) {
			return false
		}
	}
	return true
}
