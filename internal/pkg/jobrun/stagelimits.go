package jobrun

import (
	"context"
	"errors"
	"slices"

	runnerv1 "gitea.dev/actions-proto-go/runner/v1"

	"github.com/forgeload/forgeload/internal/pkg/workflow"
)

// limits is what bounds the pre or post of an action (stagedAction) and
// what forgives its failure, as GitHub's runner applies them: the
// timeout-minutes of the job's step it belongs to (the step that uses the
// action, or the composite action it is nested in), and the
// continue-on-error of that step and of each nested step down to the
// action's own. The job's own timeout bounds it in any case.
type limits struct {
	timeout string
	coe     []coeLink
}

// coeLink is a step's continue-on-error, with the context it is evaluated
// in: nil for the job's step, evaluated in the pre's or post's own
// context; a nested step's is its composite action's.
type coeLink struct {
	expr string
	ec   *workflow.Context
}

// stepLimits is the limits of the job's step st.
func stepLimits(st workflow.Step) limits {
	return limits{timeout: st.TimeoutMinutes, coe: []coeLink{{expr: st.ContinueOnError}}}
}

// nested is the limits of a step nested in the step of l, whose
// continue-on-error is expr, evaluated in ec.
func (l limits) nested(expr string, ec *workflow.Context) limits {
	return limits{timeout: l.timeout, coe: append(slices.Clone(l.coe), coeLink{expr: expr, ec: ec})}
}

// own is the limits of a nested step's pre inside its composite action's:
// its own continue-on-error (the composite's pre has the timeout).
func (l limits) own() limits {
	if len(l.coe) == 0 {
		return limits{}
	}
	return limits{coe: l.coe[len(l.coe)-1:]}
}

// forgiven reports whether a continue-on-error of l holds; ec is the
// stage's context. One that does not evaluate is reported and is false.
func (l limits) forgiven(ec *workflow.Context, sj *stepJob) bool {
	for _, c := range l.coe {
		e := c.ec
		if e == nil {
			e = ec
		}
		ok, err := e.EvalBool(c.expr)
		if err != nil {
			sj.Logf("::warning::continue-on-error: %v", err)
		}
		if ok {
			return true
		}
	}
	return false
}

// limited runs the pre or post (what) of step name with run, bounded by
// l's timeout-minutes (evaluated in ec, the stage's context), and
// returns its result: a timeout fails it, and a failure that l's
// continue-on-error forgives is a success.
func (j *job) limited(ctx context.Context, ec *workflow.Context, sj *stepJob, l limits, what, name string, run func(context.Context) runnerv1.Result) runnerv1.Result {
	res := runnerv1.Result_RESULT_FAILURE
	if d, err := ec.EvalMinutes(l.timeout); err != nil {
		sj.Logf("::error::%s of step %q: %v", what, name, err)
	} else {
		if d > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeoutCause(ctx, d, errStepTimeout)
			defer cancel()
		}
		res = run(ctx)
		if errors.Is(context.Cause(ctx), errStepTimeout) {
			sj.Logf("::error::%s of step %q exceeded the step's timeout-minutes (%s) and was stopped", what, name, l.timeout)
			res = runnerv1.Result_RESULT_FAILURE
		}
	}
	if res == runnerv1.Result_RESULT_FAILURE && l.forgiven(ec, sj) {
		sj.Logf("%s of step %q failed, continuing: continue-on-error is set", what, name)
		res = runnerv1.Result_RESULT_SUCCESS
	}
	return res
}
