package run

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"

	runnerv1 "gitea.dev/actions-proto-go/runner/v1"

	"github.com/forgeload/forgeload/internal/pkg/load"
	"github.com/forgeload/forgeload/internal/pkg/load/plan"
	"github.com/forgeload/forgeload/internal/pkg/load/spec"
	"github.com/forgeload/forgeload/internal/pkg/policy"
	"github.com/forgeload/forgeload/internal/pkg/workflow"
)

// loadFunc runs a forgeload/load step; a field so tests can swap it.
type loadFunc func(ctx context.Context, j *job, ec *workflow.Context, st workflow.Step, i int) (runnerv1.Result, map[string]string)

// LoadObserver receives what load steps do, for the daemon's load metrics.
// Second is called once per run-second with the engine's snapshot; it must
// not keep the snapshot's histograms past the call.
type LoadObserver interface {
	LoadStarted(targetRPS float64)
	Second(s *load.Snapshot)
	LoadDone()
}

// maxLoggedFailures bounds the rows log_errors writes per step.
const maxLoggedFailures = 100

// stepOnlyKeys are with: keys of the load step that are not load-config
// keys.
var stepOnlyKeys = []string{"config"}

func (j *job) loadStep(ctx context.Context, ec *workflow.Context, st workflow.Step, i int) (runnerv1.Result, map[string]string) {
	return j.r.load(ctx, j, ec, st, i)
}

// runLoad is the forgeload/load step: the config file named by with.config
// (relative to the workspace), the other with: keys on top (inline wins),
// the target policy checked before any byte is sent, then the engine, with
// progress lines and the summary in the step log, the Markdown summary as
// the step summary, and the outputs of DESIGN.md section 4. A failed
// threshold fails the step.
func runLoad(ctx context.Context, j *job, ec *workflow.Context, st workflow.Step, i int) (runnerv1.Result, map[string]string) {
	fail := func(format string, args ...any) (runnerv1.Result, map[string]string) {
		j.rep.Logf(i, "::error::forgeload/load: "+format, args...)
		return runnerv1.Result_RESULT_FAILURE, nil
	}
	with, err := ec.InterpolateMap(st.With)
	if err != nil {
		return fail("with: %v", err)
	}
	var cfg *spec.Config
	cfgPath := with["config"]
	if path := cfgPath; path != "" {
		if !filepath.IsAbs(path) {
			path = filepath.Join(j.ws, path)
		}
		cfgPath = path
		cfg, err = spec.Load(path)
	} else {
		cfg, err = spec.Parse("with", []byte("{}"))
	}
	if err != nil {
		return fail("%v", err)
	}
	inline := map[string]string{}
	for k, v := range with {
		inline[k] = v
	}
	for _, k := range stepOnlyKeys {
		delete(inline, k)
	}
	if err := cfg.Override(inline); err != nil {
		return fail("step %q, with: %v", st.DisplayName(), err)
	}
	if err := cfg.Validate(); err != nil {
		return fail("%v", err)
	}

	pol := j.r.o.Policy
	if pol == nil {
		if pol, err = policy.New(ctx, policy.Options{Forge: j.r.o.Instance}); err != nil {
			return fail("%v", err)
		}
	}
	var hosts []string
	for _, e := range cfg.Mix() {
		// A password written into a target URL is a secret like any other.
		if u, err := url.Parse(e.URL); err == nil {
			if pw, ok := u.User.Password(); ok {
				j.rep.AddMask(pw)
			}
		}
		if err := pol.CheckURL(ctx, e.URL); err != nil {
			return fail("%v", err)
		}
		if u, err := url.Parse(e.URL); err == nil {
			hosts = append(hosts, u.Hostname())
		}
	}

	if cfg.Distributed != nil && cfg.Distributed.Workers > 1 {
		return runDistributed(ctx, j, i, cfg, cfgPath, inline)
	}

	// A refusal at dial time (the DNS answer changed to a denied address)
	// stops the run at once and fails the step with the policy's message.
	runCtx, stopRun := context.WithCancelCause(ctx)
	defer stopRun(nil)
	var refused atomic.Pointer[error]
	control := pol.Control(pol.HostsAllowed(hosts))
	dialControl := func(network, address string, c syscall.RawConn) error {
		err := control(network, address, c)
		if err != nil && refused.CompareAndSwap(nil, &err) {
			stopRun(err)
		}
		return err
	}

	var obs LoadObserver
	if j.r.o.LoadObserver != nil {
		obs = j.r.o.LoadObserver()
	}
	settings := plan.Settings{
		Limits:           j.r.o.Limits,
		DialControl:      dialControl,
		Resolver:         j.r.o.Resolver,
		ProgressInterval: j.r.o.ProgressInterval,
		Progress:         func(p load.Progress) { j.rep.Logf(i, "%s", load.FormatProgress(p)) },
	}
	if obs != nil {
		settings.OnSecond = obs.Second
	}
	if cfg.LogErrors {
		var logged atomic.Int64
		settings.LogFailure = func(_ *load.Sample, err error) {
			switch n := logged.Add(1); {
			case n <= maxLoggedFailures:
				j.rep.Logf(i, "request failed: %v", err)
			case n == maxLoggedFailures+1:
				j.rep.Logf(i, "more requests failed; log_errors shows the first %d, the summary counts them all", maxLoggedFailures)
			}
		}
	}
	p, err := plan.New(cfg, settings)
	if err != nil {
		return fail("%v", err)
	}
	defer p.Close()
	j.rep.Logf(i, "load test: %s", describePlan(cfg, &p.Options))
	if obs != nil {
		obs.LoadStarted(p.Options.Rate)
		defer obs.LoadDone()
	}
	res, checks, err := p.Run(runCtx)
	if err != nil {
		return fail("%v", err)
	}
	w := j.rep.Writer(i)
	if err := load.WriteText(w, res, checks); err != nil {
		return fail("write the summary: %v", err)
	}
	var md bytes.Buffer
	if err := load.WriteMarkdown(&md, res, checks); err == nil {
		j.uploadSummary(i, md.Bytes())
	}
	sum := load.Summarize(res, checks)
	outputs := loadOutputs(sum)
	if r := refused.Load(); r != nil {
		j.rep.Logf(i, "::error::forgeload/load: stopped: %v", *r)
		return runnerv1.Result_RESULT_FAILURE, outputs
	}
	if ctx.Err() != nil {
		j.rep.Logf(i, "load test stopped: %v", context.Cause(ctx))
		return runnerv1.Result_RESULT_CANCELLED, outputs
	}
	if sum.GeneratorBound {
		j.rep.Logf(i, "::warning::the load generator fell behind (%d dropped, %d late arrivals): latencies describe this runner as much as the target; lower the rate or raise concurrency", sum.Dropped, sum.Late)
	}
	return j.thresholdResult(i, "", checks), outputs
}

// thresholdResult logs the failed thresholds, if any, and returns the
// step's result: FAILURE when one failed. where qualifies the data, e.g.
// " on the merged result".
func (j *job) thresholdResult(i int, where string, checks []load.Check) runnerv1.Result {
	var failed []string
	for _, c := range checks {
		if !c.Passed {
			failed = append(failed, fmt.Sprintf("%s (got %s)", c.Name, c.Actual))
		}
	}
	if len(failed) == 0 {
		return runnerv1.Result_RESULT_SUCCESS
	}
	j.rep.Logf(i, "::error::forgeload/load: %d of %d thresholds failed%s: %s", len(failed), len(checks), where, strings.Join(failed, "; "))
	return runnerv1.Result_RESULT_FAILURE
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
	}
}

// describePlan is the step's first row: what is about to run.
func describePlan(cfg *spec.Config, o *load.Options) string {
	var b strings.Builder
	eps := cfg.Mix()
	if len(eps) == 1 {
		fmt.Fprintf(&b, "%s %s", eps[0].Method, redactURL(eps[0].URL))
	} else {
		fmt.Fprintf(&b, "%d endpoints", len(eps))
	}
	switch {
	case o.Rate > 0:
		fmt.Fprintf(&b, ", %g req/s (%s arrivals)", o.Rate, arrivalName(o.Arrival))
	case len(o.Stages) > 0:
		fmt.Fprintf(&b, ", %d load pattern stages", len(o.Stages))
	case o.VUs > 0 || len(o.VUStages) > 0:
		fmt.Fprintf(&b, ", closed model with virtual users")
	default:
		fmt.Fprintf(&b, ", closed loop")
	}
	fmt.Fprintf(&b, ", concurrency %d", o.Concurrency)
	if o.Duration > 0 {
		fmt.Fprintf(&b, ", for %s", o.Duration)
	}
	if o.Total > 0 {
		fmt.Fprintf(&b, ", at most %d requests", o.Total)
	}
	return b.String()
}

// redactURL hides a password in a URL, for log lines.
func redactURL(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return u.Redacted()
	}
	return raw
}

func arrivalName(m load.ArrivalModel) string {
	if m == load.Poisson {
		return "poisson"
	}
	return "uniform"
}
