package run

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	runnerv1 "gitea.dev/actions-proto-go/runner/v1"
	"github.com/sirupsen/logrus"

	"github.com/forgeload/forgeload/internal/pkg/load/plan"
	"github.com/forgeload/forgeload/internal/pkg/policy"
	"github.com/forgeload/forgeload/internal/pkg/report"
	"github.com/forgeload/forgeload/internal/pkg/workflow"
)

// Defaults for [Options] fields left zero.
const (
	DefaultTimeout        = 3 * time.Hour
	DefaultReportInterval = time.Second
	// DefaultCleanupTimeout bounds each if: always()/cancelled() step that
	// runs after a cancel from the forge.
	DefaultCleanupTimeout = 5 * time.Minute
	// ShutdownCleanupTimeout bounds each such step when the daemon itself
	// cancelled the job at its shutdown deadline.
	ShutdownCleanupTimeout = 20 * time.Second
)

// Options configures a [Runner]. The zero value of each field picks the
// documented default.
type Options struct {
	// Name and Version describe this runner in the job env (RUNNER_NAME,
	// GITEA_ACTIONS_RUNNER_VERSION).
	Name, Version string
	// Labels are the runner's labels (runner.labels).
	Labels []string
	// Envs are extra env vars for every job (runner.envs and env_file).
	Envs map[string]string
	// WorkDir is where job workspaces are made, one directory per task,
	// removed when the task ends. Default: <user cache dir>/forgeload/work
	// (e.g. ~/.cache/forgeload/work), else <temp dir>/forgeload-work.
	WorkDir string
	// Timeout bounds one job (runner.timeout). Default 3h.
	Timeout time.Duration
	// ReportInterval is the UpdateTask heartbeat (runner.report_interval).
	// Default 1s, so a cancel in the forge UI stops the load within ~2 s.
	ReportInterval time.Duration
	// Capabilities is the forge's X-Gitea-Actions-Capabilities value from
	// Declare; "job-summary" enables the job summary upload.
	Capabilities string
	// Cancelling is true when the runner advertised the "cancelling"
	// capability: after a cancel, if: always()/cancelled() steps still run.
	Cancelling bool
	// Instance is the forge's address, for ACTIONS_RUNTIME_URL and the job
	// summary upload; empty for local runs.
	Instance string
	// LocalRepo, for local runs (forgeload exec), is a directory that
	// actions/checkout copies into the workspace instead of fetching from a
	// forge.
	LocalRepo string
	// Policy is the admin's target policy; nil means the default policy.
	Policy *policy.Policy
	// Resolver resolves load targets at dial time; nil is the system
	// resolver. The policy checks the addresses it returns.
	Resolver *net.Resolver
	// Limits are the admin's caps on what one load step may ask for
	// (load.max_rate, load.max_concurrency, load.max_duration).
	Limits plan.Limits
	// LoadObserver makes the observer of each load step, for the daemon's
	// load metrics; nil means none. It is called once per load step.
	LoadObserver func() LoadObserver
	// Cluster coordinates load steps with distributed.workers > 1; nil
	// means no cluster is configured and such steps fail.
	Cluster ClusterCoordinator
	// ProgressInterval is how often a load step logs a progress line.
	ProgressInterval time.Duration
	// Logger receives daemon-side messages (never job output); nil discards.
	Logger *logrus.Entry
	// Observer receives job metrics; nil means none.
	Observer Observer
	// ReportObserver makes the observer of each task's reporter; nil means
	// none. It is called once per task, so per-task state (such as the
	// task's share of the buffered-rows gauge) can live in the observer.
	ReportObserver func() report.Observer
}

// Observer is told when jobs start and end (the daemon's job metrics).
type Observer interface {
	JobStarted()
	JobDone(result runnerv1.Result, d time.Duration)
}

// Client is the part of the forge client a job needs.
type Client = report.Client

// Runner runs forge tasks. It is safe for concurrent use: each Run call is
// one independent job.
type Runner struct {
	client Client
	o      Options
	load   loadFunc
}

// New returns a Runner that reports through c.
func New(c Client, o Options) *Runner {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.ReportInterval <= 0 {
		o.ReportInterval = DefaultReportInterval
	}
	if o.WorkDir == "" {
		o.WorkDir = defaultWorkDir()
	}
	if o.Logger == nil {
		l := logrus.New()
		l.SetOutput(io.Discard)
		o.Logger = logrus.NewEntry(l)
	}
	if o.ProgressInterval <= 0 {
		o.ProgressInterval = 5 * time.Second
	}
	return &Runner{client: c, o: o, load: runLoad}
}

// Run runs one task to its end and reports it. It returns an error only for
// what the forge could not be told (the final report failed); a job that
// fails is a FAILURE result, not an error.
func (r *Runner) Run(ctx context.Context, task *runnerv1.Task) error {
	start := time.Now()
	if r.o.Observer != nil {
		r.o.Observer.JobStarted()
	}
	log := r.o.Logger.WithField("task", task.GetId())
	j := newJob(r, task)
	var ro report.Observer
	if r.o.ReportObserver != nil {
		ro = r.o.ReportObserver()
	}
	rep := report.New(r.client, task.GetId(), j.stepCount(), report.Options{
		Interval: r.o.ReportInterval,
		Masks:    j.masks(),
		Logger:   log,
		Observer: ro,
		SpillDir: r.o.WorkDir,
	})
	j.rep = rep
	defer func() {
		if c, ok := ro.(interface{ Close() }); ok {
			c.Close()
		}
	}()
	// The reporter's context ends on a cancel (the forge's or the
	// daemon's); the job timeout sits below it so that a timeout is a
	// failure, not a cancel.
	jobCtx := rep.Start(ctx)
	tctx, cancel := context.WithTimeoutCause(jobCtx, r.o.Timeout, errJobTimeout)
	defer cancel()

	result := func() (res runnerv1.Result) {
		defer func() {
			if p := recover(); p != nil {
				log.Errorf("job panicked: %v\n%s", p, debug.Stack())
				rep.Logf(-1, "::error::forgeload hit an internal error running this job (a panic: %v); the job fails, the runner keeps serving. Please report it.", p)
				res = runnerv1.Result_RESULT_FAILURE
			}
		}()
		return j.run(tctx, ctx)
	}()
	if err := context.Cause(tctx); errors.Is(err, errJobTimeout) || j.timedOut {
		rep.Logf(-1, "::error::the job exceeded its time limit (runner.timeout %s, or the job's timeout-minutes) and was stopped", r.o.Timeout)
		result = runnerv1.Result_RESULT_FAILURE
	}
	j.killGroups()
	err := rep.Close(result)
	j.cleanup()
	final := result
	if sr := rep.ServerResult(); sr != runnerv1.Result_RESULT_UNSPECIFIED {
		final = sr
	}
	if r.o.Observer != nil {
		r.o.Observer.JobDone(final, time.Since(start))
	}
	if err != nil {
		log.WithError(err).Error("final report to the forge failed")
		return fmt.Errorf("task %d: final report: %w", task.GetId(), err)
	}
	log.WithField("result", strings.ToLower(strings.TrimPrefix(final.String(), "RESULT_"))).Info("task finished")
	return nil
}

func defaultWorkDir() string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "forgeload", "work")
	}
	return filepath.Join(os.TempDir(), "forgeload-work")
}

var errJobTimeout = errors.New("job timeout")

// parseTask parses the task's workflow payload.
func parseTask(task *runnerv1.Task) (*workflow.Workflow, error) {
	return workflow.Parse(task.GetWorkflowPayload())
}
