package cmd

import (
	"context"
	"errors"
	"fmt"
	"github.com/forgeload/forgeload/internal/pkg/jobrun"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"connectrpc.com/connect"
	runnerv1 "gitea.dev/actions-proto-go/runner/v1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"

	"github.com/forgeload/forgeload/internal/app/poll"
	"github.com/forgeload/forgeload/internal/app/run"
	"github.com/forgeload/forgeload/internal/pkg/backoff"
	"github.com/forgeload/forgeload/internal/pkg/client"
	"github.com/forgeload/forgeload/internal/pkg/config"
	"github.com/forgeload/forgeload/internal/pkg/container"
	"github.com/forgeload/forgeload/internal/pkg/leftover"
	"github.com/forgeload/forgeload/internal/pkg/load/build"
	"github.com/forgeload/forgeload/internal/pkg/load/resultview"
	"github.com/forgeload/forgeload/internal/pkg/loadrun"
	"github.com/forgeload/forgeload/internal/pkg/metrics"
	"github.com/forgeload/forgeload/internal/pkg/policy"
	"github.com/forgeload/forgeload/internal/pkg/report"
	"github.com/forgeload/forgeload/internal/pkg/ver"
)

type daemonFlags struct {
	once   bool
	handle string
}

func newDaemonCmd(g *globalFlags) *cobra.Command {
	f := &daemonFlags{}
	c := &cobra.Command{
		Use:   "daemon",
		Short: "Poll the forge for jobs and run them",
		Long: `daemon loads the config and the registration file, declares this runner's
labels and capabilities to the forge, then polls for jobs and runs up to
runner.capacity of them at once.

The first SIGTERM or SIGINT stops polling at once and lets running jobs finish
for up to runner.shutdown_timeout; then they are cancelled and reported as
cancelled. A second signal cancels them at once.

--handle H takes only the waiting job whose handle is H (Forgejo 15 and
later, as forgejo-runner one-job --handle: an autoscaler reads the handle
from Forgejo's runner jobs list), runs it and exits 0; it fails at once when
the forge has no such job for this runner.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if c.Flags().Changed("handle") && strings.TrimSpace(f.handle) == "" {
				return withCode(ExitBadInput, errors.New("daemon: --handle is empty: pass the handle Forgejo lists for the waiting job (GET /api/v1/repos/{owner}/{repo}/actions/runners/jobs, field \"handle\"), or drop --handle"))
			}
			f.handle = strings.TrimSpace(f.handle)
			return runDaemon(c.Context(), g, f, c.ErrOrStderr())
		},
	}
	c.Flags().BoolVar(&f.once, "once", false, "run one job, then exit")
	c.Flags().StringVar(&f.handle, "handle", "", "take only the waiting job with this handle (Forgejo 15), run it, then exit")
	return c
}

// newLogger builds the daemon's logger from the log section.
func newLogger(cfg *config.Config, w io.Writer) *logrus.Logger {
	l := logrus.New()
	l.SetOutput(w)
	if lvl, err := logrus.ParseLevel(cfg.Log.Level); err == nil {
		l.SetLevel(lvl)
	}
	if cfg.Log.Format == "json" {
		l.SetFormatter(&logrus.JSONFormatter{})
	} else {
		l.SetFormatter(&logrus.TextFormatter{FullTimestamp: true, DisableColors: true})
	}
	return l
}

// runDaemon is `forgeload daemon`: a [Daemon] run until the first signal
// (which cancels ctx, see [Main]) or until polling ends by itself, then shut
// down within runner.shutdown_timeout; a second signal cuts the drain short.
func runDaemon(ctx context.Context, g *globalFlags, f *daemonFlags, stderr io.Writer) error {
	// Count signals ourselves: the first one also cancels ctx (Main's
	// NotifyContext), which stops polling; the second forces the shutdown.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)

	d, err := newDaemon(g.config, f.once, stderr)
	if err != nil {
		return err
	}
	d.handle = f.handle
	runErr := d.Run(ctx)

	grace := d.cfg.Runner.ShutdownTimeout
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	var watched chan struct{}
	if ctx.Err() != nil && d.polled() {
		d.log.Infof("shutting down: polling stopped; running jobs get up to %s (runner.shutdown_timeout) to finish; send the signal again to cancel them now", grace)
		watched = make(chan struct{})
		go func() {
			defer close(watched)
			// The first signal is the one that cancelled ctx; wait for one more.
			for n := 0; ; {
				select {
				case <-sigs:
					if n++; n >= 2 {
						d.log.Warn("second signal: cancelling running jobs now")
						cancel()
						return
					}
				case <-sctx.Done():
					return
				}
			}
		}()
	}
	// Polling ended by itself (--once, an ephemeral runner, the forge no
	// longer knowing us) or by the signal: running jobs may end either way.
	if err := d.Shutdown(sctx); err != nil {
		d.log.WithError(err).Warn("running jobs were cancelled (shutdown deadline or second signal); they reported CANCELLED")
	}
	cancel()
	if watched != nil {
		<-watched
	}
	if runErr != nil && !errors.Is(runErr, context.Canceled) {
		return runErr
	}
	d.log.Info("forgeload stopped")
	return nil
}

// Daemon is one life of `forgeload daemon`: the config and registration it
// was made from, and what [Daemon.Run] starts (the Docker Engine client, the
// metrics server, the outbox of kept final reports, the cluster link, the
// task runner and the poller), which [Daemon.Shutdown] stops. It holds the
// registration lock from [newDaemon] until Shutdown returns.
type Daemon struct {
	cfg    *config.Config
	reg    *config.Registration
	labels []string // declared labels; Run drops docker:// ones without an Engine
	once   bool
	handle string // daemon --handle: take that job through FetchSingleTask, then exit
	log    *logrus.Entry
	cl     *client.Client
	unlock func() error

	// Set by Run as it starts each piece; Shutdown stops what is set.
	eng      *container.Engine
	engErr   error // why eng is nil, for the jobs that need containers
	link     *clusterLink
	stopPool context.CancelFunc
	stopBg   context.CancelFunc // the metrics server and the outbox
	cache    jobrun.CacheServer // the cache for actions/cache; nil when off
	bg       sync.WaitGroup
	poller   *poll.Poller
}

// newDaemon reads the config at cfgPath (with FORGELOAD_* applied) and the
// registration file it names, takes the registration's lock, tightens the
// file's mode, and builds the forge client. Config, environment and
// registration errors exit 2. once (--once) makes the daemon take one job,
// as an ephemeral registration does.
func newDaemon(cfgPath string, once bool, stderr io.Writer) (*Daemon, error) {
	cfg, err := loadConfig(cfgPath)
	if err != nil {
		return nil, err
	}
	log := logrus.NewEntry(newLogger(cfg, stderr))
	if w := unknownEnvWarning(); w != "" {
		log.Warn(w)
	}

	reg, err := config.LoadRegistration(cfg.Runner.File)
	if err != nil {
		return nil, withCode(ExitBadInput, err)
	}
	unlock, err := config.LockRegistration(cfg.Runner.File)
	if err != nil {
		return nil, err
	}
	log = log.WithField("runner", reg.Name)
	if fi, err := os.Stat(cfg.Runner.File); err == nil && fi.Mode().Perm()&0o077 != 0 {
		// The file holds the runner's token: tighten a copy that others can read.
		if err := os.Chmod(cfg.Runner.File, 0o600); err != nil {
			log.WithError(err).Warnf("%s is readable by other users (mode %o) and could not be made 0600; it holds this runner's token", cfg.Runner.File, fi.Mode().Perm())
		} else {
			log.Warnf("%s was readable by other users (mode %o); it holds this runner's token, so it is now 0600", cfg.Runner.File, fi.Mode().Perm())
		}
	}
	cl, err := client.New(client.Options{
		Address:  reg.Address,
		UUID:     reg.UUID,
		Token:    reg.Token,
		Insecure: cfg.Runner.Insecure,
		Version:  ver.Version(),
	})
	if err != nil {
		_ = unlock()
		return nil, withCode(ExitBadInput, err)
	}
	labels := effectiveLabels(cfg.Runner.Labels, reg.Labels)
	if !slices.Equal(labels, reg.Labels) {
		// Keep the registration in step with what the forge is told.
		reg.Labels = labels
		if err := config.SaveRegistration(cfg.Runner.File, reg); err != nil {
			log.WithError(err).Warn("could not record the new labels in the registration file")
		}
	}
	return &Daemon{
		cfg:    cfg,
		reg:    reg,
		labels: labels,
		once:   once || reg.Ephemeral,
		log:    log,
		cl:     cl,
		unlock: unlock,
	}, nil
}

// Run starts the daemon's pieces, waits for the forge to answer Declare
// (serving /healthz and a /readyz that says why it is not ready meanwhile),
// then polls for jobs. It returns when polling stops: nil when ctx ended it
// (the first signal), and an error when polling ended by itself badly (the
// forge no longer knows this runner: wraps [poll.ErrUnregistered]) or a
// piece could not start (exit 2 for bad config). With --once it returns
// after its one job. Jobs still running when Run returns are left to
// [Daemon.Shutdown], which must be called after Run, whatever it returned.
func (d *Daemon) Run(ctx context.Context) error {
	cfg, reg, log := d.cfg, d.reg, d.log
	stopLeftovers(ctx, reg.UUID, log)
	eng, labels, engErr, err := startEngine(ctx, cfg, reg.UUID, d.labels, log)
	if err != nil {
		return withCode(ExitBadInput, err)
	}
	d.eng, d.engErr, d.labels = eng, engErr, labels

	reg2 := prometheus.NewRegistry()
	if err := metrics.RegisterRuntime(reg2); err != nil {
		return err
	}
	m := metrics.New(reg2, ver.Version(), reg.Name, metrics.WithLoadLimits(metrics.LoadLimits{Retention: cfg.Metrics.LoadRetention}))
	m.SetCapacity(cfg.Runner.Capacity)

	// The background pieces (metrics server, outbox) outlive ctx: they end
	// in Shutdown, after the running jobs.
	bgCtx, stopBg := context.WithCancel(context.WithoutCancel(ctx))
	d.stopBg = stopBg

	// The metrics server comes first, so that /healthz answers and /readyz
	// says why it is not ready while the forge is still being waited for,
	// and a taken port fails start-up at once.
	ready := &readiness{err: fmt.Errorf("starting: waiting for the forge at %s to answer Declare", reg.Address)}
	if err := m.RegisterState(reg2, ready); err != nil {
		return err
	}
	jobs, err := d.serveMetrics(bgCtx, reg2, ready)
	if err != nil {
		return err
	}
	if d.cache, err = startCache(bgCtx, cfg.Cache, &d.bg, log); err != nil {
		return err
	}

	caps, err := declareUntilUp(ctx, d.cl, labels, cfg.Runner.FetchInterval, cfg.Runner.FetchIntervalMax, ready, log)
	if err != nil {
		return err
	}
	if ctx.Err() != nil {
		log.Info("stopped before the forge answered")
		return nil
	}

	runner, err := d.taskRunner(ctx, bgCtx, caps, m, jobs)
	if err != nil {
		return err
	}
	var fetcher poll.Fetcher = d.cl
	if d.handle != "" {
		// The task runner is ready before the forge hands the job over,
		// so that a job this daemon took is never left unrun.
		task, err := fetchHandle(ctx, d.cl, d.handle, labels, cfg.Runner.FetchTimeout, cfg.Runner.FetchInterval, cfg.Runner.FetchIntervalMax, ready, log)
		if err != nil || task == nil {
			return err
		}
		fetcher = &handedTask{task: task}
		d.once = true
	}
	d.poller = poll.New(fetcher, runner, poll.Options{
		Capacity:         cfg.Runner.Capacity,
		FetchTimeout:     cfg.Runner.FetchTimeout,
		FetchInterval:    cfg.Runner.FetchInterval,
		FetchIntervalMax: cfg.Runner.FetchIntervalMax,
		ReadinessGrace:   cfg.Metrics.ReadinessGrace,
		Once:             d.once,
		Logger:           log,
		Observer:         pollObserver{m},
	})
	ready.setPoller(d.poller)

	log.WithField("labels", config.LabelNames(labels)).WithField("capacity", cfg.Runner.Capacity).Infof("forgeload %s polling %s", ver.Version(), reg.Address)
	return d.poller.Run(ctx)
}

// stopLeftovers kills the processes that steps of an earlier daemon of
// this registration left running because that daemon was killed: the
// registration's lock, which this daemon holds, means none of them belongs
// to a live daemon. It never stops the daemon from starting.
func stopLeftovers(ctx context.Context, owner string, log *logrus.Entry) {
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	procs, err := leftover.Stop(sctx, owner)
	if len(procs) > 0 {
		log.Warn(leftover.Summary(procs))
	}
	if err != nil {
		log.WithError(err).Warn("could not stop every process that steps of an earlier run of this runner left running")
	}
}

// removeStaleTaskDirs removes the task directories (workspaces, secrets
// in them) that an earlier daemon of this registration left when it was
// killed; like stopLeftovers, it runs before the first job and never
// stops the daemon from starting.
func removeStaleTaskDirs(runner *run.Runner, log *logrus.Entry) {
	removed, err := runner.RemoveStaleTaskDirs()
	if len(removed) > 0 {
		names := strings.Join(removed[:min(len(removed), 10)], ", ")
		if len(removed) > 10 {
			names += fmt.Sprintf(" and %d more", len(removed)-10)
		}
		log.Warnf("removed %d task directories that an earlier run of this runner left (that daemon ended without removing them: kill -9, the OOM killer or a crash): %s", len(removed), names)
	}
	if err != nil {
		log.WithError(err).Warn("could not remove every task directory an earlier run of this runner left; remove them by hand")
	}
}

// jobInputs are what the config gives every job: its env
// (runner.envs and env_file) and the pull request comment token
// (runner.comment_token or comment_token_file).
func jobInputs(cfg *config.Config) (map[string]string, string, error) {
	envs, err := jobEnvs(cfg)
	if err != nil {
		return nil, "", err
	}
	tok, err := cfg.Runner.ReadCommentToken()
	return envs, string(tok), err
}

// taskRunner builds the task runner that polling hands jobs to: the target
// policy, the jobs' env, the cluster link (and this runner's place in the
// pool, running segments until ctx ends), and the outbox of kept final
// reports, delivered until bgCtx ends.
func (d *Daemon) taskRunner(ctx, bgCtx context.Context, caps string, m *metrics.Metrics, jobs *resultview.Jobs) (*run.Runner, error) {
	cfg, log := d.cfg, d.log
	var containers run.Containers
	if d.eng != nil {
		containers = d.eng
	}
	pol, err := policy.New(ctx, policy.Options{Allow: cfg.Load.AllowTargets, Deny: cfg.Load.DenyTargets, Forge: d.reg.Address})
	if err != nil {
		return nil, withCode(ExitBadInput, err)
	}
	envs, commentToken, err := jobInputs(cfg)
	if err != nil {
		return nil, withCode(ExitBadInput, err)
	}
	link, err := newClusterLink(ctx, cfg, m, log)
	if err != nil {
		return nil, err
	}
	d.link = link
	var coord run.ClusterCoordinator
	if link != nil {
		coord = link
	}

	outbox, err := d.startOutbox(bgCtx)
	if err != nil {
		return nil, err
	}

	limits := loadLimits(cfg.Load)
	runner := run.New(d.cl, run.Options{
		Config: jobrun.Config{
			Name:             d.reg.Name,
			Version:          ver.Version(),
			Labels:           d.labels,
			Envs:             envs,
			Timeout:          cfg.Runner.Timeout,
			Capabilities:     caps,
			Cancelling:       true,
			Instance:         d.reg.Address,
			ProcessOwner:     d.reg.UUID,
			Policy:           pol,
			Limits:           limits,
			ProgressInterval: cfg.Load.ProgressInterval,
			Logger:           log,
			LoadObserver:     newLoadObserver(m, jobs),
			RunObserver:      newRunObserver(jobs),
			Cluster:          coord,
			Publisher:        d.cl,
			CommentToken:     commentToken,
			Containers:       containers,
			ContainersErr:    d.engErr,
			PullPolicy:       container.PullPolicy(cfg.Container.PullPolicy),
			ServiceTimeout:   cfg.Container.ServiceTimeout,
			ActionCache:      actionCache(cfg.Runner),
			Cache:            d.cache,
			Node:             cfg.Runner.Node,
			ValidVolumes:     cfg.Container.ValidVolumes,
			OptionsPolicy:    container.Policy{Capabilities: cfg.Container.AllowedCapabilities, Options: cfg.Container.AllowedOptions},
			BuildNetwork:     cfg.Container.AllowBuildNetwork,
			BuildTimeout:     cfg.Container.BuildTimeout,
		},
		ReportInterval: cfg.Runner.ReportInterval,
		CloseTimeout:   cfg.Runner.FinalReportTimeout,
		Outbox:         outbox,
		Observer:       jobObserver{m},
		ReportObserver: newReportObserver(m),
	})
	removeStaleTaskDirs(runner, log)
	if link != nil {
		// The pool ends with the first signal (abandoning its segments so
		// they move at once) or in Shutdown.
		poolCtx, stopPool := context.WithCancel(ctx)
		d.stopPool = stopPool
		segs := &loadrun.SegmentRunner{Policy: pol, Forge: d.reg.Address, Limits: limits, Observer: newShareObserver(m), Logger: log}
		if err := link.startPool(poolCtx, cfg, config.LabelNames(d.labels), segs); err != nil {
			return nil, withCode(ExitBadInput, err)
		}
	}
	return runner, nil
}

// startOutbox opens the outbox of final reports an outage kept from the
// forge, in this run or an earlier one, and delivers them when it answers,
// until bgCtx ends (d.bg waits for that).
func (d *Daemon) startOutbox(bgCtx context.Context) (*report.Outbox, error) {
	cfg, log := d.cfg, d.log
	outbox, err := report.OpenOutbox(cfg.Runner.File+".pending", log)
	if err != nil {
		return nil, err
	}
	d.bg.Add(1)
	go func() {
		defer d.bg.Done()
		if err := outbox.Run(bgCtx, d.cl, cfg.Runner.FetchInterval); err != nil {
			log.WithError(err).Error("stopped delivering kept final reports")
		}
	}()
	return outbox, nil
}

// serveMetrics starts the metrics server when metrics.enabled is set, with
// the /jobs page when metrics.jobs_page is; it returns that page (nil
// without it). The server runs until ctx ends.
func (d *Daemon) serveMetrics(ctx context.Context, reg *prometheus.Registry, ready *readiness) (*resultview.Jobs, error) {
	cfg, log := d.cfg, d.log
	if !cfg.Metrics.Enabled {
		return nil, nil
	}
	var jobs *resultview.Jobs
	srv := metrics.NewServer(cfg.Metrics.Addr, reg, ready)
	if cfg.Metrics.JobsPage {
		jobs = &resultview.Jobs{}
		srv.Handle(resultview.JobsPath, http.StripPrefix(resultview.JobsPath, jobs))
		srv.Handle(resultview.JobsPath+"/", http.StripPrefix(resultview.JobsPath, jobs))
	}
	if err := srv.Listen(); err != nil {
		return nil, err
	}
	log.Infof("serving metrics on http://%s/metrics", srv.Addr())
	if jobs != nil {
		log.Infof("serving the running load steps on http://%s%s", srv.Addr(), resultview.JobsPath)
	}
	d.bg.Add(1)
	go func() {
		defer d.bg.Done()
		if err := srv.Serve(ctx); err != nil {
			log.WithError(err).Error("metrics server stopped")
		}
	}()
	return jobs, nil
}

// polled reports whether Run got as far as polling.
func (d *Daemon) polled() bool { return d.poller != nil }

// Shutdown stops the daemon after [Daemon.Run] has returned: polling is
// over, running jobs get until ctx ends to finish and are then cancelled
// (they report CANCELLED on their own detached context); then the cluster
// pool, the outbox, the metrics server and the Docker Engine client stop,
// the containers the jobs left are removed, and the registration lock is
// released. It returns ctx's error when jobs had to be cancelled.
func (d *Daemon) Shutdown(ctx context.Context) error {
	var err error
	if d.poller != nil {
		err = d.poller.Shutdown(ctx)
	}
	if d.stopPool != nil {
		d.stopPool()
	}
	if d.link != nil {
		d.link.Close()
	}
	if d.stopBg != nil {
		d.stopBg()
	}
	d.bg.Wait()
	stopEngine(d.eng, d.log)
	_ = d.unlock() // the lock dies with the process anyway
	return err
}

// declare tells the forge our labels, version and capabilities and returns
// the forge's capabilities. An old forge without Declare gets a warning.
func declare(ctx context.Context, cl *client.Client, labels []string, log *logrus.Entry) (string, error) {
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	resp, err := cl.Declare(dctx, connect.NewRequest(&runnerv1.DeclareRequest{
		Version:      ver.Version(),
		Labels:       config.LabelNames(labels),
		Capabilities: capabilities,
	}))
	switch {
	case err == nil:
		return resp.Header().Get("X-Gitea-Actions-Capabilities"), nil
	case connect.CodeOf(err) == connect.CodeUnimplemented:
		log.Warn("the forge does not implement Declare (Gitea older than 1.21?): labels and version are those sent at registration")
		return "", nil
	case client.IsUnauthenticated(err):
		return "", fmt.Errorf("the forge no longer knows this runner (%w): register again with `forgeload register --replace`", poll.ErrUnregistered)
	default:
		return "", fmt.Errorf("declare this runner to the forge: %w", err)
	}
}

// declareUntilUp calls Declare until the forge answers: a forge that is
// down or failing at start-up is waited for with the poller's capped,
// jittered backoff instead of ending the daemon. Only Unauthenticated (the
// runner was deleted) is fatal. It returns with no error when ctx ends.
// While it waits, ready reports the last failure.
func declareUntilUp(ctx context.Context, cl *client.Client, labels []string, base, ceiling time.Duration, ready *readiness, log *logrus.Entry) (string, error) {
	for n := 1; ; n++ {
		caps, err := declare(ctx, cl, labels, log)
		if err != nil {
			ready.set(err)
		}
		if err == nil || errors.Is(err, poll.ErrUnregistered) || ctx.Err() != nil {
			return caps, err
		}
		wait := backoff.Jitter(poll.Interval(n, base, ceiling), rand.Float64())
		log.WithError(err).Warnf("the forge did not answer Declare; retrying in %s", wait.Round(time.Millisecond))
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return "", nil
		case <-t.C:
		}
	}
}

// unknownEnvWarning says which FORGELOAD_ variables forgeload ignores, or
// "" when there are none.
func unknownEnvWarning() string {
	names := config.UnknownEnv(os.Environ())
	if len(names) == 0 {
		return ""
	}
	return fmt.Sprintf("ignoring environment variable %s: forgeload does not read it (config overrides are FORGELOAD_<SECTION>_<KEY>; see `forgeload config generate`)", strings.Join(names, ", "))
}

// readiness is the daemon's /readyz for its whole life: not ready, with the
// reason, until the forge has answered Declare; then the poller's answer.
// It is safe for concurrent use.
type readiness struct {
	mu     sync.Mutex
	err    error
	poller metrics.Readiness
}

var _ metrics.Readiness = (*readiness)(nil)

func (r *readiness) Ready() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.poller != nil {
		return r.poller.Ready()
	}
	return r.err
}

// set records why the daemon is not ready yet.
func (r *readiness) set(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.err = err
}

// setPoller hands readiness to the poller, once the forge has answered.
func (r *readiness) setPoller(p metrics.Readiness) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.poller = p
}

// effectiveLabels picks the labels to declare: runner.labels when the
// config changes them from the default, otherwise those chosen at
// registration (register --labels).
func effectiveLabels(configured, registered []string) []string {
	if len(registered) > 0 && slices.Equal(configured, []string{config.DefaultLabel}) {
		return registered
	}
	return configured
}

// jobEnvs merges runner.env_file and runner.envs (envs win).
func jobEnvs(cfg *config.Config) (map[string]string, error) {
	out := map[string]string{}
	if cfg.Runner.EnvFile != "" {
		m, err := run.ReadEnvFile(cfg.Runner.EnvFile)
		if err != nil {
			return nil, fmt.Errorf("runner.env_file: %w", err)
		}
		for k, v := range m {
			out[k] = v
		}
	}
	for k, v := range cfg.Runner.Envs {
		out[k] = v
	}
	return out, nil
}

// loadLimits are the load section's job limits, for the engine.
func loadLimits(l config.LoadLimits) build.Limits {
	return build.Limits{MaxRate: l.MaxRate, MaxConcurrency: l.MaxConcurrency, MaxDuration: l.MaxDuration,
		MaxGracefulShutdown: l.MaxGracefulShutdown, MaxEndpoints: l.MaxEndpoints}
}
