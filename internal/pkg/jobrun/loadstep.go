package jobrun

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"strconv"
	"strings"

	runnerv1 "gitea.dev/actions-proto-go/runner/v1"

	"github.com/forgeload/forgeload/internal/pkg/load"
	"github.com/forgeload/forgeload/internal/pkg/load/build"
	"github.com/forgeload/forgeload/internal/pkg/load/compare"
	"github.com/forgeload/forgeload/internal/pkg/load/outcome"
	"github.com/forgeload/forgeload/internal/pkg/load/outcome/summary"
	"github.com/forgeload/forgeload/internal/pkg/load/spec"
	"github.com/forgeload/forgeload/internal/pkg/load/threshold"
	"github.com/forgeload/forgeload/internal/pkg/loadrun"
	"github.com/forgeload/forgeload/internal/pkg/policy"
	"github.com/forgeload/forgeload/internal/pkg/workflow"
)

// LoadObserver receives what load steps do, for the daemon's load metrics;
// see [loadrun.Observer].
type LoadObserver = loadrun.Observer

// ClusterCoordinator runs the distributed load steps this runner takes as
// their coordinator; see [loadrun.Coordinator].
type ClusterCoordinator = loadrun.Coordinator

// loadStep is a uses: forgeload/load step with its with: resolved: the
// keys of the step itself, and the load-config keys set inline.
type loadStep struct {
	st       workflow.Step // its id and name, for the results
	config   string        // with.config: a load config in the workspace
	baseline baselineAsk   // with.baseline and baseline_runs: the runs to compare with
	confirm  int           // with.confirm: reruns of a run that judged REGRESSION
	inline   map[string]string
}

// newLoadStep resolves st's with: against ec.
func newLoadStep(ec *workflow.Context, st workflow.Step) (*loadStep, error) {
	with, err := ec.InterpolateMap(st.With)
	if err != nil {
		return nil, fmt.Errorf("with: %w", err)
	}
	s := &loadStep{st: st, config: with["config"], inline: map[string]string{}}
	if s.baseline, err = parseBaselineAsk(with); err != nil {
		return nil, err
	}
	if s.confirm, err = parseConfirm(with); err != nil {
		return nil, err
	}
	for k, v := range with {
		if k != "config" && k != "confirm" && !isBaselineKey(k) {
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
	// Every file the step names (config, body_file) is read inside the
	// workspace, bounded, and only if it is a regular file. The workspace
	// is opened through the task directory: an earlier step may have
	// replaced it with a symlink.
	root, err := j.td.OpenRoot(j.ws)
	if err != nil {
		return loadFailed(j, "open the workspace: %v", err)
	}
	defer root.Close()
	cfg, err := loadrun.Load(loadrun.Input{Root: root, File: s.config, Inline: s.inline, InlineWhere: fmt.Sprintf("step %q, with", s.st.DisplayName())})
	if err != nil {
		return loadFailed(j, "%v", err)
	}
	for _, w := range cfg.Warnings() {
		j.Logf("::warning::forgeload/load: %s", w)
	}
	j.outputKeys(cfg)

	pol, err := loadrun.Policy(ctx, j.deps.Policy, j.deps.Instance)
	if err != nil {
		return loadFailed(j, "%v", err)
	}
	if own := j.serviceAddrs(); len(own) > 0 {
		// The job's own services are allowed targets, whatever the lists.
		pol = pol.WithOwn(own)
	}
	if cfg.Distributed != nil && cfg.Distributed.Workers > 1 {
		if s.confirm > 0 {
			return loadFailed(j, "with: confirm: a distributed step (distributed.workers > 1) is not run again: remove confirm, or run the step on one host")
		}
		if _, err := loadrun.CheckTargets(ctx, pol, cfg, j.rep.AddMask); err != nil {
			return loadFailed(j, "%v", err)
		}
		return runDistributed(ctx, j, s.st, cfg, s.baseline)
	}
	return runLocal(ctx, j, s, cfg, pol)
}

// loadFailed logs a load step's error and fails the step.
func loadFailed(j *stepJob, format string, args ...any) (runnerv1.Result, map[string]string) {
	j.Logf("::error::forgeload/load: "+format, args...)
	return runnerv1.Result_RESULT_FAILURE, nil
}

// runLocal is the load step of a config run on this host alone, under
// pol: it runs the test and reports its outcome. With confirm: N, a run
// that failed only on its baseline thresholds is run again, up to N
// times, and the step fails only if every rerun agrees; every run is in
// the log, the job summary and the artifact, and the last run decides.
func runLocal(ctx context.Context, j *stepJob, s *loadStep, cfg *spec.Config, pol *policy.Policy) (runnerv1.Result, map[string]string) {
	var base *compare.Result
	fetched := false
	baseline := func(ths []threshold.Threshold) *compare.Result {
		if !fetched {
			base, fetched = j.baseline(s.st, s.baseline, ths), true
		}
		return base
	}
	var reps []runReport
	for len(reps) == 0 || j.confirmNext(reps, s.confirm) {
		r, err := runLocalOnce(ctx, j, s, cfg, pol, baseline)
		if err != nil {
			return loadFailed(j, "%v", err)
		}
		reps = append(reps, r)
	}
	last := reps[len(reps)-1]
	var decision string
	if len(reps) > 1 {
		decision = j.confirmDecision(reps)
	}
	outputs := j.publishLoad(s.st, reps, decision)
	if s.confirm > 0 {
		outputs["decided_by"] = runTag(len(reps) - 1)
		outputs["confirm_runs"] = strconv.Itoa(len(reps) - 1)
	}
	return j.verdict(last.o), outputs
}

// runLocalOnce runs the load test once on this host and logs its summary
// (and comparison with the baseline that baseline gives, fetched once
// for every run of the step).
func runLocalOnce(ctx context.Context, j *stepJob, s *loadStep, cfg *spec.Config, pol *policy.Policy, baseline func([]threshold.Threshold) *compare.Result) (runReport, error) {
	st := s.st
	var obs LoadObserver
	if j.deps.LoadObserver != nil {
		obs = j.deps.LoadObserver()
	}
	settings := j.engineSettings(cfg, obs)
	t, err := loadrun.New(ctx, cfg, loadrun.Settings{Policy: pol, Mask: j.rep.AddMask, Engine: settings})
	if err != nil {
		return runReport{}, err
	}
	defer t.Close()
	p := t.Engine
	if p.Endless() {
		return runReport{}, errors.New("the load test has no end (no duration, total or load_patterns) and this runner sets no load.max_duration: set duration or total")
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
		return runReport{}, err
	}
	o := outcome.New(outcome.Input{
		Result: out.Result, Thresholds: p.Thresholds, Baseline: baseline(p.Thresholds),
		Info: j.runInfo(st, cfg), Stopped: out.Stop(), Cancelled: ctx.Err() != nil,
		ValidityWarn: cfg.Validity == spec.ValidityWarn, Duet: out.Duet,
	})
	r, err := j.logRun(o, nil)
	if err != nil {
		return runReport{}, err
	}
	if o.Verdict.Kind == outcome.Cancelled {
		j.Logf("load test stopped: %v", context.Cause(ctx))
	}
	if o.Verdict.Kind != outcome.Cancelled && out.Stop() == nil {
		j.warnBound(&o.Summary)
	}
	return r, nil
}

// engineSettings are the engine settings of a local load step: the
// services' resource recorder, the runner's limits, progress and trace
// lines in the step log, the observer's per-second feed and, with
// log_errors, the failure log.
func (j *stepJob) engineSettings(cfg *spec.Config, obs LoadObserver) build.Settings {
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
		settings.LogFailure = outcome.FailureLogger(cfg.Mix(), func(format string, args ...any) { j.Logf(format, args...) })
	}
	return settings
}

// runDistributed is the load step of a config with distributed.workers > 1
// on the runner that took the job: the executor coordinates the run
// through the cluster (this daemon runs a segment too) and the step logs
// the joins, the start time and live merged progress, then reports the
// merged result exactly as a local run: summary, thresholds on merged
// histograms (and on the baseline and the job's services, as on one
// host), outputs, plus the worker table. ask is the step's baseline.
func runDistributed(ctx context.Context, j *stepJob, st workflow.Step, cfg *spec.Config, ask baselineAsk) (runnerv1.Result, map[string]string) {
	// The job's services run beside this host: their resource use is
	// sampled here for the whole run.
	sut := j.sutRecorder()
	stopSampling := j.sampleServices(ctx, sut)
	// Every host labels its share's load metrics with the job and step,
	// as a local run is labelled (Coordinate masks them).
	names := j.runInfo(st, cfg)
	settings := loadrun.CoordSettings{
		Cluster:          j.deps.Cluster,
		Limits:           j.deps.Limits,
		ProgressInterval: j.deps.ProgressInterval,
		Logf:             func(format string, args ...any) { j.Logf(format, args...) },
		Mask:             j.rep.Mask,
		Job:              names.Job,
		Step:             names.Step,
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
		return loadFailed(j, "%v", err)
	}
	info := j.runInfo(st, cfg)
	info.Hosts = d.Hosts
	in := outcome.Input{
		Result: d.Result, Thresholds: d.Thresholds, Baseline: j.baseline(st, ask, d.Thresholds),
		Info: info, Cancelled: d.Cancelled, Shortfall: d.Shortfall, Where: " on the merged result", Stopped: d.Aborted,
		ValidityWarn: cfg.Validity == spec.ValidityWarn,
	}
	if sut != nil {
		in.SUT = sut.Summaries()
	}
	o := outcome.New(in)
	outputs, err := j.reportLoad(st, o, d.WriteWorkers)
	if err != nil {
		return loadFailed(j, "%v", err)
	}
	out := d.Outcome
	outputs["workers"] = strconv.Itoa(len(out.Workers))
	outputs["reassignments"] = strconv.Itoa(out.Reassignments)
	if out.Degraded {
		j.Logf("::warning::the run was degraded: a lost worker's share found no new owner, so less than the planned load was sent")
	}
	if sum := &o.Summary; sum.GeneratorBound {
		j.Logf("::warning::a load generator fell behind: %s; see the per-worker rows; add workers or lower the rate", strings.TrimPrefix(summary.GeneratorVerdict(sum), "YES: "))
	}
	return j.verdict(o), outputs
}

// reportLoad reports a load step's outcome, the same for one host and
// many: see [stepJob.logRun] and [stepJob.publishLoad]. It returns the
// step's outputs. An error is a summary that could not be written to the
// log.
func (j *stepJob) reportLoad(st workflow.Step, o *outcome.Outcome, extra func(w io.Writer, markdown bool) error) (map[string]string, error) {
	r, err := j.logRun(o, extra)
	if err != nil {
		return nil, err
	}
	return j.publishLoad(st, []runReport{r}, ""), nil
}

// logRun writes one run's summary (and extra, e.g. the worker table) and
// its comparison with the baseline to the log, and keeps them in
// Markdown for the job summary. An error is a summary that could not be
// written to the log.
func (j *stepJob) logRun(o *outcome.Outcome, extra func(w io.Writer, markdown bool) error) (runReport, error) {
	w := j.Writer()
	if err := o.WriteText(w); err != nil {
		return runReport{}, fmt.Errorf("write the summary: %w", err)
	}
	if extra != nil {
		if err := extra(w, false); err != nil {
			return runReport{}, fmt.Errorf("write the summary: %w", err)
		}
	}
	r := runReport{o: o}
	var md bytes.Buffer
	r.mdOK = o.WriteMarkdown(&md) == nil && (extra == nil || extra(&md, true) == nil)
	if o.Baseline != nil {
		r.comparison = j.writeBaseline(o)
		md.WriteString("\n")
		md.Write(r.comparison)
	}
	r.md = md.Bytes()
	return r, nil
}

// publishLoad publishes a load step's runs (one, or a first run and its
// confirming reruns, decision saying which decided): the Markdown job
// summary, the comparison as a pull request comment, the result
// artifacts and html_output. The last run decides: its comparison is
// commented and its numbers are the returned outputs.
func (j *stepJob) publishLoad(st workflow.Step, reps []runReport, decision string) map[string]string {
	last := reps[len(reps)-1]
	if last.comparison != nil {
		j.commentOnPull(st, last.o, append([]byte(decision), last.comparison...))
	}
	switch {
	case len(reps) > 1:
		j.uploadSummary(confirmMarkdown(decision, reps))
	case last.mdOK:
		j.uploadSummary(last.md)
	}
	runs := make([]*outcome.Outcome, len(reps))
	for i, r := range reps {
		runs[i] = r.o
	}
	j.uploadResults(st, runs)
	j.writeHTMLOutput(last.o)
	outputs := loadOutputs(last.o.Summary)
	maps.Copy(outputs, sutOutputs(last.o.Summary.SUT))
	return outputs
}

// warnBound warns when the generator fell behind or every worker was busy,
// saying which and what to change.
func (j *stepJob) warnBound(sum *summary.Summary) {
	if sum.GeneratorBound {
		j.Logf("::warning::generator-bound: %s", strings.TrimPrefix(summary.GeneratorVerdict(sum), "YES: "))
	}
	if sum.WorkerBound {
		j.Logf("::warning::worker-bound: %s", strings.TrimPrefix(summary.WorkerVerdict(sum), "YES: "))
	}
}

// verdict maps the outcome's verdict to the step's result, logging why
// it did not pass: CANCELLED for a cancelled run, FAILURE for every
// failure reason (a stop, failed thresholds, a shortfall, nothing
// measured), else SUCCESS. A judged step without thresholds gets a
// warning.
func (j *stepJob) verdict(o *outcome.Outcome) runnerv1.Result {
	v := o.Verdict
	if v.Kind == outcome.Cancelled {
		return runnerv1.Result_RESULT_CANCELLED
	}
	if len(o.Checks) == 0 && o.Duet == nil { // a paired A/B run is judged by its verdict
		j.Logf("::warning::forgeload/load: %s", build.NoThresholdsWarning)
	}
	for _, w := range v.Warnings {
		j.Logf("::warning::forgeload/load: %s", w)
	}
	for _, r := range v.Reasons {
		j.Logf("::error::forgeload/load: %s", r)
	}
	if v.Kind.Fails() {
		return runnerv1.Result_RESULT_FAILURE
	}
	return runnerv1.Result_RESULT_SUCCESS
}

// loadOutputs are the step outputs every load step sets.
func loadOutputs(s summary.Summary) map[string]string {
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
		"valid":             strconv.FormatBool(s.Valid),
	}
}
