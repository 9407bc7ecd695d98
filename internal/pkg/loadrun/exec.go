package loadrun

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"sync"
	"syscall"

	"github.com/forgeload/forgeload/internal/pkg/load"
	"github.com/forgeload/forgeload/internal/pkg/load/build"
	"github.com/forgeload/forgeload/internal/pkg/load/duet"
	"github.com/forgeload/forgeload/internal/pkg/load/outcome/summary"
	"github.com/forgeload/forgeload/internal/pkg/load/spec"
	"github.com/forgeload/forgeload/internal/pkg/metrics"
	"github.com/forgeload/forgeload/internal/pkg/policy"
)

// Observer receives what a load test does, for the daemon's load metrics.
// Second is called once per run-second with the engine's snapshot; it must
// not keep the snapshot's histograms past the call.
type Observer interface {
	// LoadStarted is called before the run with its protocol (http,
	// websocket, sse, grpc, or mixed for a run whose endpoints use
	// several), planned rate and, for a job's load step, what
	// it is (secrets masked) and mask, which hides the job's secrets in any
	// text shown of the run (its snapshots' endpoint names, …); info and
	// mask are nil for a segment of a multi-host run.
	LoadStarted(protocol string, targetRPS float64, info *summary.RunInfo, mask func(string) string)
	Second(s *load.Snapshot)
	LoadDone()
}

// Protocol returns cfg's protocol as the load metrics label it: mixed
// for a mixed-protocol run (spec.Config.Mixed).
func Protocol(cfg *spec.Config) string {
	if cfg.Mixed() {
		return metrics.ProtocolMixed
	}
	if cfg.Protocol == "" {
		return string(spec.ProtocolHTTP)
	}
	return string(cfg.Protocol)
}

// Policy returns pol, or when it is nil the default target policy (only
// the built-in denies) of a runner of the forge at forge.
func Policy(ctx context.Context, pol *policy.Policy, forge string) (*policy.Policy, error) {
	if pol != nil {
		return pol, nil
	}
	return policy.New(ctx, policy.Options{Forge: forge})
}

// CheckTargets checks every target of cfg (its endpoints, the auth block's
// token endpoint and the tracing endpoint) against pol before anything is sent, and returns
// their host names for [policy.Policy.HostsAllowed]. mask, if not nil,
// receives every secret the config holds (the auth block's, passwords in
// target URLs) before any error can show them.
func CheckTargets(ctx context.Context, pol *policy.Policy, cfg *spec.Config, mask func(string)) ([]string, error) {
	if mask == nil {
		mask = func(string) {}
	}
	if a := cfg.Auth; a != nil {
		for _, sec := range []string{a.ClientSecret, a.Password, a.StaticToken} {
			if sec != "" {
				mask(sec)
			}
		}
	}
	var hosts []string
	for _, raw := range targetURLs(cfg) {
		u, perr := url.Parse(raw)
		if perr == nil {
			if pw, ok := u.User.Password(); ok {
				mask(pw)
			}
		}
		if err := pol.CheckURL(ctx, raw); err != nil {
			return nil, err
		}
		if perr == nil {
			hosts = append(hosts, u.Hostname())
		}
	}
	return hosts, nil
}

// targetURLs are the URLs a run of cfg connects to: its endpoints (and
// their baseline_target twins), the auth block's token endpoint and the tracing endpoint.
func targetURLs(cfg *spec.Config) []string {
	var out []string
	for _, e := range cfg.Mix() {
		out = append(out, e.URL)
	}
	for _, e := range cfg.BaselineMix() {
		// A paired A/B run's baseline target, under the same policy.
		out = append(out, e.URL)
	}
	if a := cfg.Auth; a != nil && a.TokenURL != "" {
		out = append(out, a.TokenURL)
	}
	if u, ok := traceExportURL(cfg); ok {
		// Spans go to the tracing endpoint under the same policy.
		out = append(out, u)
	}
	return out
}

// Settings configure [New].
type Settings struct {
	// Policy is the runner's target policy: every target is checked before
	// anything is sent, every redirect before it is followed and every
	// connection at dial time. nil checks nothing: the local CLI, whose
	// user owns the machine.
	Policy *policy.Policy
	// Mask receives the config's secrets; see [CheckTargets].
	Mask func(secret string)
	// Engine are the plan settings (limits, resolver, progress, per-second
	// hook, resources, failure log). Its DialControl and CheckRedirect are
	// set by New when Policy is set.
	Engine build.Settings
}

// Test is one load test ready to run: targets checked, engine built. Run
// it once, then Close it.
type Test struct {
	// Config is the validated config it was built from.
	Config *spec.Config
	// Engine is the engine's run; callers may adjust Engine.Options (the
	// multi-host hooks) before Run.
	Engine *build.Engine
	g      *dialGuard
}

// New checks cfg's endpoint count against s.Engine.Limits, its targets
// against s.Policy, and builds its run under s.Engine.Limits. Errors mean bad input (or a denied target) and say how
// to fix it.
func New(ctx context.Context, cfg *spec.Config, s Settings) (*Test, error) {
	t := &Test{Config: cfg}
	es := s.Engine
	// Before anything that costs per endpoint (a policy check each).
	if err := es.Limits.CheckEndpoints(cfg); err != nil {
		return nil, err
	}
	if s.Policy != nil {
		hosts, err := CheckTargets(ctx, s.Policy, cfg, s.Mask)
		if err != nil {
			return nil, err
		}
		t.g = &dialGuard{control: s.Policy.Control(s.Policy.HostsAllowed(hosts)), targets: targetURLs(cfg)}
		es.DialControl = t.g.dial
		es.CheckRedirect = t.g.redirect(s.Policy.CheckRedirect)
	}
	p, err := build.New(cfg, es)
	if err != nil {
		return nil, err
	}
	t.Engine = p
	return t, nil
}

// Outcome is what a [Test.Run] measured and why it stopped early, if it
// did.
type Outcome struct {
	Result *load.Result
	// Refused is the policy's refusal at dial time (the DNS answer changed
	// to a denied address) or of a redirect, which stopped the run; nil if
	// none.
	Refused error
	// Stopped is why the engine stopped the run before its end (feeder
	// rows ran out with recycle off, …); nil if it did not.
	Stopped error
	// Duet is the verdict of a paired A/B run (baseline_target); nil for
	// any other run.
	Duet *duet.Verdict
}

// Stop is why the run stopped before its end, refusal first; nil if it
// did not.
func (o *Outcome) Stop() error {
	if o.Refused != nil {
		return o.Refused
	}
	return o.Stopped
}

// Run runs the test (its thresholds are judged by the caller, with
// package outcome). The error is non-nil only
// when the run could not start (or panicked: see [load.Panic]). A refusal
// at dial time or of a redirect cancels the run at once.
func (t *Test) Run(ctx context.Context) (*Outcome, error) {
	runCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	if t.g != nil {
		t.g.arm(stop)
	}
	res, err := t.Engine.Run(runCtx)
	if err != nil {
		return nil, err
	}
	out := &Outcome{Result: res, Stopped: t.Engine.Stopped()}
	if c := t.Engine.Duet; c != nil {
		lim, err := t.Config.ParsedBaselineLimits()
		if err != nil {
			return nil, err // Validate refused it already
		}
		cand, base := c.Totals()
		v := duet.Judge(c.Seconds(), cand, base, lim)
		v.Candidate, v.Baseline = origin(t.Config.Mix()[0].URL), origin(t.Config.BaselineTarget)
		out.Duet = &v
	}
	if t.g != nil {
		out.Refused = t.g.refusal()
	}
	return out, nil
}

// Close releases the test's connections and gives back the shared feeder
// rows it claimed and did not use; its error is that of the give-back.
func (t *Test) Close() error { return t.Engine.Close() }

// dialGuard enforces the policy at dial time and on redirects, and stops
// the run at the first refusal, keeping it for the result.
type dialGuard struct {
	control func(network, address string, c syscall.RawConn) error
	targets []string // the run's target URLs, to name the one refused
	mu      sync.Mutex
	refused error
	stop    context.CancelCauseFunc
}

func (g *dialGuard) dial(network, address string, c syscall.RawConn) error {
	err := g.control(network, address, c)
	if err != nil {
		var v *policy.Violation
		if errors.As(err, &v) && v.Target == "" {
			// The policy saw only the address; the refusal names the target
			// (the policy's message hides its credentials).
			v.Target = dialedTarget(g.targets, address)
		}
		g.refuse(err)
	}
	return err
}

// redirect wraps the policy's redirect check: a refusal fails the
// request and stops the run. Other errors (too many redirects, a name
// that does not resolve) fail only the request.
func (g *dialGuard) redirect(check func(*http.Request, []*http.Request) error) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		err := check(req, via)
		if errors.Is(err, policy.ErrDenied) {
			g.refuse(err)
		}
		return err
	}
}

// refuse keeps the first refusal and stops the run.
func (g *dialGuard) refuse(err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.refused == nil {
		g.refused = err
		if g.stop != nil {
			g.stop(err)
		}
	}
}

// dialedTarget returns the one target of targets that a connection to
// address (the resolved host:port) can be for: the URL when one target
// has that port, its origin (scheme, user info and host) when several with
// that port share one host, else "" (which of several hosts resolved there
// is not known at dial time).
func dialedTarget(targets []string, address string) string {
	_, port, err := net.SplitHostPort(address)
	if err != nil {
		return ""
	}
	var match []*url.URL
	raw := ""
	for _, t := range targets {
		u, err := url.Parse(t)
		if err != nil || u.Host == "" {
			continue
		}
		p := u.Port()
		if p == "" {
			p = "80"
			if u.Scheme == "https" || u.Scheme == "wss" || u.Scheme == "grpcs" {
				p = "443"
			}
		}
		if p != port {
			continue
		}
		if len(match) > 0 && u.Host != match[0].Host {
			return ""
		}
		match = append(match, u)
		raw = t
	}
	switch len(match) {
	case 0:
		return ""
	case 1:
		return raw
	}
	o := *match[0]
	o.Path, o.RawPath, o.RawQuery, o.Fragment = "", "", "", ""
	return o.String()
}

// arm makes the first refusal stop the run; a refusal before it (while
// connections were prepared) stops it at once.
func (g *dialGuard) arm(stop context.CancelCauseFunc) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.stop = stop
	if g.refused != nil {
		stop(g.refused)
	}
}

func (g *dialGuard) refusal() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.refused
}

// origin is raw's scheme and host, without credentials, path or query:
// how a paired run's summary names each side.
func origin(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

// traceExportURL returns the URL cfg exports spans to, if it has a
// tracing endpoint: it is a target like the others, checked against the
// policy and allowed at dial time.
func traceExportURL(cfg *spec.Config) (string, bool) {
	if !cfg.Tracing.Exports() {
		return "", false
	}
	u, err := cfg.Tracing.ExportURL()
	if err != nil {
		return "", false // Validate refused it already
	}
	return u.String(), true
}
