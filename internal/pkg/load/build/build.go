package build

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/forgeload/forgeload/internal/pkg/load"
	"github.com/forgeload/forgeload/internal/pkg/load/auth"
	"github.com/forgeload/forgeload/internal/pkg/load/check"
	"github.com/forgeload/forgeload/internal/pkg/load/duet"
	"github.com/forgeload/forgeload/internal/pkg/load/feeder"
	"github.com/forgeload/forgeload/internal/pkg/load/httpload"
	"github.com/forgeload/forgeload/internal/pkg/load/spec"
	"github.com/forgeload/forgeload/internal/pkg/load/threshold"
	"github.com/forgeload/forgeload/internal/pkg/load/tracing"
	"github.com/forgeload/forgeload/internal/pkg/load/vars"
)

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
	// CheckRedirect enforces the target policy on every redirect of the
	// clients that follow them (the WebSocket handshake, OAuth2 token
	// requests, OTLP/HTTP export): see policy.Policy.CheckRedirect. nil
	// follows up to 10, as net/http does. The HTTP and SSE drivers follow
	// none: a 3xx is their response.
	CheckRedirect func(req *http.Request, via []*http.Request) error
	// Progress and ProgressInterval are passed to load.Options.
	Progress         func(load.Progress)
	ProgressInterval time.Duration
	// OnSecond is passed to load.Options.
	OnSecond func(*load.Snapshot)
	// Resources, if set, is passed to load.Options: the caller feeds it
	// the system under test's resource samples during the run.
	Resources *load.Resources
	// LogFailure, if set, receives failed requests (the config's
	// log_errors).
	LogFailure load.FailureLogger
	// Getenv, if set, supplies Crankfire's CRANKFIRE_AUTH_CLIENT_SECRET,
	// CRANKFIRE_AUTH_PASSWORD and CRANKFIRE_AUTH_STATIC_TOKEN when the auth
	// block leaves that secret empty, and for a tracing endpoint the
	// exporter's headers (OTEL_EXPORTER_OTLP_TRACES_HEADERS, else
	// OTEL_EXPORTER_OTLP_HEADERS) and, without service_name,
	// OTEL_SERVICE_NAME. Only the local CLI sets it: a job must not read
	// the daemon's environment.
	Getenv func(string) string
	// ShareRows, if set, makes the feeder's rows a feed shared with the
	// other hosts of a multi-host run (see feeder.NewShared); the Engine
	// closes it, giving back unused rows, in Close.
	ShareRows func(*feeder.Rows) SharedFeed
	// TraceSummary, if set, receives one line on the spans exported at the
	// end of a run with a tracing endpoint; complete is false when some
	// were refused, dropped or not sent in time.
	TraceSummary func(summary string, complete bool)
	// NoAbort leaves the abort_on_fail thresholds to the caller: a host of
	// a multi-host run sends its share, and the coordinator judges them on
	// the merged seconds and stops every host.
	NoAbort bool
}

// SharedFeed is a feed of rows shared with other hosts; Close gives back
// the rows it claimed and did not hand out.
type SharedFeed interface {
	vars.Feed
	Close() error
}

// Engine is one runnable load test. Create it with [New]; Run it once; Close
// it to release connections.
type Engine struct {
	// Options are the engine options; callers may adjust them (for example
	// the multi-host hooks) before Run.
	Options load.Options
	// Driver is the HTTP driver behind Options.Requester (in a
	// mixed-protocol run, the one of its HTTP endpoints); nil for the other
	// protocols.
	Driver *httpload.Driver
	// Duet collects the two sides of a paired A/B run (baseline_target)
	// from the run's seconds; nil for any other run. baseline is the
	// baseline side's driver.
	Duet     *duet.Collector
	baseline *httpload.Driver
	// closer releases the driver's connections; proto reports its
	// protocol measurements (nil for HTTP and a mixed-protocol run);
	// mixed is a mixed-protocol run's requester, which reports its
	// protocols' measurements.
	closer func()
	proto  load.ProtocolMeter
	mixed  *mixed
	// checks are the config's response checks, whose counts the result
	// reports; nil without checks.
	checks *check.Suite
	// vars gives requests their feeder rows; stop ends the run when the
	// rows run out, and stopped is why.
	vars   *vars.Source
	shared SharedFeed
	// unshared marks a multi-host config whose feeder rows are not
	// shared: Run refuses it rather than send every row from every host.
	unshared bool
	// tracer exports a span per sampled request; traceSummary gets its
	// summary when a run ends.
	tracer       *tracing.Exporter
	traceSummary func(string, bool)
	stopMu       sync.Mutex
	stopRun      context.CancelCauseFunc
	stopped      error
	// Thresholds are the config's parsed thresholds.
	Thresholds []threshold.Threshold
	// Seed is the Poisson seed used, so a run can be reproduced.
	Seed uint64
}

// New builds an Engine from cfg, which must have passed Validate. Errors name
// the config key or the limit (with its daemon config key) and how to fix
// it; they mean bad input.
func New(cfg *spec.Config, s Settings) (*Engine, error) {
	eo, ths, err := EngineOptions(cfg, s.Limits)
	if err != nil {
		return nil, err
	}
	p := &Engine{Options: eo, Thresholds: ths, Seed: eo.Seed}
	o := &p.Options
	o.Progress, o.ProgressInterval, o.OnSecond, o.Resources = s.Progress, s.ProgressInterval, s.OnSecond, s.Resources
	if !s.NoAbort {
		p.watchAborts()
	}

	workers := max(o.Concurrency, o.MaxConcurrency) // the open model's pool grows up to MaxConcurrency
	if !o.Open() && (o.VUs > 0 || len(o.VUStages) > 0) {
		workers = max(o.VUs, cfg.VUs.Count)
		for _, st := range o.VUStages {
			workers = max(workers, st.Target)
		}
	}
	if o.Total > 0 && uint64(workers) > o.Total {
		workers = int(o.Total) // no more connections than requests
	}
	if err := p.feeder(cfg, s.ShareRows); err != nil {
		return nil, fmt.Errorf("load config %s: %w", cfg.Source(), err)
	}
	if err := p.auth(cfg, s); err != nil {
		return nil, fmt.Errorf("load config %s: %w", cfg.Source(), err)
	}
	if err := p.tracing(cfg, s); err != nil {
		return nil, fmt.Errorf("load config %s: %w", cfg.Source(), err)
	}
	r, err := p.driver(cfg, s, workers)
	if err != nil {
		p.Close()
		return nil, fmt.Errorf("load config %s: %w", cfg.Source(), err)
	}
	if p.tracer != nil {
		r = p.tracer.Wrap(r, o.Endpoints) // innermost: one span per attempt
	}
	if s.LogFailure != nil {
		r = load.LogFailures(r, s.LogFailure)
	}
	if cfg.Retries > 0 {
		r = load.Retry(r, load.RetryPolicy{Retries: cfg.Retries})
	}
	o.Requester = r
	if p.Duet != nil {
		p.Duet.Watch(&o.OnSecond)
	}
	p.secondChecks()
	if err := o.Validate(); err != nil {
		p.Close()
		return nil, fmt.Errorf("load config %s: %w", cfg.Source(), err)
	}
	return p, nil
}

// EngineOptions returns the engine options of cfg (which must have passed
// Validate) without a requester, its parsed thresholds, and checks them
// against l (a missing duration gets l.MaxDuration). It opens nothing: a
// coordinator uses it to learn the timeline of a run other hosts send. A
// zero cfg.Seed gets a random Poisson seed, in Options.Seed.
func EngineOptions(cfg *spec.Config, l Limits) (load.Options, []threshold.Threshold, error) {
	var o load.Options
	if err := l.CheckEndpoints(cfg); err != nil {
		return o, nil, err
	}
	ths, err := cfg.ParsedThresholds()
	if err != nil {
		return o, nil, fmt.Errorf("load config %s: thresholds: %w", cfg.Source(), err)
	}
	o.Concurrency = cfg.Concurrency
	if o.Concurrency == 0 {
		o.Concurrency = spec.DefaultConcurrency
	}
	o.Rate = cfg.Rate
	if len(cfg.Patterns) > 0 {
		o.Rate = 0 // as in Crankfire, load_patterns define the rate and rate is ignored
	}
	o.Grace = cfg.GracefulShutdown
	o.Duration = cfg.Duration
	if cfg.Total > 0 {
		o.Total = uint64(cfg.Total)
	}
	if cfg.Arrival.Model == spec.ArrivalPoisson {
		o.Arrival = load.Poisson
	}
	o.Seed = uint64(cfg.Seed)
	if o.Seed == 0 {
		o.Seed = rand.Uint64()
	}
	o.Phases = Phases(cfg)
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
	o.MaxConcurrency = cfg.MaxConcurrency
	if err := l.Check(&o); err != nil {
		return o, nil, err
	}
	if o.MaxConcurrency == 0 && o.Open() {
		o.MaxConcurrency = DefaultMaxConcurrency(&o, cfg.Timeout, l)
	}
	return o, ths, nil
}

// DefaultMaxConcurrency is the open model's worker cap when the config
// sets none: as many requests as can be in flight at the peak rate when
// each takes the whole timeout (rate × timeout), at most
// spec.DefaultMaxConcurrency and the runner's load.max_concurrency, and
// never below concurrency.
func DefaultMaxConcurrency(o *load.Options, timeout time.Duration, l Limits) int {
	if timeout <= 0 {
		timeout = spec.DefaultTimeout
	}
	n := spec.DefaultMaxConcurrency
	if need := math.Ceil(PeakRate(o) * timeout.Seconds()); need < float64(n) {
		n = int(need)
	}
	if l.MaxConcurrency > 0 {
		n = min(n, l.MaxConcurrency)
	}
	return max(n, o.Concurrency)
}

// Run runs the engine and returns its measurements; the thresholds are
// judged by the caller (package outcome), once. The error is non-nil only
// when the run could not start.
func (p *Engine) Run(ctx context.Context) (*load.Result, error) {
	if p.unshared {
		return nil, errors.New("feeder: this config is distributed over several hosts, but this host's run does not share the feeder rows with them (Settings.ShareRows), so every host would send every row: run it through the cluster")
	}
	// Connections are opened before plan time 0 (best effort: a target
	// that cannot be reached now is measured as failing requests).
	if p.Driver != nil {
		n := p.Options.Concurrency
		if t := p.Options.Total; t > 0 && uint64(n) > t {
			n = int(t)
		}
		_ = p.Driver.Warm(ctx, n)
		if p.baseline != nil {
			_ = p.baseline.Warm(ctx, n)
		}
	}
	if p.vars != nil && p.vars.Auth != nil {
		// The first token before the first request: a wrong secret fails
		// the run before it starts.
		if _, err := p.vars.Auth(ctx); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	p.stopMu.Lock()
	p.stopRun = cancel
	p.stopMu.Unlock()
	res, err := load.Run(ctx, p.Options)
	p.flushTraces(ctx)
	if err != nil {
		return nil, err
	}
	if p.proto != nil {
		res.Protocol = p.proto.ProtocolStats()
	}
	if p.mixed != nil {
		res.Protocols = p.mixed.protocolStats()
	}
	res.Checks = p.checks.Stats()
	return res, nil
}

// LoadFeeder reads cfg's feeder file, if any, into cfg.Feeder.Data and
// checks that its rows parse, without building a run: a coordinator ships
// the rows to the other hosts of a multi-host run. Errors name the config.
func LoadFeeder(cfg *spec.Config) error {
	if cfg.Feeder == nil {
		return nil
	}
	if _, err := feederRows(cfg); err != nil {
		return fmt.Errorf("load config %s: %w", cfg.Source(), err)
	}
	return nil
}

// feederRows parses cfg's feeder rows, reading the file into
// cfg.Feeder.Data first unless that is already set.
func feederRows(cfg *spec.Config) (*feeder.Rows, error) {
	data := cfg.Feeder.Data
	if data == nil {
		// Through the config, so a job's feeder stays inside its workspace.
		var err error
		if data, err = cfg.ReadFileMax("feeder.path", cfg.Feeder.Path, feeder.MaxSize); err != nil {
			return nil, fmt.Errorf("feeder: %w: check feeder.path (relative paths are relative to the config file)", err)
		}
		cfg.Feeder.Data = data
	}
	typ := cfg.Feeder.Type
	if typ == "" {
		typ = strings.TrimPrefix(strings.ToLower(filepath.Ext(cfg.Feeder.Path)), ".")
	}
	return feeder.Parse(filepath.Base(cfg.Feeder.Path), typ, data)
}

// feeder loads cfg's feeder, if any, into p.vars (and its content into
// cfg.Feeder.Data), shared through share when that is set.
func (p *Engine) feeder(cfg *spec.Config, share func(*feeder.Rows) SharedFeed) error {
	if cfg.Feeder == nil {
		return nil
	}
	if cfg.Feeder.Data == nil && share != nil {
		// A host of a multi-host run reads no file of its own.
		return fmt.Errorf("feeder: this host shares the rows of a distributed run, but the coordinator shipped none: run the same forgeload version on every cluster member")
	}
	rows, err := feederRows(cfg)
	if err != nil {
		return err
	}
	rows.SetRecycle(cfg.Feeder.Recycle)
	var feed vars.Feed = rows
	if share != nil {
		sf := share(rows)
		feed, p.shared = sf, sf
	} else if ds := cfg.Distributed; ds != nil && ds.Workers > 1 {
		p.unshared = true
	}
	p.vars = &vars.Source{Feed: feed, OnExhausted: p.stop}
	return nil
}

// tracing sets up cfg's tracing block: traceparent headers, and with an
// endpoint an exporter whose connections go through the target policy.
func (p *Engine) tracing(cfg *spec.Config, s Settings) error {
	t := cfg.Tracing
	if !t.Propagates() && !t.Exports() {
		return nil
	}
	if p.vars == nil {
		p.vars = &vars.Source{}
	}
	p.vars.Trace = t.Propagates()
	if !t.Exports() {
		return nil
	}
	u, err := t.ExportURL()
	if err != nil {
		return fmt.Errorf("tracing.endpoint: %w", err)
	}
	c := tracing.Config{URL: u, Protocol: t.Protocol, ServiceName: t.ServiceName,
		DialControl: s.DialControl, Resolver: s.Resolver, CheckRedirect: s.CheckRedirect, LoadProtocol: string(cfg.Protocol)}
	if cfg.Mixed() {
		for _, ep := range cfg.Mix() {
			c.EndpointProtocols = append(c.EndpointProtocols, string(ep.Protocol))
		}
	}
	if s.Getenv != nil {
		// forgeload load, as Crankfire: the backend's headers (an API key)
		// and the service name from the standard OpenTelemetry variables.
		for _, name := range []string{"OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS"} {
			if v := s.Getenv(name); v != "" {
				if c.Headers, err = tracing.ParseHeaders(name, v); err != nil {
					return err
				}
				break
			}
		}
		if c.ServiceName == "" {
			c.ServiceName = s.Getenv("OTEL_SERVICE_NAME")
		}
	}
	exp, err := tracing.New(c)
	if err != nil {
		return err
	}
	p.tracer, p.traceSummary = exp, s.TraceSummary
	p.vars.TraceQuiet = !t.Propagates()
	p.vars.Sample = tracing.Sampler(t.SampleRate)
	return nil
}

// flushTraces sends the spans still queued, within tracing.FlushTimeout,
// and reports what was exported.
func (p *Engine) flushTraces(ctx context.Context) {
	if p.tracer == nil {
		return
	}
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), tracing.FlushTimeout)
	defer cancel()
	st := p.tracer.Shutdown(fctx)
	if p.traceSummary != nil {
		p.traceSummary(st.Summary(p.tracer.URL()), st.OK())
	}
}

// auth sets up cfg's auth block, if any, in p.vars. Token requests go
// through the target policy's dial control and redirect check like the
// load itself.
func (p *Engine) auth(cfg *spec.Config, s Settings) error {
	a := cfg.Auth
	if a == nil {
		return nil
	}
	c := auth.Config{Type: a.Type, TokenURL: a.TokenURL, ClientID: a.ClientID, ClientSecret: a.ClientSecret, Username: a.Username,
		Password: a.Password, StaticToken: a.StaticToken, Scopes: a.Scopes, RefreshBeforeExpiry: a.RefreshBeforeExpiry}
	if s.Getenv != nil {
		for _, e := range []struct {
			v   *string
			env string
		}{{&c.ClientSecret, "CRANKFIRE_AUTH_CLIENT_SECRET"}, {&c.Password, "CRANKFIRE_AUTH_PASSWORD"}, {&c.StaticToken, "CRANKFIRE_AUTH_STATIC_TOKEN"}} {
			if *e.v == "" {
				*e.v = s.Getenv(e.env)
			}
		}
	}
	dialer := &net.Dialer{Timeout: 10 * time.Second, Control: s.DialControl, Resolver: s.Resolver}
	c.HTTPClient = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{Proxy: nil, DialContext: dialer.DialContext},
		CheckRedirect: s.CheckRedirect}
	src, err := auth.New(c)
	if err != nil {
		return err
	}
	if p.vars == nil {
		p.vars = &vars.Source{}
	}
	p.vars.Auth = src
	return nil
}

// stop ends a running engine because of err (the first one wins).
func (p *Engine) stop(err error) {
	p.stopMu.Lock()
	defer p.stopMu.Unlock()
	if p.stopped != nil {
		return
	}
	p.stopped = err
	if p.stopRun != nil {
		p.stopRun(err)
	}
}

// Endless reports whether the run has no end of its own (no duration,
// total or finite pattern): it runs until its context is cancelled.
func (p *Engine) Endless() bool {
	o := &p.Options
	return o.Duration == 0 && o.Total == 0 && len(o.Stages) == 0 && len(o.VUStages) == 0
}

// Stopped returns why the engine stopped its own run before the end (the
// feeder ran out of rows), or nil. The run's result is then interrupted.
func (p *Engine) Stopped() error {
	p.stopMu.Lock()
	defer p.stopMu.Unlock()
	return p.stopped
}

// Close releases the driver's idle connections and gives back the shared
// feeder rows this host claimed and did not use; its error is that of the
// give-back (those rows are then never sent).
func (p *Engine) Close() error {
	if p.closer != nil {
		p.closer()
	}
	if p.tracer != nil {
		ctx, cancel := context.WithTimeout(context.Background(), tracing.FlushTimeout)
		p.tracer.Shutdown(ctx) // after Run, a no-op
		cancel()
	}
	if p.shared != nil {
		sf := p.shared
		p.shared = nil
		return sf.Close()
	}
	return nil
}

// Evaluate checks ths against res and returns the summary's checks.
// Thresholds against a baseline are skipped; see [EvaluateBaseline].
func Evaluate(ths []threshold.Threshold, res *load.Result) []load.Check {
	return EvaluateBaseline(ths, res, nil)
}

// EvaluateBaseline checks ths against res, and the thresholds that use
// baseline against base (a nil base skips them), and returns the
// summary's checks.
func EvaluateBaseline(ths []threshold.Threshold, res *load.Result, base threshold.Source) []load.Check {
	outs := threshold.EvaluateBaseline(ths, Source(res), base)
	checks := make([]load.Check, 0, len(outs))
	for _, o := range outs {
		actual := threshold.FormatValue(o.Threshold, o.Actual)
		switch {
		case o.Skipped:
			actual = "skipped: no baseline"
		case o.Err != nil:
			actual = o.Err.Error()
		case o.Threshold.Baseline:
			actual += " (baseline " + threshold.FormatValue(o.Threshold, o.BaselineValue) + ", bound " + threshold.FormatValue(o.Threshold, o.Bound) + ")"
		}
		checks = append(checks, load.Check{Name: o.Threshold.String(), Actual: actual, Passed: o.Passed, Skipped: o.Skipped})
	}
	return checks
}

// Messages shared by the load command and the load step.
const (
	// NoThresholdsWarning is logged for a run without thresholds.
	NoThresholdsWarning = "no thresholds: this run passes whatever latencies and errors it measures (it fails only if no request succeeds); add thresholds, e.g. 'http_req_failed:rate < 1%' and 'http_req_duration:p99 < 300ms'"
	// NothingMeasured fails a run in which no request succeeded.
	NothingMeasured = "no request succeeded, so this run measured nothing: check the target URL, that the target is up, and the status codes and error classes in the summary"
)

// Source adapts a result to the threshold package.
func Source(res *load.Result) threshold.Source { return source{res} }

type source struct{ r *load.Result }

var (
	_ threshold.Source      = source{}
	_ threshold.CheckSource = source{}
)

// CheckTotals gives the checks threshold the result's check counts.
func (s source) CheckTotals() (passed, failed int64) { return s.r.CheckTotals() }

// Resources gives the sut_cpu and sut_mem thresholds the result's SUT
// summaries.
func (s source) Resources() map[string]threshold.ResourceMetrics {
	out := make(map[string]threshold.ResourceMetrics, len(s.r.SUT))
	for _, u := range s.r.SUT {
		out[u.Target] = threshold.ResourceMetrics{
			CPUCoresMax: u.CPUCoresMax, CPUCoresMean: u.CPUCoresMean,
			CPUShareMax: u.CPUPctMax / 100, CPUShareMean: u.CPUPctMean / 100,
			MemBytesMax: u.MemBytesMax, MemBytesMean: u.MemBytesMean, MemLimitBytes: u.MemLimitBytes,
		}
	}
	return out
}

func (s source) Overall() threshold.Metrics { return overall{metrics{&s.r.Stats, s.r.Elapsed}, s.r} }

// overall adds the run's arrival metrics (dropped, achieved ratio) to
// its totals.
type overall struct {
	metrics
	r *load.Result
}

var _ threshold.ArrivalMetrics = overall{}

func (o overall) Dropped() int64                 { return o.r.Dropped }
func (o overall) AchievedRatio() (float64, bool) { return o.r.AchievedRatio() }

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
func (m metrics) Late() int64            { return m.s.Late }
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
