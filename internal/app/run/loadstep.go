package run

import (
	"context"

	runnerv1 "gitea.dev/actions-proto-go/runner/v1"

	"github.com/forgeload/forgeload/internal/pkg/workflow"
)

// loadFunc runs a forgeload/load step; a field so tests can swap it.
type loadFunc func(ctx context.Context, j *job, ec *workflow.Context, st workflow.Step, i int) (runnerv1.Result, map[string]string)

func runLoad(ctx context.Context, j *job, ec *workflow.Context, st workflow.Step, i int) (runnerv1.Result, map[string]string) {
	j.rep.Logf(i, "::error::the load engine is not wired yet")
	return runnerv1.Result_RESULT_FAILURE, nil
}

func (j *job) loadStep(ctx context.Context, ec *workflow.Context, st workflow.Step, i int) (runnerv1.Result, map[string]string) {
	return j.r.load(ctx, j, ec, st, i)
}
