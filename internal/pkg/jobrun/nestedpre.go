package jobrun

import (
	"context"
	"fmt"

	runnerv1 "gitea.dev/actions-proto-go/runner/v1"

	"github.com/forgeload/forgeload/internal/pkg/workflow"
)

// nestedPre reports whether the composite action a, depth deep, nests a
// JavaScript action with a pre: or a Docker action with a pre-entrypoint
// through composite actions from
// repositories: then a has a pre of its own, which runs theirs, as on
// GitHub. Only actions fetched when the job started count: a local
// action is not there then.
func (j *job) nestedPre(a *workflow.Action, depth int) bool {
	if depth > MaxActionDepth {
		return false
	}
	for _, st := range a.Runs.Steps {
		f := j.actions[st.Uses]
		if st.Uses == "" || f == nil {
			continue
		}
		na, _, err := j.loadAction(f.root, f.ref.path, f.ref.name()+"@"+f.ref.ref+": ")
		switch {
		case err != nil:
			continue // the step's to report when it runs
		case preScript(na) != "":
			return true
		case na.Runs.Using == "composite" && j.nestedPre(na, depth+1):
			return true
		}
	}
	return false
}

// compositePres is the pre of c, a composite action from a repository
// that step key (a job's step, or a nested one) uses, depth deep, as
// GitHub's runner runs it when the job starts: the pre of each
// JavaScript action from a repository among c's steps, and that of each
// composite action from a repository among them that nests one, in the
// order of c's steps (a Docker action's pre-entrypoint as a JavaScript
// action's pre), each when its pre-if holds for status, the job's
// status as c's pre started (in a pre, success() and failure() look at
// the job's status, not the composite action's, as GitHub's
// SuccessFunction does; the step's own if: is for its main), with its
// with: and env: evaluated in c's context (c's inputs; none of c's steps
// has run), and a failure forgiven by that step's continue-on-error. lim
// is the limits of step key, for the posts the pres register. It returns
// c's result.
func (j *job) compositePres(ctx context.Context, sj *stepJob, c *compositeStep, key string, lim limits, depth int, status workflow.JobStatus) runnerv1.Result {
	cr := &compositeRun{s: c, j: sj, steps: map[string]workflow.StepResult{}, status: status}
	result := workflow.StatusSuccess
	for k, st := range c.action.Runs.Steps {
		if st.Uses == "" || j.actions[st.Uses] == nil {
			continue
		}
		if ctx.Err() != nil {
			cr.status = workflow.StatusCancelled
		}
		ec := cr.context()
		s, err := j.newCompositeStep(ec, st)
		if err != nil {
			continue // the step's to report when it runs
		}
		nkey, nlim := fmt.Sprintf("%s.%d", key, k), lim.nested(st.ContinueOnError, ec)
		res := runnerv1.Result_RESULT_SKIPPED
		switch s := s.(type) {
		case *compositeStep:
			if depth < MaxActionDepth && j.nestedPre(s.action, depth+1) {
				sj.Logf("Pre %s", s.name)
				res = j.compositePres(ctx, sj, s, nkey, nlim, depth+1, cr.status)
				if res == runnerv1.Result_RESULT_FAILURE && nlim.own().forgiven(ec, sj) {
					sj.Logf("pre of step %q failed, continuing: continue-on-error is set", s.name)
					res = runnerv1.Result_RESULT_SUCCESS
				}
			}
		case stagedAction:
			if _, _, a := s.meta(); a != nil && preScript(a) != "" {
				psj := &stepJob{job: j, i: -1, sub: "pre-" + nkey}
				res = j.runStage(ctx, ec, s, psj, preStage(a, nlim.own(), nlim), nkey)
			}
		}
		result = afterStage(result, res)
	}
	switch result {
	case workflow.StatusFailure:
		return runnerv1.Result_RESULT_FAILURE
	case workflow.StatusCancelled:
		return runnerv1.Result_RESULT_CANCELLED
	}
	return runnerv1.Result_RESULT_SUCCESS
}
