package jobrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	runnerv1 "gitea.dev/actions-proto-go/runner/v1"
	"google.golang.org/protobuf/proto"

	"github.com/forgeload/forgeload/internal/pkg/jobfile"
	"github.com/forgeload/forgeload/internal/pkg/workflow"
)

// maxCallDepth bounds how deep reusable workflows may call one another,
// the caller's workflow included, as on GitHub (10 levels).
const maxCallDepth = 10

// runCall runs a job that calls a reusable workflow (jobs.<id>.uses), as
// Gitea up to 1.26 leaves it to the runner: the called file is fetched
// from the forge, its jobs run here one after the other in the order of
// their needs, each in a task directory of its own and through the same
// steps as any job, and the workflow's outputs become this job's. The
// forge shows one job with no steps of its own, so everything is logged
// in the job's rows, each called job's lines announced by its name.
func (j *job) runCall(ctx, outer context.Context) runnerv1.Result {
	fail := func(format string, args ...any) runnerv1.Result {
		j.rep.Logf(-1, "::error::job %s calls %s: %s", j.wf.JobID, j.wf.Job.Uses, fmt.Sprintf(format, args...))
		if ctx.Err() != nil {
			return runnerv1.Result_RESULT_CANCELLED
		}
		return runnerv1.Result_RESULT_FAILURE
	}
	// The task's workflow is level 1, the one it calls level 2, and so on.
	if level := j.callDepth + 2; level > maxCallDepth {
		return fail("this call would make %d levels of workflows calling one another, more than the %d allowed; call fewer levels", level, maxCallDepth)
	}
	called, err := j.loadCalled(ctx)
	if err != nil {
		return fail("%v", err)
	}
	ec := j.exprContext(workflow.StatusSuccess)
	with, err := ec.InterpolateMap(j.wf.Job.With)
	if err != nil {
		return fail("with: %v", err)
	}
	inputs, err := called.CallInputs(with, func(d string) (string, error) { return ec.Interpolate(d) })
	if err != nil {
		return fail("%v", err)
	}
	secrets, err := j.callSecrets(ec, called)
	if err != nil {
		return fail("%v", err)
	}
	order, err := callOrder(called.Jobs)
	if err != nil {
		return fail("%v", err)
	}
	results, status := j.runCalledJobs(ctx, outer, order, inputs, secrets)
	oc := j.exprContext(status)
	oc.Jobs = results
	out := map[string]string{}
	for _, k := range slices.Sorted(maps.Keys(called.Outputs)) {
		v, err := oc.Interpolate(called.Outputs[k])
		if err != nil {
			j.rep.Logf(-1, "::warning::output %s of %s: %v", k, j.wf.Job.Uses, err)
			continue
		}
		out[k] = v
	}
	j.rep.SetOutputs(out)
	switch {
	case status == workflow.StatusCancelled || ctx.Err() != nil:
		return runnerv1.Result_RESULT_CANCELLED
	case status == workflow.StatusFailure:
		return runnerv1.Result_RESULT_FAILURE
	}
	return runnerv1.Result_RESULT_SUCCESS
}

// runCalledJobs runs the called workflow's jobs in order, each seeing the
// results and outputs of the jobs it needs, and returns every job's result
// by id and the status of the whole: failure when one failed, cancelled
// when one was cancelled (and none failed). After a cancel the jobs not
// started are cancelled without running.
func (j *job) runCalledJobs(ctx, outer context.Context, order []*workflow.Workflow, inputs map[string]any, secrets map[string]string) (map[string]workflow.NeedResult, workflow.JobStatus) {
	results := map[string]workflow.NeedResult{}
	needs := map[string]*runnerv1.TaskNeed{}
	status := workflow.StatusSuccess
	for _, w := range order {
		res := runnerv1.Result_RESULT_CANCELLED
		var outputs map[string]string
		if ctx.Err() == nil {
			res, outputs = j.runCalledJob(ctx, outer, w, inputs, secrets, needs)
		}
		j.rep.Logf(-1, "Called job %s: %s", calledName(w), resultWord(res))
		n := mergeCalledNeed(needs[w.JobID], res, outputs)
		needs[w.JobID] = n
		results[w.JobID] = workflow.NeedResult{Result: resultWord(n.GetResult()), Outputs: n.GetOutputs()}
		switch {
		case res == runnerv1.Result_RESULT_FAILURE:
			status = workflow.StatusFailure
		case res == runnerv1.Result_RESULT_CANCELLED && status == workflow.StatusSuccess:
			status = workflow.StatusCancelled
		}
	}
	return results, status
}

// mergeCalledNeed adds the result and outputs of one job of a matrix to
// what the jobs that need it see, as the forge merges a matrix's jobs: a
// failure or cancel stands over a success, later outputs win.
func mergeCalledNeed(prev *runnerv1.TaskNeed, res runnerv1.Result, outputs map[string]string) *runnerv1.TaskNeed {
	if prev == nil {
		prev = &runnerv1.TaskNeed{Result: res, Outputs: map[string]string{}}
	} else if prev.Result == runnerv1.Result_RESULT_SUCCESS || prev.Result == runnerv1.Result_RESULT_SKIPPED {
		prev.Result = res
	}
	maps.Copy(prev.Outputs, outputs)
	return prev
}

// calledName is the job's id with its matrix values, as the log names it.
func calledName(w *workflow.Workflow) string {
	return w.JobID + workflow.MatrixJob{Values: w.Job.Matrix}.Suffix()
}

// runCalledJob runs one job of the called workflow as a job of its own:
// a copy of the task with the called workflow's secrets and the results of
// the jobs it needs, its inputs, a new task directory, and a reporter that
// puts everything in the caller's rows. It returns its result and outputs.
func (j *job) runCalledJob(ctx, outer context.Context, w *workflow.Workflow, inputs map[string]any, secrets map[string]string, done map[string]*runnerv1.TaskNeed) (runnerv1.Result, map[string]string) {
	task := proto.Clone(j.task).(*runnerv1.Task)
	task.Secrets = secrets
	task.Needs = map[string]*runnerv1.TaskNeed{}
	for _, n := range w.Job.Needs {
		task.Needs[n] = done[n]
	}
	sub := &job{deps: j.deps, task: task, steps: map[string]workflow.StepResult{}, wf: w,
		github: maps.Clone(j.github), callInputs: inputs, callDepth: j.callDepth + 1}
	sub.github["job"] = w.JobID
	rep := &callReporter{Reporter: j.rep, job: calledName(w), steps: w.Job.Steps}
	sub.rep = rep
	j.rep.Logf(-1, "::group::Called job %s (%s)", calledName(w), j.wf.Job.Uses)
	defer j.rep.Logf(-1, "::endgroup::")
	res := func() runnerv1.Result {
		defer sub.cleanup()
		res := sub.run(ctx, outer)
		if sub.timedOut {
			// Its own timeout-minutes ended it: a failure, as for any job.
			j.rep.Logf(-1, "::error::called job %s exceeded its timeout-minutes and was stopped", calledName(w))
			res = runnerv1.Result_RESULT_FAILURE
		}
		sub.killGroups()
		sub.reportExitedServices()
		return res
	}()
	return res, rep.outputs
}

// callOrder orders the called workflow's jobs so that each comes after the
// jobs it needs, keeping the file's order otherwise (the jobs of a
// matrix, which share an id, stay together); a need of no job, or a
// cycle, is an error naming the job.
func callOrder(jobs []*workflow.Workflow) ([]*workflow.Workflow, error) {
	byID := map[string][]*workflow.Workflow{}
	var ids []string
	for _, w := range jobs {
		if byID[w.JobID] == nil {
			ids = append(ids, w.JobID)
		}
		byID[w.JobID] = append(byID[w.JobID], w)
	}
	for _, w := range jobs {
		for _, n := range w.Job.Needs {
			if byID[n] == nil {
				return nil, fmt.Errorf("job %s of the called workflow needs %q, which is not one of its jobs", w.JobID, n)
			}
		}
	}
	var order []*workflow.Workflow
	placed := map[string]bool{}
	for len(placed) < len(ids) {
		progress := false
		for _, id := range ids {
			if placed[id] || !allPlaced(byID[id][0].Job.Needs, placed) {
				continue
			}
			order, placed[id], progress = append(order, byID[id]...), true, true
		}
		if !progress {
			var left []string
			for _, id := range ids {
				if !placed[id] {
					left = append(left, id)
				}
			}
			return nil, fmt.Errorf("the needs: of the called workflow's jobs %s form a cycle; remove one", strings.Join(left, ", "))
		}
	}
	return order, nil
}

func allPlaced(needs []string, placed map[string]bool) bool {
	for _, n := range needs {
		if !placed[n] {
			return false
		}
	}
	return true
}

// callSecrets builds the secrets of the called workflow: all of the
// caller's with secrets: inherit, else those the job's secrets: names
// (each declared by the called workflow), evaluated; GITHUB_TOKEN and
// GITEA_TOKEN always. A required secret missing is an error.
func (j *job) callSecrets(ec *workflow.Context, called *workflow.Called) (map[string]string, error) {
	out := map[string]string{}
	for _, k := range []string{"GITHUB_TOKEN", "GITEA_TOKEN", "FORGEJO_TOKEN"} {
		if v, ok := j.task.GetSecrets()[k]; ok {
			out[k] = v
		}
	}
	if j.wf.Job.SecretsInherit {
		maps.Copy(out, j.task.GetSecrets())
	}
	for _, k := range slices.Sorted(maps.Keys(j.wf.Job.Secrets)) {
		if _, ok := called.Secrets[k]; !ok {
			return nil, fmt.Errorf("secrets.%s: the called workflow declares no secret %q under on.workflow_call.secrets; remove it, or declare it there", k, k)
		}
		v, err := ec.Interpolate(j.wf.Job.Secrets[k])
		if err != nil {
			return nil, fmt.Errorf("secrets.%s: %w", k, err)
		}
		j.rep.AddMask(v)
		out[k] = v
	}
	for _, k := range slices.Sorted(maps.Keys(called.Secrets)) {
		if _, ok := out[k]; !ok && called.Secrets[k] {
			return nil, fmt.Errorf("secret %q is required by the called workflow (on.workflow_call.secrets.%s.required); pass it under secrets:, or write secrets: inherit", k, k)
		}
	}
	return out, nil
}

// loadCalled reads and parses the workflow file the job calls: a file of
// this repository at the run's commit (from the local directory in a
// local run), or one of another repository at its ref, fetched with git
// like a remote action.
func (j *job) loadCalled(ctx context.Context) (*workflow.Called, error) {
	ref, err := workflow.ParseCallRef(j.wf.Job.Uses)
	if err != nil {
		return nil, err
	}
	var rootDir, name string
	switch {
	case ref.Local && j.deps.LocalRepo != "":
		rootDir, name = j.deps.LocalRepo, ref.Path
	default:
		r, err := j.callRepo(ref)
		if err != nil {
			return nil, err
		}
		f, err := j.fetchRepo(ctx, r, "Workflow", j.rep.Writer(-1))
		if err != nil {
			return nil, err
		}
		rootDir, name = f.root, r.name()+"/"+ref.Path+"@"+r.ref
	}
	root, err := os.OpenRoot(rootDir)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", rootDir, err)
	}
	defer root.Close()
	data, err := jobfile.ReadIn(root, ref.Path, ref.Path, workflow.MaxPayloadBytes)
	if err != nil {
		return nil, err
	}
	return workflow.ParseCalled(data, name)
}

// callRepo is the repository the called workflow is in, on its forge:
// this task's repository at the run's commit for ./path, else owner/repo
// at its ref on the forge of the task (or the URL's host).
func (j *job) callRepo(ref workflow.CallRef) (remoteRef, error) {
	server := firstNonEmptyStr(ref.Server, j.ctxString("server_url"), j.deps.Instance)
	if server == "" {
		return remoteRef{}, errors.New("a local run has no forge to fetch the workflow from; write its full URL: uses: https://host/owner/repo/.gitea/workflows/FILE.yml@ref")
	}
	owner, repo, at := ref.Owner, ref.Repo, ref.Ref
	if ref.Local {
		var ok bool
		owner, repo, ok = strings.Cut(j.ctxString("repository"), "/")
		at = j.ctxString("sha")
		if !ok || at == "" {
			return remoteRef{}, errors.New("the task names no repository and commit (github.repository, github.sha) to read ./ from")
		}
	}
	// The path is checked by ParseCallRef; parseRemoteUses checks the
	// rest as it does for an action.
	return parseRemoteUses(owner+"/"+repo+"@"+at, server)
}

// callReporter reports a called workflow's job into the caller's rows:
// the forge knows none of its steps, so step rows and states become rows
// of the job, and its outputs are kept for the caller.
type callReporter struct {
	Reporter
	job     string
	steps   []workflow.Step
	outputs map[string]string
}

// StepStart implements Reporter.
func (r *callReporter) StepStart(i int) {
	r.Reporter.Logf(-1, "[%s] step %d%s", r.job, i+1, r.stepName(i))
}

// StepEnd implements Reporter.
func (r *callReporter) StepEnd(i int, res runnerv1.Result) {
	r.Reporter.Logf(-1, "[%s] step %d%s: %s", r.job, i+1, r.stepName(i), resultWord(res))
}

// stepName is " " and the quoted name of step i as written, or "".
func (r *callReporter) stepName(i int) string {
	if i < 0 || i >= len(r.steps) {
		return ""
	}
	return fmt.Sprintf(" %q", r.steps[i].DisplayName())
}

// Logf implements Reporter.
func (r *callReporter) Logf(_ int, format string, args ...any) { r.Reporter.Logf(-1, format, args...) }

// Writer implements Reporter.
func (r *callReporter) Writer(int) io.Writer { return r.Reporter.Writer(-1) }

// SetOutputs implements Reporter.
func (r *callReporter) SetOutputs(m map[string]string) { r.outputs = m }
