package run

import (
	"context"
	"fmt"
	"strings"
	"time"

	runnerv1 "gitea.dev/actions-proto-go/runner/v1"
	"github.com/sirupsen/logrus"

	"github.com/forgeload/forgeload/internal/pkg/client"
	"github.com/forgeload/forgeload/internal/pkg/jobrun"
	"github.com/forgeload/forgeload/internal/pkg/report"
)

// DefaultReportInterval is ReportInterval's default; [jobrun.Config] has
// the others.
const DefaultReportInterval = time.Second

// Options configures a [Runner]: the executor's [jobrun.Config], which
// every job is given as it is, and the task's reporting. The zero value of
// each field picks the documented default. With a ProcessOwner, the task
// directories are made in a directory of that registration's own in
// WorkDir (see [Runner.RemoveStaleTaskDirs]).
type Options struct {
	jobrun.Config
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
	// Observer receives job metrics; nil means none.
	Observer Observer
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

// The executor's interfaces, which the daemon implements.
type (
	// Publisher publishes a job's results beside its log; see
	// [jobrun.Publisher].
	Publisher = jobrun.Publisher
	// Containers is the Docker Engine of services: and job containers;
	// see [jobrun.Containers].
	Containers = jobrun.Containers
	// LoadObserver receives what load steps do; see [jobrun.LoadObserver].
	LoadObserver = jobrun.LoadObserver
	// ClusterCoordinator runs distributed load steps; see
	// [jobrun.ClusterCoordinator].
	ClusterCoordinator = jobrun.ClusterCoordinator
)

var (
	_ Publisher       = (*client.Client)(nil)
	_ jobrun.Reporter = (*report.Reporter)(nil)
)

// Runner runs forge tasks. It is safe for concurrent use: each Run call is
// one independent job.
type Runner struct {
	o      Options
	client Client
}

// New returns a Runner that reports through c.
func New(c Client, o Options) *Runner {
	if o.ReportInterval <= 0 {
		o.ReportInterval = DefaultReportInterval
	}
	taskRootSet := o.TaskRoot != ""
	o.Config = o.Config.WithDefaults()
	if !taskRootSet {
		o.TaskRoot = taskRoot(o.WorkDir, o.ProcessOwner)
	}
	return &Runner{o: o, client: c}
}

// ReadEnvFile reads runner.env_file; see [jobrun.ReadEnvFile].
func ReadEnvFile(path string) (map[string]string, error) { return jobrun.ReadEnvFile(path) }

// Run runs one task to its end and reports it. It returns an error only for
// what the forge could not be told (the final report failed); a job that
// fails is a FAILURE result, not an error.
func (r *Runner) Run(ctx context.Context, task *runnerv1.Task) error {
	start := time.Now()
	if r.o.Observer != nil {
		r.o.Observer.JobStarted()
	}
	log := r.o.Logger.WithField("task", task.GetId())
	j := jobrun.NewJob(&r.o.Config, task)
	var ro ReportObserver
	if r.o.ReportObserver != nil {
		ro = r.o.ReportObserver()
	}
	rep := report.New(r.client, task.GetId(), j.StepCount(), r.reportOptions(j.Masks(), log, ro))
	defer func() {
		if ro != nil {
			ro.Close()
		}
	}()
	// The reporter's context ends on a cancel (the forge's or the
	// daemon's); the job timeout sits below it so that a timeout is a
	// failure, not a cancel.
	result := j.Run(rep.Start(ctx), ctx, rep)
	err := rep.Close(result)
	j.Cleanup()
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
