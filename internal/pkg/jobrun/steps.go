package jobrun

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	runnerv1 "gitea.dev/actions-proto-go/runner/v1"

	"github.com/forgeload/forgeload/internal/pkg/workflow"
)

// step is one step of a job of a kind this runner runs, with its fields
// resolved (every ${{ }} evaluated, every value checked) once, against the
// context of the moment the step starts, before anything runs. A kind is
// one file: its type, its constructor (called by resolveStep) and its run.
type step interface {
	// run runs the step in j and returns its result and outputs.
	run(ctx context.Context, j *stepJob) (runnerv1.Result, map[string]string)
}

// stepJob is the job as one step sees it while it runs: the job's task
// directory, config, env and containers, and the step's own index and log.
// A step logs through it (Logf, Writer), never through the reporter with
// an index of its own.
type stepJob struct {
	*job
	i int // the step's index in the job: its log, files and summary
	// htmlOutput is a load step's html_output: where in the workspace its
	// report is written (see writeHTMLOutput).
	htmlOutput string
	// sub names a step inside a composite action for its files
	// ("2.0.1": step 1 of the action that step 0 of step 2's uses); ""
	// for a step of the job. depth is how deep it is nested.
	sub   string
	depth int
	// lim is what bounds the pre and post of the action (stagedAction) this
	// step runs (nodeaction.go): its job step's timeout-minutes, and the
	// continue-on-error of that step and of each step down to this one.
	lim limits
	// inLocal is the uses: of the local composite action this step is
	// nested in, if any: an action there has no pre at the job's start.
	inLocal string
}

// fileID names the step's files in the task directory: its index, or
// the path of a step inside composite actions.
func (j *stepJob) fileID() string {
	if j.sub != "" {
		return j.sub
	}
	return strconv.Itoa(j.i)
}

// Logf writes one row to the step's log.
func (j *stepJob) Logf(format string, args ...any) { j.rep.Logf(j.i, format, args...) }

// Writer is the step's log as a stream: each line a row.
func (j *stepJob) Writer() io.Writer { return j.rep.Writer(j.i) }

// Reporter is where a job's log, step states, outputs and masks go: the
// task's report to the forge (package report's Reporter). Step -1 is the job's
// own rows, before and after its steps.
type Reporter interface {
	// Context ends when the task is cancelled.
	Context() context.Context
	StepStart(step int)
	StepEnd(step int, res runnerv1.Result)
	Logf(step int, format string, args ...any)
	Writer(step int) io.Writer
	// AddMask masks v in every row from now on; AddJobMask is the same
	// for a value the job asked for (::add-mask::), which is capped.
	AddMask(v string)
	AddJobMask(v string) error
	// Mask returns s as the log would show it.
	Mask(s string) string
	SetOutputs(outputs map[string]string)
}

// The step kinds.
var (
	_ step = (*shellStep)(nil)
	_ step = (*checkoutStep)(nil)
	_ step = (*loadStep)(nil)
	_ step = (*compositeStep)(nil)
	_ step = (*nodeStep)(nil)
	_ step = (*dockerStep)(nil)
	_ step = unsupportedStep{}
)

// usesKinds are the uses: actions this runner runs natively, by name in
// lower case, each with the constructor that resolves its step against
// the context of the moment it starts. Adding a kind is its file (its type,
// constructor and run) and its line here.
var usesKinds = map[string]func(ec *workflow.Context, st workflow.Step) (step, error){
	"actions/checkout": func(ec *workflow.Context, st workflow.Step) (step, error) { return newCheckoutStep(ec, st) },
	"forgeload/load":   func(ec *workflow.Context, st workflow.Step) (step, error) { return newLoadStep(ec, st) },
}

// resolveStep returns st as a step of its kind, resolved against ec. name
// is the step's display name, for messages. The error is the whole
// message, for the step's ::error:: row.
func (j *job) resolveStep(ec *workflow.Context, st workflow.Step, name string) (step, error) {
	if st.Run != "" {
		s, err := j.newShellStep(ec, st)
		if err != nil {
			return nil, fmt.Errorf("step %q: %w", st.DisplayName(), err)
		}
		return s, nil
	}
	if strings.HasPrefix(st.Uses, "docker://") {
		s, err := newDockerStep(ec, st)
		if err != nil {
			return nil, fmt.Errorf("step %q: %w", name, err)
		}
		return s, nil
	}
	if isLocalAction(st.Uses) || j.actions[st.Uses] != nil {
		s, err := j.newCompositeStep(ec, st)
		if err != nil {
			return nil, fmt.Errorf("step %q: uses: %s: %w", name, st.Uses, err)
		}
		return s, nil
	}
	action, _ := workflow.UsesRef(st.Uses)
	action = strings.ToLower(action)
	if resolve, ok := usesKinds[action]; ok {
		s, err := resolve(ec, st)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", action, err)
		}
		return s, nil
	}
	return unsupportedStep{name: name, uses: st.Uses}, nil
}

// unsupportedStep is a uses: step of an action this runner does not run:
// it fails, saying what the runner runs instead.
type unsupportedStep struct{ name, uses string }

func (s unsupportedStep) run(_ context.Context, j *stepJob) (runnerv1.Result, map[string]string) {
	why, instead := usesSupport(s.uses)
	if why == "" {
		why, instead = "the action was not fetched when the job started", "please report this"
	}
	j.Logf("::error::step %q uses %q, which this runner does not support: %s; %s", s.name, s.uses, why, instead)
	return runnerv1.Result_RESULT_FAILURE, nil
}

func (s *checkoutStep) run(ctx context.Context, j *stepJob) (runnerv1.Result, map[string]string) {
	return s.checkout(ctx, j), nil
}
