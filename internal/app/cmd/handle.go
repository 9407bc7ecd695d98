package cmd

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"connectrpc.com/connect"
	runnerv1 "gitea.dev/actions-proto-go/runner/v1"
	"github.com/sirupsen/logrus"

	"github.com/forgeload/forgeload/internal/app/poll"
	"github.com/forgeload/forgeload/internal/pkg/backoff"
	"github.com/forgeload/forgeload/internal/pkg/client"
	"github.com/forgeload/forgeload/internal/pkg/config"
)

// `forgeload daemon --handle H` is forgeload's side of Forgejo 15's
// autoscaler flow, as `forgejo-runner one-job --handle H` is Forgejo
// Runner's: an autoscaler reads a waiting job's handle from Forgejo's
// runner jobs list, starts a runner for it, and that runner takes exactly
// that job through FetchSingleTask, runs it and exits.

// jobsListHint says where Forgejo lists the waiting jobs and their handles.
const jobsListHint = "Forgejo lists the waiting jobs with their handles at GET /api/v1/repos/{owner}/{repo}/actions/runners/jobs (also /api/v1/orgs/{org}/…, /api/v1/user/… and /api/v1/admin/actions/runners/jobs)"

// fetchHandle takes the job with handle h: it calls FetchSingleTask until the
// forge answers, retrying (with the same request key, so that a task the
// forge assigned in a call whose answer was lost comes back) while the forge
// cannot be reached, each call bounded by timeout. It returns the task; nil
// and no error when ctx ended first; an error when the forge has no such
// job for this runner, does not know the runner (wrapping
// [poll.ErrUnregistered]), or does not serve FetchSingleTask (exit 2).
func fetchHandle(ctx context.Context, cl *client.Client, h string, labels []string, timeout, base, ceiling time.Duration, ready *readiness, log *logrus.Entry) (*runnerv1.Task, error) {
	log = log.WithField("handle", h)
	log.Info("fetching the job with this handle (FetchSingleTask)")
	for n := 1; ; n++ {
		fctx, cancel := context.WithTimeout(ctx, timeout)
		res, err := cl.FetchSingleTask(fctx, connect.NewRequest(&client.FetchSingleTaskRequest{Handle: h}))
		cancel()
		switch {
		case err == nil && res.Msg.Task != nil:
			return res.Msg.Task, nil
		case err == nil:
			return nil, fmt.Errorf("daemon --handle %s: the forge has no job with this handle for this runner to take: the handle is unknown (mistyped, or of an earlier attempt of the job), its job already went to a runner or was cancelled, or the job's runs-on labels are not all among this runner's labels [%s]. %s", h, strings.Join(config.LabelNames(labels), ", "), jobsListHint)
		case ctx.Err() != nil:
			return nil, nil
		case client.IsUnauthenticated(err):
			return nil, fmt.Errorf("daemon --handle %s: %w (forge said: %w)", h, poll.ErrUnregistered, err)
		case connect.CodeOf(err) == connect.CodeUnimplemented:
			return nil, withCode(ExitBadInput, fmt.Errorf("daemon --handle %s: the forge does not serve FetchSingleTask (%w): job handles need Forgejo 15 or later; on Gitea or an older Forgejo, drop --handle (`daemon --once` takes the oldest waiting job the runner's labels match)", h, err))
		case !client.Retryable(err) && !errors.Is(err, context.DeadlineExceeded):
			return nil, fmt.Errorf("daemon --handle %s: fetch the job: %w", h, err)
		}
		ready.set(fmt.Errorf("fetching the job with handle %s: %w", h, err))
		wait := backoff.Jitter(poll.Interval(n, base, ceiling), rand.Float64())
		log.WithError(err).Warnf("fetching the job failed; retrying in %s with the same request key", wait.Round(time.Millisecond))
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, nil
		case <-t.C:
		}
	}
}

// handedTask is the poll.Fetcher of `daemon --handle`: it hands the poller
// the task FetchSingleTask took on its first fetch, and nothing after.
type handedTask struct {
	mu   sync.Mutex
	task *runnerv1.Task
}

var _ poll.Fetcher = (*handedTask)(nil)

func (h *handedTask) FetchTask(context.Context, *connect.Request[runnerv1.FetchTaskRequest]) (*connect.Response[runnerv1.FetchTaskResponse], error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	t := h.task
	h.task = nil
	return connect.NewResponse(&runnerv1.FetchTaskResponse{Task: t, TasksVersion: 1}), nil
}
