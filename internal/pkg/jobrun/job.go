package jobrun

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	runnerv1 "gitea.dev/actions-proto-go/runner/v1"

	"github.com/forgeload/forgeload/internal/pkg/jobfile"
	"github.com/forgeload/forgeload/internal/pkg/workflow"
)

// job is one task being run.
type job struct {
	deps *Config // given by the runner, read-only
	task *runnerv1.Task
	rep  Reporter

	wf       *workflow.Workflow
	parseErr error

	github map[string]any
	dir    string       // task directory: workspace, temp, env files
	td     *jobfile.Dir // dir, opened before the job runs: every file operation in it goes through td
	ws     string       // GITHUB_WORKSPACE
	env    map[string]string
	path   []string // GITHUB_PATH additions, newest first
	steps  map[string]workflow.StepResult

	actions map[string]*fetchedAction // remote actions fetched, by uses:
	posts   []postStep                // posts of JavaScript and Docker actions whose pre or main ran
	// states is what each JavaScript or Docker action step wrote to GITHUB_STATE
	// (its pre, then its main), by the step's file id: its STATE_* for
	// main and post.
	states map[string]map[string]string

	// Containers of the job (services.go); ctrKey labels them all.
	ctrKey, ctrNetwork string
	services           map[string]*service
	jobCtr, jobCtrUser string
	jobCtrImage        string // the job container's image, for messages
	jobCtrBash         bool   // the job container has bash

	mu       sync.Mutex
	pgids    []int // process groups of run: steps, killed at job end
	timedOut bool  // the job's timeout-minutes ended it
	// cacheURL is ACTIONS_CACHE_URL, cacheToken the secret in it;
	// cacheRevoke ends them at cleanup.
	cacheURL, cacheToken string
	cacheRevoke          func()
	// callInputs is the inputs context of a job of a called reusable
	// workflow, and callDepth how many calls led to it (reusable.go).
	callInputs map[string]any
	callDepth  int
	// saidRefused is set once the log said that the forge takes no upload
	// from a cancelled task (history.go).
	saidRefused bool
}

func newJob(deps *Config, task *runnerv1.Task) *job {
	j := &job{deps: deps, task: task, steps: map[string]workflow.StepResult{}}
	j.wf, j.parseErr = parseTask(task)
	j.github = workflow.GithubContext(task.GetContext())
	if deps.Cache != nil && j.parseErr == nil {
		j.cacheURL, j.cacheToken, j.cacheRevoke = deps.Cache.Grant(j.ctxString("repository"))
	}
	return j
}

func (j *job) stepCount() int {
	if j.wf == nil {
		return 0
	}
	return len(j.wf.Job.Steps)
}

// masks are every secret value, the task and runtime tokens, and the
// passwords of the proxy URLs steps inherit from the daemon.
func (j *job) masks() []string {
	m := hostEnvSecrets(os.Environ())
	for _, v := range j.task.GetSecrets() {
		m = append(m, v)
	}
	for _, k := range []string{"token", "gitea_runtime_token", "forgejo_runtime_token", "actions_id_token_request_token"} {
		if v, ok := j.task.GetContext().GetFields()[k]; ok && v.GetStringValue() != "" {
			m = append(m, v.GetStringValue())
		}
	}
	if j.cacheToken != "" {
		m = append(m, j.cacheToken)
	}
	return m
}

func (j *job) ctxString(key string) string {
	if v, ok := j.github[key].(string); ok {
		return v
	}
	return ""
}

// runtimeToken is the token for the artifact and summary APIs.
func (j *job) runtimeToken() string {
	for _, k := range []string{"gitea_runtime_token", "forgejo_runtime_token", "token"} {
		if v := j.task.GetContext().GetFields()[k].GetStringValue(); v != "" {
			return v
		}
	}
	return ""
}

func orWhole(path string) string {
	if path == "" {
		return "the job"
	}
	return path
}

// run runs the job and returns its result. jobCtx ends on cancel (server or
// daemon); outer is the task context, to tell a cancel from a timeout.
func (j *job) run(jobCtx, outer context.Context) runnerv1.Result {
	if !j.preflight() {
		return runnerv1.Result_RESULT_FAILURE
	}
	// The job-level if: sees the needed jobs' results, as on GitHub.
	ec := j.exprContext(workflow.NeedsStatus(workflow.NeedsFromTask(j.task.GetNeeds())))
	jobCtx, cancel, err := j.withJobTimeout(jobCtx, ec)
	if err != nil {
		j.rep.Logf(-1, "::error::job %s: %v", j.wf.JobID, err)
		return runnerv1.Result_RESULT_FAILURE
	}
	defer cancel()
	if res, ok := j.evalJobIf(ec); !ok {
		return res
	}
	if j.wf.Job.Uses != "" {
		return j.runCall(jobCtx, outer)
	}
	if !j.checkSteps(jobCtx, j.exprContext(workflow.StatusSuccess)) {
		if jobCtx.Err() != nil {
			return runnerv1.Result_RESULT_CANCELLED // cancelled while actions were fetched
		}
		return runnerv1.Result_RESULT_FAILURE
	}
	if res, ok := j.containersUp(jobCtx); !ok {
		return res
	}
	status := j.runPres(jobCtx, outer, workflow.StatusSuccess)
	for i, st := range j.wf.Job.Steps {
		status = j.stepAt(jobCtx, outer, i, st, status)
	}
	status = j.runPosts(jobCtx, outer, status)
	return j.result(jobCtx, status)
}

// preflight reports a workflow that did not parse, prepares the task
// directory and env, and logs the job's banner; false fails the job.
func (j *job) preflight() bool {
	if j.parseErr != nil {
		j.rep.Logf(-1, "::error::%v", j.parseErr)
		var pe *workflow.ParseError
		if errors.As(j.parseErr, &pe) && pe.Line > 0 {
			// The forge sends each job rewritten as a workflow of its own,
			// so the line does not match the repository's file.
			j.rep.Logf(-1, "The line number is that of this job as the forge sent it (a single-job copy of the workflow), not of the workflow file in the repository: look for %s there.", orWhole(pe.Path))
		}
		return false
	}
	if err := j.prepare(); err != nil {
		j.rep.Logf(-1, "::error::prepare the job: %v", err)
		return false
	}
	// The forge writes a matrix job's display name, "feat (1)", as the
	// payload's name:; the job id alone is the same for every leg.
	title := j.wf.JobID
	if j.wf.Job.Name != "" {
		title = j.wf.Job.Name
	}
	j.rep.Logf(-1, "forgeload %s running job %q on runner %q", j.deps.Version, title, j.deps.Name)
	return true
}

// withJobTimeout bounds jobCtx by the job's own timeout-minutes, when
// shorter than runner.timeout; the caller calls cancel when the job ends.
func (j *job) withJobTimeout(jobCtx context.Context, ec *workflow.Context) (context.Context, context.CancelFunc, error) {
	d, err := ec.EvalMinutes(j.wf.Job.TimeoutMinutes)
	if err != nil {
		return jobCtx, func() {}, err
	}
	if d > 0 && d < j.deps.Timeout {
		ctx, cancel := context.WithTimeoutCause(jobCtx, d, errJobTimeout)
		return ctx, cancel, nil
	}
	return jobCtx, func() {}, nil
}

// evalJobIf evaluates the job-level if:; false means the job ends now
// with the returned result (every step reported skipped when it is false).
func (j *job) evalJobIf(ec *workflow.Context) (runnerv1.Result, bool) {
	// No if: means success(): skipped when a needed job did not succeed.
	ok, err := ec.EvalIf(j.wf.Job.If)
	if err != nil {
		j.rep.Logf(-1, "::error::job if: %v", err)
		return runnerv1.Result_RESULT_FAILURE, false
	}
	if !ok {
		j.rep.Logf(-1, "job skipped: if: %s is false", cmp.Or(j.wf.Job.If, "success() (the default)"))
		for i := range j.wf.Job.Steps {
			j.rep.StepStart(i)
			j.rep.StepEnd(i, runnerv1.Result_RESULT_SKIPPED)
		}
		return runnerv1.Result_RESULT_SKIPPED, false
	}
	return 0, true
}

// containersUp starts the job's services and job container, if it has
// any; false means the job ends now with the returned result.
func (j *job) containersUp(jobCtx context.Context) (runnerv1.Result, bool) {
	if !j.needsContainers() {
		return 0, true
	}
	if err := j.startContainers(jobCtx); err != nil {
		j.rep.Logf(-1, "::error::%v", err)
		if jobCtx.Err() != nil {
			return runnerv1.Result_RESULT_CANCELLED, false
		}
		return runnerv1.Result_RESULT_FAILURE, false
	}
	return 0, true
}

// stepAt runs step i of a job whose status so far is status: evaluates its
// if:, bounds it when the job is cancelled, runs it and records its
// result. It returns the job's status after the step.
func (j *job) stepAt(jobCtx, outer context.Context, i int, st workflow.Step, status workflow.JobStatus) workflow.JobStatus {
	cancelled := jobCtx.Err() != nil
	if cancelled {
		status = workflow.StatusCancelled
	}
	ec := j.exprContext(status)
	cond := st.If
	run, err := ec.EvalIf(cond)
	j.rep.StepStart(i)
	if err != nil {
		j.rep.Logf(i, "::error::step %q: if: %v", st.DisplayName(), err)
		j.finishStep(st, i, runnerv1.Result_RESULT_FAILURE)
		return workflow.StatusFailure
	}
	if !run {
		j.rep.StepEnd(i, runnerv1.Result_RESULT_SKIPPED)
		j.recordStep(st, "skipped", "skipped", nil)
		return status
	}
	stepCtx := jobCtx
	if cancelled {
		// A cancelled job still runs always()/cancelled() steps, on a
		// context detached from the cancel but bounded.
		if !j.deps.Cancelling && j.deps.Instance != "" {
			j.rep.StepEnd(i, runnerv1.Result_RESULT_CANCELLED)
			return status
		}
		var cancel context.CancelFunc
		stepCtx, cancel = cleanupContext(outer)
		defer cancel()
	}
	res, outputs := j.runStep(stepCtx, ec, st, i)
	return j.settleStep(ec, st, i, res, outputs, status)
}

// cleanupContext is the context of a step a cancelled job still runs:
// detached from the cancel, bounded.
func cleanupContext(outer context.Context) (context.Context, context.CancelFunc) {
	// A cancel from the forge leaves cleanup its full bound; a
	// daemon that is shutting down (outer is done) gives it less,
	// so the final report still beats the service manager's kill.
	bound := DefaultCleanupTimeout
	if outer.Err() != nil {
		bound = ShutdownCleanupTimeout
	}
	return context.WithTimeout(context.WithoutCancel(outer), bound)
}

// settleStep records the result of step i that ran, with its
// continue-on-error, and returns the job's status after it.
func (j *job) settleStep(ec *workflow.Context, st workflow.Step, i int, res runnerv1.Result, outputs map[string]string, status workflow.JobStatus) workflow.JobStatus {
	coe := j.continueOnError(ec, st, i)
	outcome := resultWord(res)
	conclusion := outcome
	if res == runnerv1.Result_RESULT_FAILURE && coe {
		conclusion = "success"
		j.rep.Logf(i, "step failed, continuing: continue-on-error is set")
	}
	j.recordStep(st, outcome, conclusion, outputs)
	j.rep.StepEnd(i, res)
	if res == runnerv1.Result_RESULT_FAILURE && !coe && status == workflow.StatusSuccess {
		status = workflow.StatusFailure
	}
	if res == runnerv1.Result_RESULT_CANCELLED {
		status = workflow.StatusCancelled
	}
	return status
}

// result ends a job whose steps ran: it notes a job timeout, evaluates the
// job's outputs and maps its status to the job's result.
func (j *job) result(jobCtx context.Context, status workflow.JobStatus) runnerv1.Result {
	if jobCtx.Err() != nil {
		status = workflow.StatusCancelled
		j.timedOut = errors.Is(context.Cause(jobCtx), errJobTimeout)
	}
	j.jobOutputs(j.exprContext(status))
	switch status {
	case workflow.StatusFailure:
		return runnerv1.Result_RESULT_FAILURE
	case workflow.StatusCancelled:
		return runnerv1.Result_RESULT_CANCELLED
	}
	return runnerv1.Result_RESULT_SUCCESS
}

func resultWord(r runnerv1.Result) string {
	return strings.ToLower(strings.TrimPrefix(r.String(), "RESULT_"))
}

func (j *job) finishStep(st workflow.Step, i int, res runnerv1.Result) {
	w := resultWord(res)
	j.recordStep(st, w, w, nil)
	j.rep.StepEnd(i, res)
}

func (j *job) recordStep(st workflow.Step, outcome, conclusion string, outputs map[string]string) {
	if st.ID == "" {
		return
	}
	if outputs == nil {
		outputs = map[string]string{}
	}
	j.steps[st.ID] = workflow.StepResult{Outcome: outcome, Conclusion: conclusion, Outputs: outputs}
}

// continueOnError evaluates the step's continue-on-error; an expression
// that fails to evaluate is reported and counts as false.
func (j *job) continueOnError(ec *workflow.Context, st workflow.Step, i int) bool {
	ok, err := ec.EvalBool(st.ContinueOnError)
	if err != nil {
		j.rep.Logf(i, "::warning::continue-on-error: %v", err)
	}
	return ok
}

// prepare makes the task directory and the job-wide env.
func (j *job) prepare() error {
	if err := os.MkdirAll(j.deps.TaskRoot, 0o700); err != nil {
		return fmt.Errorf("create work dir %s: %w (set a writable directory)", j.deps.TaskRoot, err)
	}
	dir, err := os.MkdirTemp(j.deps.TaskRoot, fmt.Sprintf("%s%d-", TaskDirPrefix, j.task.GetId()))
	if err != nil {
		return fmt.Errorf("create task dir in %s: %w", j.deps.TaskRoot, err)
	}
	j.dir = dir
	if j.td, err = jobfile.OpenDir(dir); err != nil {
		return err
	}
	j.ws = filepath.Join(dir, "workspace")
	for _, d := range []string{j.ws, filepath.Join(dir, "temp"), filepath.Join(dir, "files")} {
		if err := j.td.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	j.github["workspace"] = j.ws
	if ev, ok := j.github["event"]; ok {
		data, _ := json.Marshal(ev)
		p := filepath.Join(dir, "files", "event.json")
		if err := j.td.CreateNew(p, data, 0o600); err != nil {
			return fmt.Errorf("write event file: %w", err)
		}
		j.github["event_path"] = p
	}
	j.env = map[string]string{}
	for k, v := range j.deps.Envs {
		j.env[k] = v
	}
	ec := j.exprContext(workflow.StatusSuccess)
	for _, m := range []map[string]string{j.wf.Env, j.wf.Job.Env} {
		for _, k := range sortedKeys(m) {
			v, err := ec.Interpolate(m[k])
			if err != nil {
				return fmt.Errorf("env %s: %w", k, err)
			}
			// Later keys see this one, as on GitHub.
			j.env[k] = v
			ec.Env[k] = v
		}
	}
	return nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func (j *job) cleanup() {
	j.killGroups()
	j.stopContainers()
	if j.cacheRevoke != nil {
		j.cacheRevoke()
	}
	if j.td != nil {
		_ = j.td.Close()
	}
	if j.dir != "" {
		// os.RemoveAll follows no symlink the job left in the directory.
		_ = os.RemoveAll(j.dir)
	}
}

// exprContext builds the ${{ }} context for the current point of the job.
func (j *job) exprContext(status workflow.JobStatus) *workflow.Context {
	env := map[string]string{}
	for k, v := range j.env {
		env[k] = v
	}
	secrets := map[string]string{}
	for k, v := range j.task.GetSecrets() {
		secrets[k] = v
	}
	return &workflow.Context{
		Github:    j.github,
		Env:       env,
		Vars:      j.task.GetVars(),
		Secrets:   secrets,
		Steps:     j.steps,
		Needs:     workflow.NeedsFromTask(j.task.GetNeeds()),
		Runner:    j.runnerContext(),
		Matrix:    j.matrix(),
		Inputs:    j.inputs(),
		Status:    status,
		Job:       j.jobContext(),
		HashFiles: j.hashFilesFunc(),
	}
}

func (j *job) matrix() map[string]any {
	if j.wf != nil && j.wf.Job.Matrix != nil {
		return j.wf.Job.Matrix
	}
	return map[string]any{}
}

func (j *job) inputs() map[string]any {
	if j.callInputs != nil {
		return j.callInputs
	}
	var types map[string]string
	if j.wf != nil {
		types = j.wf.InputTypes
	}
	if in := workflow.InputsContext(j.github, types); in != nil {
		return in
	}
	return map[string]any{}
}

func (j *job) runnerContext() map[string]any {
	temp := ""
	if j.dir != "" {
		temp = filepath.Join(j.dir, "temp")
	}
	rc := workflow.RunnerContext(j.deps.Name, temp)
	rc["tool_cache"] = filepath.Join(j.deps.WorkDir, "toolcache")
	rc["debug"] = debugFlag(j.task)
	rc["environment"] = "self-hosted"
	return rc
}

func debugFlag(task *runnerv1.Task) string {
	if task.GetSecrets()["ACTIONS_STEP_DEBUG"] == "true" || task.GetVars()["ACTIONS_STEP_DEBUG"] == "true" {
		return "1"
	}
	return ""
}

// runStep runs one step and returns its result and outputs.
func (j *job) runStep(ctx context.Context, ec *workflow.Context, st workflow.Step, i int) (runnerv1.Result, map[string]string) {
	return j.execStep(ctx, ec, st, &stepJob{job: j, i: i, lim: stepLimits(st)}, j.resolveStep)
}

// execStep resolves st with resolve and runs it as sj, bounded by its
// timeout-minutes, and returns its result and outputs.
func (j *job) execStep(ctx context.Context, ec *workflow.Context, st workflow.Step, sj *stepJob, resolve func(*workflow.Context, workflow.Step, string) (step, error)) (runnerv1.Result, map[string]string) {
	name, err := ec.Interpolate(st.DisplayName())
	if err != nil {
		name = st.DisplayName()
	}
	timeout, err := ec.EvalMinutes(st.TimeoutMinutes)
	if err != nil {
		sj.Logf("::error::step %q: %v", name, err)
		return runnerv1.Result_RESULT_FAILURE, nil
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, timeout, errStepTimeout)
		defer cancel()
	}
	var res runnerv1.Result
	var outputs map[string]string
	if s, err := resolve(ec, st, name); err != nil {
		sj.Logf("::error::%v", err)
		res = runnerv1.Result_RESULT_FAILURE
	} else {
		res, outputs = s.run(ctx, sj)
	}
	if errors.Is(context.Cause(ctx), errStepTimeout) {
		sj.Logf("::error::step %q exceeded timeout-minutes (%s) and was stopped", name, st.TimeoutMinutes)
		res = runnerv1.Result_RESULT_FAILURE
	} else if ctx.Err() != nil && res != runnerv1.Result_RESULT_SUCCESS {
		res = runnerv1.Result_RESULT_CANCELLED
	}
	return res, outputs
}

var errStepTimeout = errors.New("step timeout")

// AddMask implements commandSink for the reporter.
func (j *job) AddMask(v string) {
	j.rep.AddMask(v)
}

// jobOutputs evaluates the job's outputs: and hands them to the reporter.
func (j *job) jobOutputs(ec *workflow.Context) {
	if len(j.wf.Job.Outputs) == 0 {
		return
	}
	out := map[string]string{}
	for _, k := range sortedKeys(j.wf.Job.Outputs) {
		v, err := ec.Interpolate(j.wf.Job.Outputs[k])
		if err != nil {
			j.rep.Logf(-1, "::warning::job output %s: %v", k, err)
			continue
		}
		out[k] = v
	}
	j.rep.SetOutputs(out)
}
