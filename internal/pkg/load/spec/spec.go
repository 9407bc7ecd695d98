package spec

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/forgeload/forgeload/internal/pkg/load/check"
)

// Defaults applied by [Parse] (and so by [Load]) to keys the config leaves
// out.
const (
	// DefaultMethod is the HTTP method when neither the config nor an
	// endpoint names one.
	DefaultMethod = "GET"
	// DefaultTimeout is the per-request timeout, as in Crankfire.
	DefaultTimeout = 30 * time.Second
	// DefaultMaxConcurrency caps the default of max_concurrency.
	DefaultMaxConcurrency = 1000
	// DefaultJoinTimeout is how long a distributed run waits for its workers.
	DefaultJoinTimeout = 60 * time.Second
	// DefaultConcurrency is the number of workers Crankfire uses when a
	// config gives neither concurrency nor vus. Parse leaves Concurrency at
	// 0 in that case so callers can tell "not given" apart; the engine
	// glue applies this default.
	DefaultConcurrency = 1
)

// Protocol is the protocol a run speaks.
type Protocol string

// Protocols known to the format.
const (
	ProtocolHTTP      Protocol = "http"
	ProtocolWebSocket Protocol = "websocket"
	ProtocolSSE       Protocol = "sse"
	ProtocolGRPC      Protocol = "grpc"
)

// ArrivalModel is how arrivals are spaced under a rate.
type ArrivalModel string

// Arrival models.
const (
	// ArrivalUniform spaces arrivals evenly. It is the default.
	ArrivalUniform ArrivalModel = "uniform"
	// ArrivalPoisson draws exponential gaps from a seeded source.
	ArrivalPoisson ArrivalModel = "poisson"
)

// PatternType is the kind of a load pattern phase.
type PatternType string

// Pattern types.
const (
	// PatternRamp goes linearly from FromRPS to ToRPS over Duration.
	PatternRamp PatternType = "ramp"
	// PatternStep holds each of Steps' rates for its duration, in order.
	PatternStep PatternType = "step"
	// PatternSpike holds RPS for Duration.
	PatternSpike PatternType = "spike"
	// PatternConstant holds RPS for Duration (Crankfire accepts it too).
	PatternConstant PatternType = "constant"
)

// WorkerLossPolicy says what a distributed run does when a worker dies.
type WorkerLossPolicy string

// Worker-loss policies.
const (
	// LossReassign moves the dead worker's share to the others. Default.
	LossReassign WorkerLossPolicy = "reassign"
	// LossContinue goes on without the dead worker's share.
	LossContinue WorkerLossPolicy = "continue"
	// LossAbort stops the run and fails it.
	LossAbort WorkerLossPolicy = "abort"
)

// Config is one load test, as parsed from a config file and inline
// overrides. The zero value is an empty config that does not validate. A
// Config is not safe for concurrent mutation; it may be read concurrently.
type Config struct {
	// Target is the absolute URL requests go to, and the base for
	// endpoints given by path. Key: target.
	Target string
	// Method is the HTTP method, upper-cased. Key: method. Default GET.
	Method string
	// Headers are sent with every request; keys are canonicalised
	// (content-type becomes Content-Type). Key: headers.
	Headers map[string]string
	// Body is the request body. Key: body.
	Body string
	// BodyFile is a file whose content is the request body; [Load] makes it
	// relative to the config file's directory. Key: body_file.
	BodyFile string

	// Concurrency is the number of workers (open model: the most requests
	// in flight; closed model without vus: the number of loops). 0 means
	// not given; see DefaultConcurrency. Key: concurrency.
	Concurrency int
	// MaxConcurrency is, in the open model, the most workers the pool may
	// grow to when every worker is busy; 0 means the default,
	// min(1000, peak rate × timeout), and never less than Concurrency.
	// Key: max_concurrency.
	MaxConcurrency int
	// Validity is what an invalid run (one that did not deliver the load
	// asked for) does: ValidityFail (the default, "") fails it,
	// ValidityWarn only warns. Key: validity.
	Validity Validity
	// Rate is the target arrival rate in requests per second for the open
	// model; 0 means unlimited (closed loop). Key: rate.
	Rate float64
	// Duration caps the run's wall time; 0 means no cap. Key: duration.
	Duration time.Duration
	// Total caps the number of requests; 0 means no cap. Key: total.
	Total int64
	// Timeout is the per-request timeout. Key: timeout. Default 30s.
	Timeout time.Duration
	// Retries is how many times a failed request is retried. Key: retries.
	Retries int
	// GracefulShutdown is how long requests in flight may finish after the
	// run's end before they are cancelled; 0 is the engine's default and
	// a negative value cancels them at once, as in Crankfire. Key:
	// graceful_shutdown.
	GracefulShutdown time.Duration
	// Arrival is the arrival model under a rate. Keys: arrival.model, or
	// Crankfire's flat arrival_model, or arrival: poisson.
	Arrival Arrival
	// Seed seeds the Poisson arrival source so a run can be reproduced; 0
	// means a random seed chosen per run. Key: seed.
	Seed int64
	// Patterns are the phases of a varying rate, on one timeline. When
	// given they define the rate, and rate must not be set. Key:
	// load_patterns.
	Patterns []Pattern
	// Endpoints, when given, are picked per request by weight. Key:
	// endpoints.
	Endpoints []Endpoint
	// Checks are response checks run on every response (package check);
	// a response that fails one is a failed request. Key: checks.
	Checks []check.Spec
	// ChecksMaxBody bounds how much of a body checks read, in bytes; 0
	// means check.DefaultMaxBody (4 MiB). Key: checks_max_body.
	ChecksMaxBody int64

	// VUs is the closed model: virtual users that loop with ThinkTime
	// between requests. Key: vus.
	VUs VUs
	// ThinkTime is the pause a virtual user takes between requests. Key:
	// think_time.
	ThinkTime ThinkTime

	// Protocol is the protocol. Key: protocol. Default http.
	Protocol Protocol
	// Auth is Crankfire's auth block: an Authorization value for every
	// request. Key: auth.
	Auth *Auth
	// Feeder is Crankfire's data feeder: one row per request fills the
	// {{placeholders}}. Key: feeder.
	Feeder *Feeder
	// GRPC configures protocol grpc. Key: grpc.
	GRPC *GRPC
	// WebSocket configures protocol websocket. Key: websocket.
	WebSocket *WebSocket
	// SSE configures protocol sse. Key: sse.
	SSE *SSE

	// Thresholds are pass/fail criteria in the syntax of package
	// threshold, one per element. Key: thresholds (a list, or a
	// multi-line string).
	Thresholds []string
	// ThresholdAborts are the thresholds written as a mapping with
	// abort_on_fail: true, by index into Thresholds. Keys:
	// thresholds[].abort_on_fail, thresholds[].delay.
	ThresholdAborts []ThresholdAbort

	// Distributed, when not nil, splits the run over several forgeload
	// daemons that share a Redis. Key: distributed.
	Distributed *Distributed

	// JSONOutput, Dashboard, LogErrors and HTMLOutput are Crankfire's
	// output keys; they are accepted so Crankfire files parse, and the CLI
	// may honour them. Keys: json_output, dashboard, log_errors,
	// html_output.
	JSONOutput bool
	Dashboard  bool
	LogErrors  bool
	HTMLOutput string
	// HARFile is a recorded browser session whose requests join the mix
	// (Crankfire's HAR import; Validate reads it), filtered by HARFilter
	// ("host:a,b;method:GET,POST"). Keys: har_file, har_filter.
	HARFile   string
	HARFilter string
	// har are HARFile's requests once Validate has read them.
	har        []Endpoint
	harLoaded  bool
	harRemoved int
	// Tracing is Crankfire's tracing block; nil without one. Key: tracing.
	Tracing *Tracing
	// BaselineTarget, when set, makes the run a paired A/B run: every
	// other arrival goes to the same endpoint on this origin instead (see
	// [Config.BaselineMix]). Key: baseline_target.
	BaselineTarget string
	// BaselineLimits are the allowed worsenings of a paired A/B run,
	// "METRIC=PERCENT" as `forgeload compare --limit` takes them; empty
	// means the defaults of package duet. Key: baseline_limits.
	BaselineLimits []string

	// source names the config in errors, e.g. "perf/api.yaml".
	source string
	// raw is the config file's text as read by Load or LoadIn.
	raw []byte
	// root, when set, confines the files the config names (see ConfineTo).
	root *os.Root
	// bodyBytes counts what ReadFile has read, against MaxBodyBytesTotal.
	bodyBytes int64
	// origin maps key paths such as "rate" or "endpoints[1].weight" to
	// where they were set, so Validate can name file:line.
	origin map[string]origin
}

// origin is where a key was set: a line of the config, or inline.
type origin struct {
	line   int
	inline bool
}

// ThresholdAbort marks Thresholds[Index] as abort_on_fail: the run stops
// as soon as it fails, judged only after Delay of the run.
type ThresholdAbort struct {
	Index int
	Delay time.Duration
}

// Arrival is the arrival model block.
type Arrival struct {
	// Model is uniform (default) or poisson. Key: model.
	Model ArrivalModel
}

// Pattern is one phase of a load pattern. Only the fields of its Type are
// set: FromRPS, ToRPS and Duration for ramp; Steps for step; RPS and
// Duration for spike and constant.
type Pattern struct {
	// Name labels the phase in output. Key: name.
	Name string
	// Type is ramp, step, spike or constant. Key: type.
	Type PatternType
	// FromRPS and ToRPS are a ramp's start and end rate. Keys: from_rps,
	// to_rps.
	FromRPS, ToRPS float64
	// RPS is a spike's or constant phase's rate. Key: rps.
	RPS float64
	// Duration is the phase's length (not used by step). Key: duration.
	Duration time.Duration
	// Steps are a step phase's rates, held in order. Key: steps.
	Steps []Step
}

// Span returns how long the phase lasts: the sum of its steps for a step
// phase, Duration otherwise.
func (p Pattern) Span() time.Duration {
	if p.Type != PatternStep {
		return p.Duration
	}
	var d time.Duration
	for _, s := range p.Steps {
		d += s.Duration
	}
	return d
}

// Step is one rate held for a duration in a step pattern.
type Step struct {
	// RPS is the rate held. Key: rps.
	RPS float64
	// Duration is how long it is held. Key: duration.
	Duration time.Duration
}

// Endpoint is one weighted request in a mix.
type Endpoint struct {
	// Name labels the endpoint in results and per-endpoint thresholds.
	// Key: name.
	Name string
	// Weight is the endpoint's relative share; weights need not sum to
	// 100. Key: weight. Default 1.
	Weight int
	// Method overrides Config.Method when not empty. Key: method.
	Method string
	// URL is an absolute URL; when empty, Path is joined to Config.Target,
	// and when both are empty the endpoint requests Config.Target. Keys:
	// url (or Crankfire's alias target).
	URL string
	// Path is joined to Config.Target. Key: path.
	Path string
	// Headers are added to, and override, Config.Headers. Key: headers.
	Headers map[string]string
	// Body and BodyFile replace the config's body when either is set.
	// Keys: body, body_file.
	Body     string
	BodyFile string
	// Extractors take values from this endpoint's responses into the
	// virtual user's variables (Crankfire's request chaining). Key:
	// extractors.
	Extractors []Extractor
	// Checks are run on this endpoint's responses after the top-level
	// ones. Key: checks.
	Checks []check.Spec
	// Protocol is the endpoint's protocol, as Crankfire's mixed-protocol
	// sample writes it (Crankfire's binary ignores the key): http,
	// websocket, sse or grpc. Empty means the run's protocol, which must
	// then be http. A config whose endpoints use a protocol other than
	// http is a mixed run (see [Config.Mixed]): each endpoint is sent by
	// its own protocol's driver. [Config.Mix] resolves it. Key: protocol.
	Protocol Protocol
	// WebSocket, SSE and GRPC configure the endpoint's protocol; nil
	// means the config's block of the same name. Only the block of the
	// endpoint's own protocol may be set. Keys: websocket, sse, grpc.
	// (Left out of the distributed wire form when nil, so a spec without
	// them reads the same on a member that predates them.)
	WebSocket *WebSocket `json:",omitempty"`
	SSE       *SSE       `json:",omitempty"`
	GRPC      *GRPC      `json:",omitempty"`
}

// Extractor is one Crankfire response extractor.
type Extractor struct {
	JSONPath string // key: jsonpath
	Regex    string // key: regex
	Var      string // key: var
	OnError  bool   // key: on_error
}

// VUs is the closed model's virtual users: a fixed Count, or a ramp from
// Start through Stages. The zero value means the config has no vus.
type VUs struct {
	// Count is the number of virtual users, or with Stages the largest
	// number reached (so the engine can size its pool).
	Count int
	// Start is the number of virtual users before the first stage. Key:
	// vus.start.
	Start int
	// Stages ramp the number of virtual users linearly to each Target over
	// its Duration, in order. Key: vus.stages.
	Stages []VUStage
}

// Span returns how long the stages last, or 0 without stages.
func (v VUs) Span() time.Duration {
	var d time.Duration
	for _, s := range v.Stages {
		d += s.Duration
	}
	return d
}

// VUStage is one leg of a VU ramp.
type VUStage struct {
	// Name labels the leg as a phase, for per-phase thresholds and in
	// output. Key: name.
	Name string
	// Duration is how long the leg lasts. Key: duration.
	Duration time.Duration
	// Target is the number of virtual users at the end of the leg. Key:
	// target.
	Target int
}

// ThinkTime is the pause between a virtual user's requests: uniformly
// random in [Min, Max]. A single value sets both. The zero value is no
// pause.
type ThinkTime struct {
	Min, Max time.Duration
}

// Distributed splits one run over several daemons. See DISTRIBUTED.md.
type Distributed struct {
	// Workers is how many daemons run the test. Key: workers.
	Workers int
	// MinWorkers is the fewest that may start the run after JoinTimeout.
	// Key: min_workers. Default Workers.
	MinWorkers int
	// JoinTimeout is how long to wait for Workers to join. Key:
	// join_timeout. Default 60s.
	JoinTimeout time.Duration
	// OnWorkerLoss is what to do when a worker dies. Key: on_worker_loss.
	// Default reassign.
	OnWorkerLoss WorkerLossPolicy
}

// Auth is Crankfire's auth block. Its secrets never appear in errors.
type Auth struct {
	Type                string        // key: type
	TokenURL            string        // key: token_url
	ClientID            string        // key: client_id
	ClientSecret        string        // key: client_secret (secret)
	Username            string        // key: username
	Password            string        // key: password (secret)
	Scopes              []string      // key: scopes
	StaticToken         string        // key: static_token (secret)
	RefreshBeforeExpiry time.Duration // key: refresh_before_expiry
}

// Tracing is Crankfire's tracing block: W3C trace context on every
// request, and with an endpoint one OpenTelemetry span per sampled request
// exported over OTLP.
type Tracing struct {
	Endpoint    string  // key: endpoint (the OTLP receiver, host:port or an http(s) URL)
	Protocol    string  // key: protocol (grpc, the default, or http)
	ServiceName string  // key: service_name
	SampleRate  float64 // key: sample_rate (default 1)
	Insecure    bool    // key: insecure (no TLS to a host:port endpoint)
	// Propagate sends a traceparent header on every request; default true
	// when Endpoint is set. Key: propagate.
	Propagate *bool
}

// Exports reports whether spans are exported (an endpoint is set).
func (t *Tracing) Exports() bool { return t != nil && strings.TrimSpace(t.Endpoint) != "" }

// ExportURL returns the endpoint as the URL spans are sent to, which the
// target policy checks: a host:port endpoint gets http:// when insecure,
// else https://. An error says how to write the endpoint.
func (t *Tracing) ExportURL() (*url.URL, error) {
	ep := strings.TrimSpace(t.Endpoint)
	bad := fmt.Errorf("%q is not host:port or an http(s):// URL (want e.g. localhost:4317)", ep)
	if strings.Contains(ep, "://") {
		u, err := url.Parse(ep)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			return nil, bad
		}
		if u.User != nil {
			return nil, fmt.Errorf("a user or password in the URL is not supported: remove it")
		}
		if t.Insecure && u.Scheme == "https" {
			return nil, fmt.Errorf("insecure is set but the endpoint is https://: use http:// or remove insecure")
		}
		return u, nil
	}
	host, port, err := net.SplitHostPort(ep)
	if err != nil || host == "" || port == "" {
		return nil, bad
	}
	scheme := "https"
	if t.Insecure {
		scheme = "http"
	}
	return &url.URL{Scheme: scheme, Host: ep}, nil
}

// Propagates reports whether requests carry a traceparent header.
func (t *Tracing) Propagates() bool {
	if t == nil {
		return false
	}
	if t.Propagate != nil {
		return *t.Propagate
	}
	return t.Endpoint != ""
}

// Feeder is Crankfire's data feeder block.
type Feeder struct {
	// Path is the CSV or JSON file; [Load] makes it relative to the
	// config file's directory. Key: path.
	Path string
	// Type is csv or json; empty picks by Path's extension. Key: type.
	Type string
	// Recycle starts the rows over when they are used up, as Crankfire's
	// binary does; false (recycle: false, a forgeload key) stops the run
	// after the last row instead. Key: recycle. Default true.
	Recycle bool
	// Data is the file's content once read (not a key): the plan reads
	// Path into it, and a multi-host run ships it to the other hosts,
	// which use it instead of reading any file of their own.
	Data []byte
}

// GRPC is Crankfire's grpc block.
type GRPC struct {
	ProtoFile string            // key: proto_file
	Service   string            // key: service
	Method    string            // key: method
	Message   string            // key: message
	Metadata  map[string]string // key: metadata
	Timeout   time.Duration     // key: timeout
	TLS       bool              // key: tls
	Insecure  bool              // key: insecure
}

// WebSocket is Crankfire's websocket block.
type WebSocket struct {
	Messages         []string      // key: messages
	MessageInterval  time.Duration // key: message_interval
	ReceiveTimeout   time.Duration // key: receive_timeout
	HandshakeTimeout time.Duration // key: handshake_timeout
	// ExpectReplies (a forgeload key) makes each message wait for one
	// reply, whose round trip is measured. Key: expect_replies.
	ExpectReplies bool
}

// SSE is Crankfire's sse block.
type SSE struct {
	ReadTimeout time.Duration // key: read_timeout
	MaxEvents   int           // key: max_events
}

// Validity is the value of the validity key.
type Validity string

// The validity values.
const (
	// ValidityFail fails a run that did not deliver the load asked for.
	ValidityFail Validity = "fail"
	// ValidityWarn only warns about it.
	ValidityWarn Validity = "warn"
)
