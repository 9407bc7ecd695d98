package spec

import "time"

// Defaults applied by [Parse] (and so by [Load]) to keys the config leaves
// out.
const (
	// DefaultMethod is the HTTP method when neither the config nor an
	// endpoint names one.
	DefaultMethod = "GET"
	// DefaultTimeout is the per-request timeout, as in Crankfire.
	DefaultTimeout = 30 * time.Second
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

// Protocols known to the format. Only ProtocolHTTP runs today; the others
// parse and are rejected by [Config.Validate].
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

	// VUs is the closed model: virtual users that loop with ThinkTime
	// between requests. Key: vus.
	VUs VUs
	// ThinkTime is the pause a virtual user takes between requests. Key:
	// think_time.
	ThinkTime ThinkTime

	// Protocol is the protocol. Key: protocol. Default http.
	Protocol Protocol
	// Auth is Crankfire's auth block; parsed, not supported yet. Key: auth.
	Auth *Auth
	// Feeder is Crankfire's data feeder; parsed, not supported yet. Key:
	// feeder.
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
	// HARFile and HARFilter are Crankfire's HAR import; parsed, not
	// supported yet. Keys: har_file, har_filter.
	HARFile   string
	HARFilter string
	// Tracing is set when the config has Crankfire's tracing block
	// (OpenTelemetry export); parsed, not supported yet. Key: tracing.
	Tracing bool

	// source names the config in errors, e.g. "perf/api.yaml".
	source string
	// origin maps key paths such as "rate" or "endpoints[1].weight" to
	// where they were set, so Validate can name file:line.
	origin map[string]origin
}

// origin is where a key was set: a line of the config, or inline.
type origin struct {
	line   int
	inline bool
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
	// Extractors are Crankfire's request chaining; parsed, not supported
	// yet. Key: extractors.
	Extractors []Extractor
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

// Feeder is Crankfire's data feeder block.
type Feeder struct {
	Path string // key: path
	Type string // key: type (csv or json)
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
}

// SSE is Crankfire's sse block.
type SSE struct {
	ReadTimeout time.Duration // key: read_timeout
	MaxEvents   int           // key: max_events
}
