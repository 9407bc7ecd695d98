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

	"github.com/forgeload/forgeload/internal/pkg/client"
	"github.com/forgeload/forgeload/internal/pkg/container"
	"github.com/forgeload/forgeload/internal/pkg/load/build"
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
	// (e.g. ~/.cache/forgeload/work), else <temp dir>/forgeload-work. With
	// a ProcessOwner, the task directories are made in a directory of
	// that registration's own in WorkDir (see [Runner.RemoveStaleTaskDirs]).
	WorkDir string
	// Timeout bounds one job (runner.timeout). Default 3h.
	Timeout time.Duration
	// ReportInterval is the UpdateTask heartbeat and the longest a log row
	// waits before it is sent (runner.report_interval). Default 1s, so a
	// cancel in the forge UI stops the load within ~2 s.
	ReportInterval time.Duration
	// CloseTimeout bounds the delivery of a task's last log rows and
	// result when it ends (runner.final_report_timeout); what the forge
	// did not take by then goes to Outbox. Default 30s
	// ([report.DefaultCloseTimeout]).
	CloseTimeout time.Duration
	// Outbox keeps the final reports the forge did not take in time, on
	// disk, until it answers again. nil: such reports are lost (logged).
	Outbox *report.Outbox
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
	// ProcessOwner, the registration's UUID in the daemon, marks every
	// process a host step starts (see package leftover), so that the next
	// daemon of the registration can stop those this one left running if
	// it is killed. Empty (forgeload exec): not marked.
	ProcessOwner string
	// Policy is the admin's target policy; nil means the default policy.
	Policy *policy.Policy
	// Resolver resolves load targets at dial time; nil is the system
	// resolver. The policy checks the addresses it returns.
	Resolver *net.Resolver
	// Limits are the admin's caps on what one load step may ask for
	// (load.max_rate, load.max_concurrency, load.max_duration).
	Limits build.Limits
	// LoadObserver makes the observer of each load step, for the daemon's
	// load metrics; nil means none. It is called once per load step.
	LoadObserver func() LoadObserver
	// RunObserver makes the observer of each distributed load step this
	// runner coordinates; nil means none. It is given the merged seconds
	// of the whole run, so it must not feed the daemon's load metrics
	// (this host's segment does, through its LoadObserver): it is for
	// views of the run, such as the jobs page.
	RunObserver func() LoadObserver
	// Cluster coordinates load steps with distributed.workers > 1; nil
	// means no cluster is configured and such steps fail.
	Cluster ClusterCoordinator
	// Publisher uploads run artifacts and job summaries and fetches
	// baselines (the daemon's forge client); nil means none, as for
	// forgeload exec, and the steps skip them with a notice.
	Publisher Publisher
	// ProgressInterval is how often a load step logs a progress line.
	ProgressInterval time.Duration
	// Logger receives daemon-side messages (never job output); nil discards.
	Logger *logrus.Entry
	// Observer receives job metrics; nil means none.
	Observer Observer
	// Containers is the Docker Engine for services: and job containers;
	// nil means none, and such jobs fail with ContainersErr as the reason.
	Containers Containers
	// ContainersErr says why Containers is nil, for the job's message.
	ContainersErr error
	// PullPolicy says when images are pulled (container.pull_policy).
	// Default missing.
	PullPolicy container.PullPolicy
	// ValidVolumes are globs of the host paths and named volumes that
	// services: and container: may mount (container.valid_volumes); none
	// by default.
	ValidVolumes []string
	// OptionsPolicy is what services: and container: options may add
	// beyond Docker's defaults (container.allowed_capabilities and
	// container.allowed_options); the zero value allows nothing.
	OptionsPolicy container.Policy
	// ServiceTimeout bounds the wait for the job's services to become
	// healthy (container.service_timeout). Default 5m.
	ServiceTimeout time.Duration
	// ReportObserver makes the observer of each task's reporter; nil means
	// none. It is called once per task, so per-task state (such as the
	// task's share of the buffered-rows gauge) can live in the observer.
	ReportObserver func() ReportObserver
}

// ReportObserver observes one task's reporter. Close is called once, when
// the task has ended and its reporter is closed.
type ReportObserver interface {
	report.Observer
	Close()
}

// Observer is told when jobs start and end (the daemon's job metrics).
type Observer interface {
	JobStarted()
	JobDone(result runnerv1.Result, d time.Duration)
}

// Client is the part of the forge client a job needs.
type Client = report.Client

// Publisher is the part of the forge client that publishes a job's results
// beside its log, and fetches those of an earlier run: the load step's
// report artifact, its baseline, and each step's job summary.
type Publisher interface {
	UploadArtifact(ctx context.Context, runtimeToken, name string, data []byte) (int64, error)
	LatestArtifact(ctx context.Context, token, repo, branch, name string, exclude int64) ([]byte, int64, error)
	UploadSummary(ctx context.Context, runtimeToken string, step int, markdown []byte) error
}

var _ Publisher = (*client.Client)(nil)

// Runner runs forge tasks. It is safe for concurrent use: each Run call is
// one independent job.
type Runner struct {
	o    Options
	deps jobDeps
}

// jobDeps is what a job is given by the runner that makes it, fixed when
// the runner is made (New applies the defaults): a job reads nothing else
// of its runner, and never changes these.
type jobDeps struct {
	client        Client
	publisher     Publisher // nil: none
	name, version string    // RUNNER_NAME, GITEA_ACTIONS_RUNNER_VERSION
	labels        []string  // the runner's labels, for docker:// runs-on
	envs          map[string]string
	workDir       string
	taskRoot      string        // where task directories are made: taskRoot(workDir, processOwner)
	timeout       time.Duration // runner.timeout, above timeout-minutes
	capabilities  string        // the forge's, from Declare
	cancelling    bool
	instance      string // the forge's address; empty for local runs
	localRepo     string // what actions/checkout copies in a local run
	processOwner  string // marks host steps' processes; empty: not marked
	log           *logrus.Entry
	containers    containerDeps
	load          loadDeps
}

// containerDeps are what services: and container: need.
type containerDeps struct {
	eng            Containers // nil: none, for the reason in err
	err            error
	pull           container.PullPolicy
	validVolumes   []string
	policy         container.Policy
	serviceTimeout time.Duration
}

// loadDeps are what forgeload/load steps need.
type loadDeps struct {
	run              loadFunc // runLoad; a field so tests can swap it
	policy           *policy.Policy
	resolver         *net.Resolver
	limits           build.Limits
	observer         func() LoadObserver
	runObserver      func() LoadObserver
	cluster          ClusterCoordinator
	progressInterval time.Duration
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
	if o.ServiceTimeout <= 0 {
		o.ServiceTimeout = DefaultServiceTimeout
	}
	if o.PullPolicy == "" {
		o.PullPolicy = container.PullMissing
	}
	if o.ProgressInterval <= 0 {
		o.ProgressInterval = 5 * time.Second
	}
	return &Runner{o: o, deps: jobDeps{
		client:       c,
		publisher:    o.Publisher,
		name:         o.Name,
		version:      o.Version,
		labels:       o.Labels,
		envs:         o.Envs,
		workDir:      o.WorkDir,
		taskRoot:     taskRoot(o.WorkDir, o.ProcessOwner),
		timeout:      o.Timeout,
		capabilities: o.Capabilities,
		cancelling:   o.Cancelling,
		instance:     o.Instance,
		localRepo:    o.LocalRepo,
		processOwner: o.ProcessOwner,
		log:          o.Logger,
		containers: containerDeps{
			eng:            o.Containers,
			err:            o.ContainersErr,
			pull:           o.PullPolicy,
			validVolumes:   o.ValidVolumes,
			policy:         o.OptionsPolicy,
			serviceTimeout: o.ServiceTimeout,
		},
		load: loadDeps{
			run:              runLoad,
			policy:           o.Policy,
			resolver:         o.Resolver,
			limits:           o.Limits,
			observer:         o.LoadObserver,
			runObserver:      o.RunObserver,
			cluster:          o.Cluster,
			progressInterval: o.ProgressInterval,
		},
	}}
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
	j := newJob(&r.deps, task)
	var ro ReportObserver
	if r.o.ReportObserver != nil {
		ro = r.o.ReportObserver()
	}
	rep := report.New(r.deps.client, task.GetId(), j.stepCount(), r.reportOptions(j.masks(), log, ro))
	j.rep = rep
	defer func() {
		if ro != nil {
			ro.Close()
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
				log.Errorf("job panicked: %s\n%s", rep.Mask(fmt.Sprint(p)), debug.Stack())
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
	j.reportExitedServices()
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

// reportOptions configures a task's reporter. runner.report_interval
// governs both the heartbeat and how long a log row may wait, as in Gitea's
// runner; a step change still sends at once.
func (r *Runner) reportOptions(masks []string, log *logrus.Entry, ro report.Observer) report.Options {
	return report.Options{
		Interval:     r.o.ReportInterval,
		LogInterval:  r.o.ReportInterval,
		CloseTimeout: r.o.CloseTimeout,
		Masks:        masks,
		Logger:       log,
		Observer:     ro,
		SpillDir:     r.o.WorkDir,
		Outbox:       r.o.Outbox,
	}
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
