package jobrun

import (
	"context"
	"fmt"
	"strings"

	runnerv1 "gitea.dev/actions-proto-go/runner/v1"

	"github.com/forgeload/forgeload/internal/pkg/workflow"
)

// step is one step of a job of a kind this runner runs, with its fields
// resolved (every ${{ }} evaluated, every value checked) once, against the
// context of the moment the step starts, before anything runs.
type step interface {
	// run runs the step as step i of j and returns its result and outputs.
	run(ctx context.Context, j *job, i int) (runnerv1.Result, map[string]string)
}

// The step kinds.
var (
	_ step = (*shellStep)(nil)
	_ step = (*checkoutStep)(nil)
	_ step = (*loadStep)(nil)
	_ step = unsupportedStep{}
)

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
	action, _ := workflow.UsesRef(st.Uses)
	switch strings.ToLower(action) {
	case "actions/checkout":
		s, err := newCheckoutStep(ec, st)
		if err != nil {
			return nil, fmt.Errorf("actions/checkout: %w", err)
		}
		return s, nil
	case "forgeload/load":
		s, err := newLoadStep(ec, st)
		if err != nil {
			return nil, fmt.Errorf("forgeload/load: %w", err)
		}
		return s, nil
	}
	return unsupportedStep{name: name, uses: st.Uses}, nil
}

// unsupportedStep is a uses: step of an action this runner does not run:
// it fails, saying what the runner runs instead.
type unsupportedStep struct{ name, uses string }

func (s unsupportedStep) run(_ context.Context, j *job, i int) (runnerv1.Result, map[string]string) {
	j.rep.Logf(i, "::error::step %q uses %q, which this runner does not support. forgeload runs run: steps, uses: actions/checkout@<ref> and uses: forgeload/load@<ref>; replace this step with one of those or a run: script.", s.name, s.uses)
	return runnerv1.Result_RESULT_FAILURE, nil
}

func (s *checkoutStep) run(ctx context.Context, j *job, i int) (runnerv1.Result, map[string]string) {
	return s.checkout(ctx, j, i), nil
}
