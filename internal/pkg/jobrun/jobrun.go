package jobrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime/debug"
	"time"

	runnerv1 "gitea.dev/actions-proto-go/runner/v1"
	"github.com/sirupsen/logrus"

	"github.com/forgeload/forgeload/internal/pkg/client"
	"github.com/forgeload/forgeload/internal/pkg/container"
	"github.com/forgeload/forgeload/internal/pkg/load/build"
	"github.com/forgeload/forgeload/internal/pkg/policy"
	"github.com/forgeload/forgeload/internal/pkg/workflow"
)

// Defaults for [Config] fields left zero.
const (
	DefaultTimeout = 3 * time.Hour // bounds one job
	// DefaultCleanupTimeout bounds each if: always()/cancelled() step that
	// runs after a cancel from the forge.
	DefaultCleanupTimeout = 5 * time.Minute
	// ShutdownCleanupTimeout bounds each such step when the daemon itself
	// cancelled the job at its shutdown deadline.
	ShutdownCleanupTimeout = 20 * time.Second
	// DefaultProgressInterval is how often a load step logs a progress
	// line.
	DefaultProgressInterval = 5 * time.Second
)

// TaskDirPrefix starts the name of every task directory a job makes in
// [Config.TaskRoot].
const TaskDirPrefix = "task-"

// Config is what a job is given by the runner that makes it: a job reads
// nothing else, and never changes it. The zero value of each field picks
// the documented default ([Config.WithDefaults]).
type Config struct {
	// Name and Version describe this runner in the job env (RUNNER_NAME,
	// GITEA_ACTIONS_RUNNER_VERSION).
	Name, Version string
	// Labels are the runner's labels (runner.labels), for docker://
	// runs-on.
	Labels []string
	// Envs are extra env vars for every job (runner.envs and env_file).
	Envs map[string]string
	// WorkDir is the runner's work directory (runner.tool_cache is in
	// it). Default: <user cache dir>/forgeload/work (e.g.
	// ~/.cache/forgeload/work), else <temp dir>/forgeload-work.
	WorkDir string
	// TaskRoot is where task directories are made, one per task, removed
	// when the task ends. Default: WorkDir.
	TaskRoot string
	// Timeout bounds one job (runner.timeout), above the job's own
	// timeout-minutes. Default 3h.
	Timeout time.Duration
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
	// CommentToken (runner.comment_token) is the token a load step posts
	// its pull request comment with when the forge refuses the job's own
	// token (a fork's pull request gets a read-only one); used for that
	// comment only, through Publisher (so only against this runner's
	// forge), and masked in every job log. Empty: none.
	CommentToken string
	// ResultsDir, for local runs (forgeload exec), is where each load
	// step's report.html and result.json are written, in a directory
	// named as its run artifact would be, since there is no forge to
	// upload them to. Empty: none are written.
	ResultsDir string
	// ProgressInterval is how often a load step logs a progress line.
	// Default 5s.
	ProgressInterval time.Duration
	// Logger receives daemon-side messages (never job output); nil discards.
	Logger *logrus.Entry
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
	// BuildNetwork gives the image builds of Docker actions (runs.image:
	// Dockerfile) the Engine's default network
	// (container.allow_build_network). Default false: RUN instructions
	// have no network.
	BuildNetwork bool
	// BuildTimeout bounds one such build (container.build_timeout), within
	// the step's and the job's timeouts. Default 10m.
	BuildTimeout time.Duration
	// ServiceTimeout bounds the wait for the job's services to become
	// healthy (container.service_timeout). Default 5m.
	ServiceTimeout time.Duration
	// Node is the Node.js that runs JavaScript actions (runner.node), a
	// path or a name on PATH; "" refuses them.
	Node string
	// ActionCache caches the remote actions jobs use
	// (runner.action_cache_dir, runner.action_cache_max_mb); share one
	// among the runner's jobs. Default (nil, or an empty Dir):
	// <WorkDir>/actions.
	ActionCache *ActionCache
	// Cache is the cache server for actions/cache (cache.enabled); nil
	// means none, and jobs get no ACTIONS_CACHE_URL.
	Cache CacheServer
}

// CacheServer lends each job the cache server's URL for its repository
// (ACTIONS_CACHE_URL) and the token in it (masked in the job's log),
// until the job calls revoke at its cleanup. Package actcache's Server is
// one.
type CacheServer interface {
	Grant(repository string) (url, token string, revoke func())
}

// WithDefaults returns c with every zero field that has a default set to
// it.
func (c Config) WithDefaults() Config {
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.WorkDir == "" {
		c.WorkDir = defaultWorkDir()
	}
	if c.TaskRoot == "" {
		c.TaskRoot = c.WorkDir
	}
	if c.Logger == nil {
		l := logrus.New()
		l.SetOutput(io.Discard)
		c.Logger = logrus.NewEntry(l)
	}
	if c.ServiceTimeout <= 0 {
		c.ServiceTimeout = DefaultServiceTimeout
	}
	if c.BuildTimeout <= 0 {
		c.BuildTimeout = DefaultBuildTimeout
	}
	if c.PullPolicy == "" {
		c.PullPolicy = container.PullMissing
	}
	if c.ProgressInterval <= 0 {
		c.ProgressInterval = DefaultProgressInterval
	}
	if c.ActionCache == nil || c.ActionCache.Dir == "" {
		c.ActionCache = &ActionCache{Dir: filepath.Join(c.WorkDir, "actions"), MaxBytes: maxBytes(c.ActionCache)}
	}
	return c
}

func maxBytes(c *ActionCache) int64 {
	if c == nil {
		return 0
	}
	return c.MaxBytes
}

func defaultWorkDir() string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "forgeload", "work")
	}
	return filepath.Join(os.TempDir(), "forgeload-work")
}

// Publisher is what a job publishes through beside its log, and fetches
// from an earlier run: the load step's report artifact, its baseline, and
// each step's job summary. The daemon's forge client is one.
type Publisher interface {
	UploadArtifact(ctx context.Context, runtimeToken, name string, data []byte) (int64, error)
	ArtifactHistory(ctx context.Context, token string, q client.HistoryQuery) ([]client.RunArtifact, error)
	UpsertComment(ctx context.Context, token, repo string, pr int64, marker, body string) (client.PullComment, error)
	UploadSummary(ctx context.Context, runtimeToken string, step int, markdown []byte) error
}

// Job is one forge task, run as a job: made by [NewJob], run once by
// [Job.Run], its files and containers removed by [Job.Cleanup].
type Job struct{ j *job }

// NewJob parses task into a job run with cfg (after
// [Config.WithDefaults]). A task that does not parse still makes a job:
// its Run reports the error.
func NewJob(cfg *Config, task *runnerv1.Task) *Job {
	return &Job{j: newJob(cfg, task)}
}

// StepCount is how many steps the job has (0 when it did not parse).
func (x *Job) StepCount() int { return x.j.stepCount() }

// Masks are the values the job's log must never show: every secret, the
// task and runtime tokens, the passwords of the proxy URLs steps inherit
// from the daemon, and the runner's comment token (Config.CommentToken).
func (x *Job) Masks() []string {
	m := x.j.masks()
	if t := x.j.deps.CommentToken; t != "" {
		m = append(m, t)
	}
	return m
}

// Run runs the job to its end, reporting through rep, and returns its
// result. jobCtx (the reporter's) ends on a cancel, from the forge or the
// daemon; outer is the task's context, to tell a cancel from the daemon's
// shutdown. The job's timeout (Config.Timeout, or its timeout-minutes)
// is a failure; a panic fails this job only.
func (x *Job) Run(jobCtx, outer context.Context, rep Reporter) runnerv1.Result {
	j := x.j
	j.rep = rep
	tctx, cancel := context.WithTimeoutCause(jobCtx, j.deps.Timeout, errJobTimeout)
	defer cancel()
	result := func() (res runnerv1.Result) {
		defer func() {
			if p := recover(); p != nil {
				j.deps.Logger.WithField("task", j.task.GetId()).Errorf("job panicked: %s\n%s", rep.Mask(fmt.Sprint(p)), debug.Stack())
				rep.Logf(-1, "::error::forgeload hit an internal error running this job (a panic: %v); the job fails, the runner keeps serving. Please report it.", p)
				res = runnerv1.Result_RESULT_FAILURE
			}
		}()
		return j.run(tctx, outer)
	}()
	if err := context.Cause(tctx); errors.Is(err, errJobTimeout) || j.timedOut {
		rep.Logf(-1, "::error::the job exceeded its time limit (runner.timeout %s, or the job's timeout-minutes) and was stopped", j.deps.Timeout)
		result = runnerv1.Result_RESULT_FAILURE
	}
	j.killGroups()
	j.reportExitedServices()
	return result
}

// Cleanup stops what the job left running and removes its containers and
// task directory; call it once the job's report is closed.
func (x *Job) Cleanup() { x.j.cleanup() }

var errJobTimeout = errors.New("job timeout")

// parseTask parses the task's workflow payload.
func parseTask(task *runnerv1.Task) (*workflow.Workflow, error) {
	return workflow.Parse(task.GetWorkflowPayload())
}
