package jobrun

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"strconv"
	"strings"
	"sync/atomic"

	runnerv1 "gitea.dev/actions-proto-go/runner/v1"

	"github.com/forgeload/forgeload/internal/pkg/load"
	"github.com/forgeload/forgeload/internal/pkg/load/build"
	"github.com/forgeload/forgeload/internal/pkg/load/compare"
	"github.com/forgeload/forgeload/internal/pkg/load/spec"
	"github.com/forgeload/forgeload/internal/pkg/loadrun"
	"github.com/forgeload/forgeload/internal/pkg/workflow"
)

// LoadObserver receives what load steps do, for the daemon's load metrics;
// see [loadrun.Observer].
type LoadObserver = loadrun.Observer

// ClusterCoordinator runs the distributed load steps this runner takes as
// their coordinator; see [loadrun.Coordinator].
type ClusterCoordinator = loadrun.Coordinator

// maxLoggedFailures bounds the rows log_errors writes per step.
const maxLoggedFailures = 100

// loadStep is a uses: forgeload/load step with its with: resolved: the
// keys of the step itself, and the load-config keys set inline.
type loadStep struct {
	st       workflow.Step // its id and name, for the results
	config   string        // with.config: a load config in the workspace
	baseline string        // with.baseline: the run to compare with
	inline   map[string]string
}

// newLoadStep resolves st's with: against ec.
func newLoadStep(ec *workflow.Context, st workflow.Step) (*loadStep, error) {
	with, err := ec.InterpolateMap(st.With)
	if err != nil {
		return nil, fmt.Errorf("with: %w", err)
	}
	s := &loadStep{st: st, config: with["config"], baseline: with["baseline"], inline: map[string]string{}}
	for k, v := range with {
		if k != "config" && k != "baseline" {
			s.inline[k] = v
		}
	}
	return s, nil
}

func (s *loadStep) run(ctx context.Context, j *stepJob) (runnerv1.Result, map[string]string) {
	return runLoad(ctx, j, s)
}

// runLoad is the forgeload/load step: the config file named by with.config
// (relative to the workspace), the other with: keys on top (inline wins),
// run by the load executor (package loadrun) with progress lines and the
// summary in the step log, the Markdown summary as the step summary, and
// the outputs of DESIGN.md section 4. A failed threshold fails the step.
func runLoad(ctx context.Context, j *stepJob, s *loadStep) (runnerv1.Result, map[string]string) {
	fail := func(format string, args ...any) (runnerv1.Result, map[string]string) {
		j.Logf("::error::forgeload/load: "+format, args...)
		return runnerv1.Result_RESULT_FAILURE, nil
	}
	st := s.st
	// Every file the step names (config, body_file) is read inside the
	// workspace, bounded, and only if it is a regular file. The workspace
	// is opened through the task directory: an earlier step may have
	// replaced it with a symlink.
	root, err := j.td.OpenRoot(j.ws)
	if err != nil {
		return fail("open the workspace: %v", err)
	}
	defer root.Close()
	cfg, err := loadrun.Load(loadrun.Input{Root: root, File: s.config, Inline: s.inline, InlineWhere: fmt.Sprintf("step %q, with", st.DisplayName())})
	if err != nil {
		return fail("%v", err)
	}
	for _, w := range cfg.Warnings() {
		j.Logf("::warning::forgeload/load: %s", w)
	}

	pol, err := loadrun.Policy(ctx, j.deps.Policy, j.deps.Instance)
	if err != nil {
		return fail("%v", err)
	}
	if own := j.serviceAddrs(); len(own) > 0 {
		// The job's own services are allowed targets, whatever the lists.
		pol = pol.WithOwn(own)
	}
	if cfg.Distributed != nil && cfg.Distributed.Workers > 1 {
		if _, err := loadrun.CheckTargets(ctx, pol, cfg, j.rep.AddMask); err != nil {
			return fail("%v", err)
		}
		return runDistributed(ctx, j, st, cfg, s.baseline)
	}

	var obs LoadObserver
	if j.deps.LoadObserver != nil {
		obs = j.deps.LoadObserver()
	}
	settings := build.Settings{
		Resources:        j.sutRecorder(),
		Limits:           j.deps.Limits,
		Resolver:         j.deps.Resolver,
		ProgressInterval: j.deps.ProgressInterval,
		Progress:         func(p load.Progress) { j.Logf("%s", load.FormatProgress(p)) },
		TraceSummary: func(line string, complete bool) {
			if !complete {
				line = "::warning::forgeload/load: " + line
			}
			j.Logf("%s", line)
		},
	}
	if obs != nil {
		settings.OnSecond = obs.Second
	}
	if cfg.LogErrors {
		var logged atomic.Int64
		settings.LogFailure = func(_ *load.Sample, err error) {
			switch n := logged.Add(1); {
			case n <= maxLoggedFailures:
				j.Logf("request failed: %v", err)
			case n == maxLoggedFailures+1:
				j.Logf("more requests failed; log_errors shows the first %d, the summary counts them all", maxLoggedFailures)
			}
		}
	}
	t, err := loadrun.New(ctx, cfg, loadrun.Settings{Policy: pol, Mask: j.rep.AddMask, Engine: settings})
	if err != nil {
		return fail("%v", err)
	}
	defer t.Close()
	p := t.Engine
	if p.Endless() {
		return fail("the load test has no end (no duration, total or load_patterns) and this runner sets no load.max_duration: set duration or total")
	}
	j.Logf("load test: %s", loadrun.Describe(cfg, &p.Options))
	if obs != nil {
		obs.LoadStarted(loadrun.Protocol(cfg), p.Options.Rate, j.runInfo(st, cfg), j.rep.Mask)
		defer obs.LoadDone()
	}
	stopSampling := j.sampleServices(ctx, settings.Resources)
	out, err := t.Run(ctx)
	stopSampling()
	if err != nil {
		if pe := load.Panic(err); pe != nil {
			j.deps.Logger.WithField("task_id", j.task.GetId()).WithField("stack", string(pe.Stack)).
				Errorf("load step panicked: %s; the step fails, the runner keeps serving", j.rep.Mask(fmt.Sprint(pe.Value)))
		}
		return fail("%v", err)
	}
	res, checks := out.Result, out.Checks
	res.Info = j.runInfo(st, cfg)
	base := j.baseline(st, s.baseline, p.Thresholds)
	if base != nil {
		checks = build.EvaluateBaseline(p.Thresholds, res, base)
	}
	sum, outputs, err := j.reportLoad(st, res, checks, base, nil)
	if err != nil {
		return fail("%v", err)
	}
	if err := out.Stop(); err != nil {
		j.Logf("::error::forgeload/load: stopped: %v", err)
		return runnerv1.Result_RESULT_FAILURE, outputs
	}
	if ctx.Err() != nil {
		j.Logf("load test stopped: %v", context.Cause(ctx))
		return runnerv1.Result_RESULT_CANCELLED, outputs
	}
	j.warnBound(&sum)
	return j.verdict("", res, checks), outputs
}

// runDistributed is the load step of a config with distributed.workers > 1
// on the runner that took the job: the executor coordinates the run
// through the cluster (this daemon runs a segment too) and the step logs
// the joins, the start time and live merged progress, then reports the
// merged result exactly as a local run: summary, thresholds on merged
// histograms (and on the baseline and the job's services, as on one
// host), outputs, plus the worker table. branch is the step's baseline.
func runDistributed(ctx context.Context, j *stepJob, st workflow.Step, cfg *spec.Config, branch string) (runnerv1.Result, map[string]string) {
	fail := func(format string, args ...any) (runnerv1.Result, map[string]string) {
		j.Logf("::error::forgeload/load: "+format, args...)
		return runnerv1.Result_RESULT_FAILURE, nil
	}
	// The job's services run beside this host: their resource use is
	// sampled here for the whole run.
	sut := j.sutRecorder()
	stopSampling := j.sampleServices(ctx, sut)
	settings := loadrun.CoordSettings{
		Cluster:          j.deps.Cluster,
		Limits:           j.deps.Limits,
		ProgressInterval: j.deps.ProgressInterval,
		Logf:             func(format string, args ...any) { j.Logf(format, args...) },
		Mask:             j.rep.Mask,
		Resources:        sut,
	}
	if j.deps.RunObserver != nil {
		obs := j.deps.RunObserver()
		obs.LoadStarted(loadrun.Protocol(cfg), cfg.Rate, j.runInfo(st, cfg), j.rep.Mask)
		defer obs.LoadDone()
		settings.OnSecond = obs.Second
	}
	d, err := loadrun.Coordinate(ctx, cfg, settings)
	stopSampling()
	if err != nil && ctx.Err() != nil || d != nil && d.Cancelled {
		j.Logf("load test stopped: %v", context.Cause(ctx))
	}
	if err != nil {
		if ctx.Err() != nil {
			return runnerv1.Result_RESULT_CANCELLED, nil
		}
		return fail("%v", err)
	}
	res, checks, out := d.Result, d.Checks, d.Outcome
	res.Info = j.runInfo(st, cfg)
	res.Info.Hosts = d.Hosts
	if sut != nil {
		res.SUT = sut.Summaries()
	}
	base := j.baseline(st, branch, d.Thresholds)
	if base != nil || sut != nil {
		checks = build.EvaluateBaseline(d.Thresholds, res, base)
	}
	sum, outputs, err := j.reportLoad(st, res, checks, base, d.WriteWorkers)
	if err != nil {
		return fail("%v", err)
	}
	outputs["workers"] = strconv.Itoa(len(out.Workers))
	outputs["reassignments"] = strconv.Itoa(out.Reassignments)
	if out.Degraded {
		j.Logf("::warning::the run was degraded: a lost worker's share found no new owner, so less than the planned load was sent")
	}
	if sum.GeneratorBound {
		j.Logf("::warning::a load generator fell behind (%d dropped, %d late arrivals): see the per-worker rows; add workers or lower the rate", sum.Dropped, sum.Late)
	}
	if d.Cancelled {
		return runnerv1.Result_RESULT_CANCELLED, outputs
	}
	result := j.verdict(" on the merged result", res, checks)
	if d.Shortfall != "" {
		j.Logf("::error::forgeload/load: %s", d.Shortfall)
		result = runnerv1.Result_RESULT_FAILURE
	}
	return result, outputs
}

// reportLoad reports a load step's result, the same for one host and many:
// the summary (and extra, e.g. the worker table) in the log, the Markdown
// job summary with the comparison when there is a baseline, the result
// artifacts; it returns the summary and the step's outputs. An error is a
// summary that could not be written to the log.
func (j *stepJob) reportLoad(st workflow.Step, res *load.Result, checks []load.Check, base *compare.Result, extra func(w io.Writer, markdown bool) error) (load.Summary, map[string]string, error) {
	w := j.Writer()
	if err := load.WriteText(w, res, checks); err != nil {
		return load.Summary{}, nil, fmt.Errorf("write the summary: %w", err)
	}
	if extra != nil {
		if err := extra(w, false); err != nil {
			return load.Summary{}, nil, fmt.Errorf("write the summary: %w", err)
		}
	}
	var md bytes.Buffer
	if err := load.WriteMarkdown(&md, res, checks); err == nil && (extra == nil || extra(&md, true) == nil) {
		if base != nil {
			md.WriteString("\n")
			md.Write(j.writeBaseline(base, res))
		}
		j.uploadSummary(md.Bytes())
	}
	j.uploadResults(st, res, checks)
	sum := load.Summarize(res, checks)
	outputs := loadOutputs(sum)
	maps.Copy(outputs, sutOutputs(sum.SUT))
	return sum, outputs, nil
}

// warnBound warns when the generator fell behind or every worker was busy,
// saying which and what to change.
func (j *stepJob) warnBound(sum *load.Summary) {
	if sum.GeneratorBound {
		j.Logf("::warning::generator-bound: %s", strings.TrimPrefix(load.GeneratorVerdict(sum), "YES: "))
	}
	if sum.WorkerBound {
		j.Logf("::warning::worker-bound: %s", strings.TrimPrefix(load.WorkerVerdict(sum), "YES: "))
	}
}

// verdict logs the failed thresholds, if any, and returns the step's
// result: FAILURE when one failed or when no request succeeded (the run
// measured nothing). A step without thresholds gets a warning. where
// qualifies the data, e.g. " on the merged result".
func (j *stepJob) verdict(where string, res *load.Result, checks []load.Check) runnerv1.Result {
	if len(checks) == 0 {
		j.Logf("::warning::forgeload/load: %s", build.NoThresholdsWarning)
	}
	var failed []string
	for _, c := range loadrun.Failed(checks) {
		failed = append(failed, fmt.Sprintf("%s (got %s)", c.Name, c.Actual))
	}
	if len(failed) > 0 {
		j.Logf("::error::forgeload/load: %d of %d thresholds failed%s: %s", len(failed), len(checks), where, strings.Join(failed, "; "))
		return runnerv1.Result_RESULT_FAILURE
	}
	if res.MeasuredNothing() {
		j.Logf("::error::forgeload/load: %v", loadrun.ErrNothingMeasured(res, where))
		return runnerv1.Result_RESULT_FAILURE
	}
	return runnerv1.Result_RESULT_SUCCESS
}

// loadOutputs are the step outputs every load step sets.
func loadOutputs(s load.Summary) map[string]string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	ms := func(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }
	return map[string]string{
		"requests":          strconv.FormatInt(s.Requests, 10),
		"rps":               strconv.FormatFloat(s.RPS, 'f', 2, 64),
		"p50_ms":            ms(s.Latency.P50),
		"p90_ms":            ms(s.Latency.P90),
		"p95_ms":            ms(s.Latency.P95),
		"p99_ms":            ms(s.Latency.P99),
		"max_ms":            ms(s.Latency.Max),
		"error_rate":        f(s.ErrorRate),
		"thresholds_passed": strconv.FormatBool(s.ThresholdsPassed),
		"dropped":           strconv.FormatInt(s.Dropped, 10),
		"generator_bound":   strconv.FormatBool(s.GeneratorBound),
		"worker_bound":      strconv.FormatBool(s.WorkerBound),
	}
}
