package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/signal"
	"slices"
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
	"github.com/forgeload/forgeload/internal/pkg/client"
	"github.com/forgeload/forgeload/internal/pkg/config"
	"github.com/forgeload/forgeload/internal/pkg/load/plan"
	"github.com/forgeload/forgeload/internal/pkg/metrics"
	"github.com/forgeload/forgeload/internal/pkg/policy"
	"github.com/forgeload/forgeload/internal/pkg/ver"
)

type daemonFlags struct {
	once bool
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
cancelled. A second signal cancels them at once.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return runDaemon(c.Context(), g, f, c.ErrOrStderr())
		},
	}
	c.Flags().BoolVar(&f.once, "once", false, "run one job, then exit")
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

func runDaemon(ctx context.Context, g *globalFlags, f *daemonFlags, stderr io.Writer) error {
	// Count signals ourselves: the first one also cancels ctx (Main's
	// NotifyContext), which stops polling; the second forces the shutdown.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)

	if err := config.CheckEnv(os.Environ()); err != nil {
		return withCode(ExitBadInput, err)
	}
	cfg, err := config.Load(g.config, os.Getenv)
	if err != nil {
		return withCode(ExitBadInput, err)
	}
	logger := newLogger(cfg, stderr)
	log := logrus.NewEntry(logger)

	reg, err := config.LoadRegistration(cfg.Runner.File)
	if err != nil {
		return withCode(ExitBadInput, err)
	}
	unlock, err := config.LockRegistration(cfg.Runner.File)
	if err != nil {
		return err
	}
	defer unlock() //nolint:errcheck // the lock dies with the process anyway
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
		return withCode(ExitBadInput, err)
	}
	labels := effectiveLabels(cfg.Runner.Labels, reg.Labels)
	if !slices.Equal(labels, reg.Labels) {
		// Keep the registration in step with what the forge is told.
		reg.Labels = labels
		if err := config.SaveRegistration(cfg.Runner.File, reg); err != nil {
			log.WithError(err).Warn("could not record the new labels in the registration file")
		}
	}

	caps, err := declareUntilUp(ctx, cl, labels, cfg.Runner.FetchInterval, cfg.Runner.FetchIntervalMax, log)
	if err != nil {
		return err
	}
	if ctx.Err() != nil {
		log.Info("stopped before the forge answered")
		return nil
	}

	reg2 := prometheus.NewRegistry()
	if err := metrics.RegisterRuntime(reg2); err != nil {
		return err
	}
	m := metrics.New(reg2, ver.Version(), reg.Name)
	m.Capacity.Set(float64(cfg.Runner.Capacity))

	pol, err := policy.New(ctx, policy.Options{
		Allow: cfg.Load.AllowTargets,
		Deny:  cfg.Load.DenyTargets,
		Forge: reg.Address,
	})
	if err != nil {
		return withCode(ExitBadInput, err)
	}
	envs, err := jobEnvs(cfg)
	if err != nil {
		return withCode(ExitBadInput, err)
	}

	link, err := newClusterLink(ctx, cfg, m, log)
	if err != nil {
		return err
	}
	var coord run.ClusterCoordinator
	if link != nil {
		coord = link
	}

	runner := run.New(cl, run.Options{
		Name:             reg.Name,
		Version:          ver.Version(),
		Labels:           labels,
		Envs:             envs,
		Timeout:          cfg.Runner.Timeout,
		ReportInterval:   cfg.Runner.ReportInterval,
		Capabilities:     caps,
		Cancelling:       true,
		Instance:         reg.Address,
		Policy:           pol,
		Limits:           plan.Limits{MaxRate: cfg.Load.MaxRate, MaxConcurrency: cfg.Load.MaxConcurrency, MaxDuration: cfg.Load.MaxDuration},
		ProgressInterval: cfg.Load.ProgressInterval,
		Logger:           log,
		Observer:         jobObserver{m},
		ReportObserver:   newReportObserver(m),
		LoadObserver:     newLoadObserver(m),
		Cluster:          coord,
	})
	if link != nil {
		// The pool ends with the first signal (abandoning its segments so
		// they move at once) or when the daemon returns.
		poolCtx, stopPool := context.WithCancel(ctx)
		defer func() { stopPool(); link.Close() }()
		if err := link.startPool(poolCtx, cfg, config.LabelNames(labels), runner); err != nil {
			return withCode(ExitBadInput, err)
		}
	}
	poller := poll.New(cl, runner, poll.Options{
		Capacity:         cfg.Runner.Capacity,
		FetchTimeout:     cfg.Runner.FetchTimeout,
		FetchInterval:    cfg.Runner.FetchInterval,
		FetchIntervalMax: cfg.Runner.FetchIntervalMax,
		ReadinessGrace:   cfg.Metrics.ReadinessGrace,
		Once:             f.once || reg.Ephemeral,
		Logger:           log,
		Observer:         pollObserver{m},
	})

	var wg sync.WaitGroup
	defer wg.Wait()
	srvCtx, stopSrv := context.WithCancel(context.WithoutCancel(ctx))
	defer stopSrv()
	if cfg.Metrics.Enabled {
		srv := metrics.NewServer(cfg.Metrics.Addr, reg2, poller)
		if err := srv.Listen(); err != nil {
			return err
		}
		log.Infof("serving metrics on http://%s/metrics", srv.Addr())
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := srv.Serve(srvCtx); err != nil {
				log.WithError(err).Error("metrics server stopped")
			}
		}()
	}

	log.WithField("labels", config.LabelNames(labels)).WithField("capacity", cfg.Runner.Capacity).Infof("forgeload %s polling %s", ver.Version(), reg.Address)
	pollDone := make(chan error, 1)
	go func() { pollDone <- poller.Run(ctx) }()

	var runErr error
	select {
	case runErr = <-pollDone:
		// Polling ended by itself: --once, an ephemeral runner, or the
		// forge no longer knowing us. Let running jobs end.
		sctx, cancel := context.WithTimeout(context.Background(), cfg.Runner.ShutdownTimeout)
		_ = poller.Shutdown(sctx)
		cancel()
	case <-ctx.Done():
		log.Infof("shutting down: polling stopped; running jobs get up to %s (runner.shutdown_timeout) to finish; send the signal again to cancel them now", cfg.Runner.ShutdownTimeout)
		sctx, cancel := context.WithTimeout(context.Background(), cfg.Runner.ShutdownTimeout)
		watched := make(chan struct{})
		go func() {
			defer close(watched)
			// The first signal is the one that cancelled ctx; wait for one more.
			n := 0
			for {
				select {
				case <-sigs:
					n++
					if n >= 2 {
						log.Warn("second signal: cancelling running jobs now")
						cancel()
						return
					}
				case <-sctx.Done():
					return
				}
			}
		}()
		if err := poller.Shutdown(sctx); err != nil {
			log.WithError(err).Warn("running jobs were cancelled (shutdown deadline or second signal); they reported CANCELLED")
		}
		cancel()
		<-watched
		runErr = <-pollDone
	}
	stopSrv()
	if errors.Is(runErr, poll.ErrUnregistered) {
		return fmt.Errorf("%w", runErr)
	}
	if runErr != nil && !errors.Is(runErr, context.Canceled) {
		return runErr
	}
	log.Info("forgeload stopped")
	return nil
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
func declareUntilUp(ctx context.Context, cl *client.Client, labels []string, base, ceiling time.Duration, log *logrus.Entry) (string, error) {
	for n := 1; ; n++ {
		caps, err := declare(ctx, cl, labels, log)
		if err == nil || errors.Is(err, poll.ErrUnregistered) || ctx.Err() != nil {
			return caps, err
		}
		wait := poll.Jitter(poll.Interval(n, base, ceiling), rand.Float64())
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
