package plan

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/forgeload/forgeload/internal/pkg/load"
	"github.com/forgeload/forgeload/internal/pkg/load/httpload"
	"github.com/forgeload/forgeload/internal/pkg/load/spec"
	"github.com/forgeload/forgeload/internal/pkg/load/threshold"
)

// Limits are the runner admin's caps (the daemon config's `load` section). A
// zero field means no limit.
type Limits struct {
	// MaxRate caps the peak arrival rate (load.max_rate).
	MaxRate float64
	// MaxConcurrency caps concurrency and vus (load.max_concurrency).
	MaxConcurrency int
	// MaxDuration caps the duration (load.max_duration); a config without a
	// duration gets this one.
	MaxDuration time.Duration
}

// Settings are what the caller adds to a config. The zero value adds nothing.
type Settings struct {
	// Limits are checked before anything is sent.
	Limits Limits
	// DialControl enforces the target policy on resolved addresses; see
	// httpload.Options.DialControl.
	DialControl func(network, address string, c syscall.RawConn) error
	// Resolver is passed to httpload.Options.Resolver; nil is the system
	// resolver.
	Resolver *net.Resolver
	// Progress and ProgressInterval are passed to load.Options.
	Progress         func(load.Progress)
	ProgressInterval time.Duration
	// OnSecond is passed to load.Options.
	OnSecond func(*load.Snapshot)
	// LogFailure, if set, receives failed requests (the config's
	// log_errors).
	LogFailure load.FailureLogger
}

// Plan is one runnable load test. Create it with [New]; Run it once; Close
// it to release connections.
type Plan struct {
	// Options are the engine options; callers may adjust them (for example
	// the multi-host hooks) before Run.
	Options load.Options
	// Driver is the HTTP driver behind Options.Requester.
	Driver *httpload.Driver
	// Thresholds are the config's parsed thresholds.
	Thresholds []threshold.Threshold
	// Seed is the Poisson seed used, so a run can be reproduced.
	Seed uint64
}

// New builds a Plan from cfg, which must have passed Validate. Errors name
// the config key or the limit (with its daemon config key) and how to fix
// it; they mean bad input.
func New(cfg *spec.Config, s Settings) (*Plan, error) {
	if cfg.Protocol != "" && cfg.Protocol != spec.ProtocolHTTP {
		return nil, fmt.Errorf("load config %s: protocol %q is not supported yet: use http", cfg.Source(), cfg.Protocol)
	}
	ths, err := cfg.ParsedThresholds()
	if err != nil {
		return nil, fmt.Errorf("load config %s: thresholds: %w", cfg.Source(), err)
	}
	p := &Plan{Thresholds: ths}
	o := &p.Options
	o.Concurrency = cfg.Concurrency
	if o.Concurrency == 0 {
		o.Concurrency = spec.DefaultConcurrency
	}
	o.Rate = cfg.Rate
	o.Duration = cfg.Duration
	if cfg.Total > 0 {
		o.Total = uint64(cfg.Total)
	}
	if cfg.Arrival.Model == spec.ArrivalPoisson {
		o.Arrival = load.Poisson
	}
	p.Seed = uint64(cfg.Seed)
	if p.Seed == 0 {
		p.Seed = rand.Uint64()
	}
	o.Seed = p.Seed
	for _, pat := range cfg.Patterns {
		switch pat.Type {
		case spec.PatternRamp:
			o.Stages = append(o.Stages, load.Ramp(pat.FromRPS, pat.ToRPS, pat.Duration))
		case spec.PatternStep:
			for _, st := range pat.Steps {
				o.Stages = append(o.Stages, load.Step(st.RPS, st.Duration))
			}
		default: // spike, constant
			o.Stages = append(o.Stages, load.Spike(pat.RPS, pat.Duration))
		}
	}
	if len(cfg.VUs.Stages) > 0 {
		o.VUs = cfg.VUs.Start
		for _, st := range cfg.VUs.Stages {
			o.VUStages = append(o.VUStages, load.VUStage{Duration: st.Duration, Target: st.Target})
		}
	} else {
		o.VUs = cfg.VUs.Count
	}
	o.ThinkTime, o.ThinkTimeMax = cfg.ThinkTime.Min, cfg.ThinkTime.Max
	o.Progress, o.ProgressInterval, o.OnSecond = s.Progress, s.ProgressInterval, s.OnSecond
	if err := checkLimits(o, s.Limits); err != nil {
		return nil, err
	}

	workers := o.Concurrency
	if !(o.Rate > 0 || len(o.Stages) > 0) && (o.VUs > 0 || len(o.VUStages) > 0) {
		workers = max(o.VUs, cfg.VUs.Count)
		for _, st := range o.VUStages {
			workers = max(workers, st.Target)
		}
	}
	var eps []httpload.Endpoint
	for i, e := range cfg.Mix() {
		body := []byte(e.Body)
		if e.BodyFile != "" {
			b, err := os.ReadFile(e.BodyFile)
			if err != nil {
				return nil, fmt.Errorf("load config %s: endpoint %d: read body_file: %w: check the path (relative paths are relative to the config file)", cfg.Source(), i+1, err)
			}
			body = b
		}
		eps = append(eps, httpload.Endpoint{Name: e.Name, URL: e.URL, Method: e.Method, Headers: e.Headers, Body: body, Weight: e.Weight})
	}
	d, err := httpload.New(httpload.Options{
		Endpoints:   eps,
		Timeout:     cfg.Timeout,
		Connections: max(workers, 1),
		DialControl: s.DialControl,
		Resolver:    s.Resolver,
	})
	if err != nil {
		return nil, fmt.Errorf("load config %s: %w", cfg.Source(), err)
	}
	p.Driver = d
	o.Endpoints = d.Names()
	var r load.Requester = d
	if s.LogFailure != nil {
		r = load.LogFailures(r, s.LogFailure)
	}
	if cfg.Retries > 0 {
		r = load.Retry(r, load.RetryPolicy{Retries: cfg.Retries})
	}
	o.Requester = r
	if err := o.Validate(); err != nil {
		d.Close()
		return nil, fmt.Errorf("load config %s: %w", cfg.Source(), err)
	}
	return p, nil
}

// checkLimits fails a plan that asks for more than the runner allows, and
// gives an open-ended plan the maximum duration.
func checkLimits(o *load.Options, l Limits) error {
	var errs []error
	if l.MaxRate > 0 {
		peak := o.Rate
		for _, s := range o.Stages {
			peak = max(peak, s.From, s.To)
		}
		if peak > l.MaxRate {
			errs = append(errs, fmt.Errorf("rate %s req/s is above this runner's limit of %s (load.max_rate in the runner config): lower rate or load_patterns",
				strconv.FormatFloat(peak, 'f', -1, 64), strconv.FormatFloat(l.MaxRate, 'f', -1, 64)))
		}
	}
	if l.MaxConcurrency > 0 {
		c := max(o.Concurrency, o.VUs)
		for _, s := range o.VUStages {
			c = max(c, s.Target)
		}
		if c > l.MaxConcurrency {
			errs = append(errs, fmt.Errorf("concurrency/vus %d is above this runner's limit of %d (load.max_concurrency in the runner config): lower concurrency or vus", c, l.MaxConcurrency))
		}
	}
	if l.MaxDuration > 0 {
		switch {
		case o.Duration > l.MaxDuration:
			errs = append(errs, fmt.Errorf("duration %s is above this runner's limit of %s (load.max_duration in the runner config): lower duration", o.Duration, l.MaxDuration))
		case o.Duration == 0:
			o.Duration = l.MaxDuration
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("load limits: %w", errors.Join(errs...))
	}
	return nil
}

// Run runs the plan and evaluates its thresholds on the result. The error is
// non-nil only when the run could not start.
func (p *Plan) Run(ctx context.Context) (*load.Result, []load.Check, error) {
	// Connections are opened before plan time 0 (best effort: a target
	// that cannot be reached now is measured as failing requests).
	_ = p.Driver.Warm(ctx, p.Options.Concurrency)
	res, err := load.Run(ctx, p.Options)
	if err != nil {
		return nil, nil, err
	}
	return res, Evaluate(p.Thresholds, res), nil
}

// Close releases the driver's idle connections.
func (p *Plan) Close() {
	if p.Driver != nil {
		p.Driver.Close()
	}
}

// Evaluate checks ths against res and returns the summary's checks.
func Evaluate(ths []threshold.Threshold, res *load.Result) []load.Check {
	outs := threshold.Evaluate(ths, Source(res))
	checks := make([]load.Check, 0, len(outs))
	for _, o := range outs {
		actual := threshold.FormatValue(o.Threshold, o.Actual)
		if o.Err != nil {
			actual = o.Err.Error()
		}
		checks = append(checks, load.Check{Name: o.Threshold.String(), Actual: actual, Passed: o.Passed})
	}
	return checks
}

// Passed reports whether every check passed.
func Passed(checks []load.Check) bool {
	for _, c := range checks {
		if !c.Passed {
			return false
		}
	}
	return true
}

// Source adapts a result to the threshold package.
func Source(res *load.Result) threshold.Source { return source{res} }

type source struct{ r *load.Result }

func (s source) Overall() threshold.Metrics { return metrics{&s.r.Stats, s.r.Elapsed} }

func (s source) Endpoint(name string) (threshold.Metrics, bool) {
	for i := range s.r.Endpoints {
		if s.r.Endpoints[i].Name == name {
			return metrics{&s.r.Endpoints[i].Stats, s.r.Elapsed}, true
		}
	}
	return nil, false
}

type metrics struct {
	s       *load.Stats
	elapsed time.Duration
}

func (m metrics) Requests() int64        { return m.s.Requests }
func (m metrics) Failures() int64        { return m.s.Errors }
func (m metrics) Elapsed() time.Duration { return m.elapsed }
func (m metrics) LatencyMin() time.Duration {
	return m.hist(func(h *load.Histogram) time.Duration { return h.Min() })
}
func (m metrics) LatencyMax() time.Duration {
	return m.hist(func(h *load.Histogram) time.Duration { return h.Max() })
}
func (m metrics) LatencyMean() time.Duration {
	return m.hist(func(h *load.Histogram) time.Duration { return h.Mean() })
}
func (m metrics) LatencyPercentile(p float64) time.Duration { return m.s.Quantile(p / 100) }

func (m metrics) hist(f func(*load.Histogram) time.Duration) time.Duration {
	if m.s.Latency == nil {
		return 0
	}
	return f(m.s.Latency)
}
