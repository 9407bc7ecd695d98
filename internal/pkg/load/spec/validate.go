package spec

import (
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/forgeload/forgeload/internal/pkg/load/extract"
	"github.com/forgeload/forgeload/internal/pkg/load/har"
	"github.com/forgeload/forgeload/internal/pkg/load/threshold"
	"github.com/forgeload/forgeload/internal/pkg/strictyaml"
)

// Validate checks c as a whole: that it describes one runnable load model,
// that URLs, weights and pattern fields make sense, that the protocol,
// feeder, auth, extractor and tracing blocks are usable, that thresholds
// parse and name known endpoints, and it reads har_file. It returns every
// problem found, each an [*Error] naming the file:line (or "inline") and
// the key, joined.
func (c *Config) Validate() error {
	v := &validator{c: c}
	v.protocol()
	v.unsupported()
	v.request()
	v.endpoints()
	v.endpointProtocols()
	v.loadModel()
	v.patterns()
	v.closedModel()
	v.thresholds()
	v.checks()
	v.distributed()
	v.baseline()
	return v.errs.Err()
}

type validator struct {
	c    *Config
	errs strictyaml.List
}

func (v *validator) fail(key, format string, args ...any) {
	v.errs.Add(v.c.errAt(key, format, args...))
}

func (v *validator) protocol() {
	c := v.c
	switch p := c.Protocol; p {
	case ProtocolHTTP, "":
		return
	case ProtocolWebSocket, ProtocolSSE, ProtocolGRPC:
	default:
		v.fail("protocol", "%q is not a protocol (want http, websocket, sse or grpc)", string(p))
		return
	}
	if len(c.Endpoints) > 0 {
		v.fail("endpoints", "endpoints are for protocol http; a %s run has one target: remove endpoints and set target, or for a mixed-protocol run remove the top-level protocol and set protocol: %s in each endpoint that uses it", c.Protocol, c.Protocol)
	}
	v.block("", c.Protocol, c.WebSocket, c.SSE, c.GRPC)
}

// block checks the block of protocol p (the config's when prefix is "",
// else the endpoint's at prefix, e.g. "endpoints[2].").
func (v *validator) block(prefix string, p Protocol, w *WebSocket, e *SSE, g *GRPC) {
	nonNegative := func(key string, d time.Duration) {
		if d < 0 {
			v.fail(prefix+key, "%s is negative (want e.g. 10s, or 0 for the default)", d)
		}
	}
	switch p {
	case ProtocolWebSocket:
		if w != nil {
			nonNegative("websocket.message_interval", w.MessageInterval)
			nonNegative("websocket.receive_timeout", w.ReceiveTimeout)
			nonNegative("websocket.handshake_timeout", w.HandshakeTimeout)
			if w.ExpectReplies && len(w.Messages) == 0 {
				v.fail(prefix+"websocket.expect_replies", "expect_replies waits for a reply to each message, but websocket.messages is empty: add messages")
			}
		}
	case ProtocolSSE:
		if e != nil {
			nonNegative("sse.read_timeout", e.ReadTimeout)
			if e.MaxEvents < 0 {
				v.fail(prefix+"sse.max_events", "%d is negative (want e.g. 100, or 0 for the default of 100)", e.MaxEvents)
			}
		}
	case ProtocolGRPC:
		if g == nil {
			v.fail(prefix+"grpc", "protocol grpc needs a grpc block with proto_file, service and method")
			return
		}
		for _, k := range []struct{ key, val, eg string }{
			{"grpc.proto_file", g.ProtoFile, "./api/orders.proto"},
			{"grpc.service", g.Service, "orders.OrderService"},
			{"grpc.method", g.Method, "CreateOrder"},
		} {
			if strings.TrimSpace(k.val) == "" {
				v.fail(prefix+k.key, "required for protocol grpc (want e.g. %s)", k.eg)
			}
		}
		nonNegative("grpc.timeout", g.Timeout)
		if v.c.Distributed != nil && v.c.Distributed.Workers > 1 {
			v.fail(prefix+"grpc.proto_file", "a .proto file cannot be used in a distributed test (the other hosts cannot read this workspace): remove distributed to run gRPC load on one host")
		}
	}
}

// checkTarget checks the target of a non-HTTP protocol.
func (v *validator) checkTarget(raw string) { v.checkTargetOf("target", v.c.Protocol, raw) }

// checkTargetOf checks raw, at key, as a target of protocol p.
func (v *validator) checkTargetOf(key string, p Protocol, raw string) {
	switch p {
	case ProtocolWebSocket:
		u, err := url.Parse(raw)
		if err != nil || u.Host == "" || (u.Scheme != "ws" && u.Scheme != "wss") {
			v.fail(key, "%q is not a ws:// or wss:// URL (want e.g. ws://api.example.com/ws)", raw)
		}
	case ProtocolGRPC:
		hp := strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(raw, "grpc://"), "grpcs://"), "/")
		if _, port, err := net.SplitHostPort(hp); err != nil || port == "" || strings.ContainsAny(hp, "/?#") {
			v.fail(key, "%q is not host:port (want e.g. orders.example.com:50051)", raw)
		}
	default:
		v.checkURL(key, raw)
	}
}

func (v *validator) unsupported() {
	c := v.c
	if a := c.Auth; a != nil {
		switch a.Type {
		case "oauth2_client_credentials", "oauth2_resource_owner":
			if u, err := url.Parse(a.TokenURL); err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
				v.fail("auth.token_url", "required for %s: an absolute http(s) URL (want e.g. https://idp.example.com/oauth/token)", a.Type)
			}
		case "oidc_implicit", "oidc_auth_code", "bearer":
		default:
			v.fail("auth.type", "%q is not an auth type (want oauth2_client_credentials, oauth2_resource_owner, oidc_implicit, oidc_auth_code or bearer)", a.Type)
		}
		if a.RefreshBeforeExpiry < 0 {
			v.fail("auth.refresh_before_expiry", "%s is negative (want e.g. 30s)", a.RefreshBeforeExpiry)
		}
	}
	if f := c.Feeder; f != nil {
		if strings.TrimSpace(f.Path) == "" {
			v.fail("feeder.path", "required: the CSV or JSON file of rows (want e.g. ./users.csv)")
		}
		if f.Type != "" && f.Type != "csv" && f.Type != "json" {
			v.fail("feeder.type", "%q is not a feeder type (want csv or json)", f.Type)
		}
	}
	v.har()
	if t := c.Tracing; t != nil && (t.SampleRate < 0 || t.SampleRate > 1) {
		v.fail("tracing.sample_rate", "%g is not between 0 and 1", t.SampleRate)
	}
	if t := c.Tracing; t != nil {
		switch t.Protocol {
		case "", "grpc", "http":
		default:
			v.fail("tracing.protocol", "%q is not an OTLP protocol (want grpc or http)", t.Protocol)
		}
		if t.Exports() {
			if _, err := t.ExportURL(); err != nil {
				v.fail("tracing.endpoint", "%v", err)
			}
		}
	}
	for i, ep := range c.Endpoints {
		for j, ex := range ep.Extractors {
			if _, err := extract.New(ex.JSONPath, ex.Regex, ex.Var, ex.OnError); err != nil {
				v.fail(fmt.Sprintf("endpoints[%d].extractors[%d]", i, j), "%v", err)
			}
		}
	}
}

// endpointProtocols checks the endpoints' own protocols and blocks: an
// endpoint of a mixed run sends only what its protocol has (a WebSocket
// endpoint its websocket.messages, a gRPC one its grpc.message), so the
// HTTP request keys are refused on it rather than ignored.
func (v *validator) endpointProtocols() {
	if v.c.Protocol != ProtocolHTTP && v.c.Protocol != "" {
		return // endpoints are refused by protocol()
	}
	checked := map[Protocol]bool{} // the config's blocks, checked once each
	for i, ep := range v.c.Endpoints {
		key := fmt.Sprintf("endpoints[%d]", i)
		p := ep.Protocol
		switch p {
		case "", ProtocolHTTP, ProtocolWebSocket, ProtocolSSE, ProtocolGRPC:
		default:
			v.fail(key+".protocol", "%q is not a protocol (want http, websocket, sse or grpc)", string(p))
			continue
		}
		p = v.c.EndpointProtocol(ep)
		for _, b := range []struct {
			proto Protocol
			set   bool
		}{{ProtocolWebSocket, ep.WebSocket != nil}, {ProtocolSSE, ep.SSE != nil}, {ProtocolGRPC, ep.GRPC != nil}} {
			if b.set && b.proto != p {
				v.fail(key+"."+string(b.proto), "this endpoint's protocol is %s, so its %s block would be ignored: set protocol: %s in this endpoint, or remove the block", p, b.proto, b.proto)
			}
		}
		if p == ProtocolHTTP {
			continue
		}
		v.nonHTTPEndpoint(key, p, ep)
		prefix := key + "."
		w, e, g := ep.WebSocket, ep.SSE, ep.GRPC
		if w == nil && e == nil && g == nil && (p != ProtocolGRPC || v.c.GRPC != nil) {
			if checked[p] {
				continue
			}
			checked[p] = true
			prefix, w, e, g = "", v.c.WebSocket, v.c.SSE, v.c.GRPC // the config's block
		}
		v.block(prefix, p, w, e, g)
	}
}

// nonHTTPEndpoint refuses on the endpoint at key, of protocol p, the keys
// its protocol does not send, and checks its URL as a target of p.
func (v *validator) nonHTTPEndpoint(key string, p Protocol, ep Endpoint) {
	instead := map[Protocol]string{ProtocolWebSocket: "websocket.messages", ProtocolSSE: "nothing but its headers", ProtocolGRPC: "grpc.message"}[p]
	for _, k := range []struct {
		name string
		set  bool
	}{{"method", ep.Method != ""}, {"body", ep.Body != ""}, {"body_file", ep.BodyFile != ""}, {"extractors", len(ep.Extractors) > 0}} {
		if k.set {
			v.fail(key+"."+k.name, "%s endpoint sends %s; %s is for HTTP endpoints: remove it", aProtocol(p), instead, k.name)
		}
	}
	if p == ProtocolGRPC && len(ep.Headers) > 0 {
		v.fail(key+".headers", "a grpc endpoint sends grpc.metadata, not headers: move them to this endpoint's grpc.metadata")
	}
	switch {
	case ep.URL != "":
		v.checkTargetOf(key+".url", p, ep.URL)
	case p == ProtocolSSE && v.c.Target != "":
		// A path (or nothing) on the config's http(s) target, as HTTP.
	default:
		v.fail(key+".url", "%s endpoint needs its own url (want e.g. %s)", aProtocol(p), map[Protocol]string{
			ProtocolWebSocket: "ws://api.example.com/ws", ProtocolSSE: "https://api.example.com/events", ProtocolGRPC: "orders.example.com:50051"}[p])
	}
}

// aProtocol is p with its article: "a websocket", "an sse".
func aProtocol(p Protocol) string {
	if p == ProtocolSSE {
		return "an " + string(p)
	}
	return "a " + string(p)
}

// har reads har_file into the config's HAR requests (once).
func (v *validator) har() {
	c := v.c
	if c.HARFile == "" {
		if c.HARFilter != "" {
			v.fail("har_filter", "har_filter filters har_file, which is not set: set har_file or remove har_filter")
		}
		return
	}
	if c.Protocol != ProtocolHTTP && c.Protocol != "" {
		v.fail("har_file", "a HAR recording is HTTP requests: it needs protocol http")
		return
	}
	if c.Distributed != nil && c.Distributed.Workers > 1 {
		// The file must not be read on the other hosts, which cannot see
		// this workspace.
		v.fail("har_file", "a HAR file cannot be used in a distributed test (the other hosts cannot read this workspace): remove distributed, or har_file")
		return
	}
	if c.harLoaded {
		return
	}
	f, err := har.ParseFilter(c.HARFilter)
	if err != nil {
		v.fail("har_filter", "%v", err)
		return
	}
	data, err := c.ReadFileMax("har_file", c.HARFile, har.MaxSize)
	if err != nil {
		v.fail("har_file", "%v", err)
		return
	}
	reqs, removed, err := har.Parse(data, f)
	if err != nil {
		v.fail("har_file", "%v", err)
		return
	}
	c.harLoaded, c.harRemoved = true, removed
	for _, r := range reqs {
		c.har = append(c.har, Endpoint{Name: r.Name, Weight: 1, Method: r.Method, URL: r.URL, Headers: r.Headers, Body: r.Body})
	}
}

// Warnings returns what the config asks for that forgeload does not do,
// for the caller to print: the run still goes ahead.
func (c *Config) Warnings() []string {
	return nil
}

// HARRemoved returns how many credential headers (Authorization, Cookie,
// …) the HAR import dropped, so a caller can say so.
func (c *Config) HARRemoved() int { return c.harRemoved }

// checkURL checks an absolute http(s) URL.
func (v *validator) checkURL(key, raw string) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		v.fail(key, "%q is not an absolute http or https URL (want e.g. https://api.example.com/users)", raw)
	}
}

func validMethod(m string) bool {
	if m == "" {
		return false
	}
	for _, r := range m {
		if r <= ' ' || r >= 0x7f || strings.ContainsRune(`()<>@,;:\"/[]?={}`, r) {
			return false
		}
	}
	return true
}

func (v *validator) checkHeaders(key string, h map[string]string) {
	for _, k := range sortedKeys(h) {
		if !validMethod(k) { // header names are HTTP tokens, like methods
			v.fail(key, "%q is not a valid header name (letters, digits and -, e.g. X-Request-Id)", k)
		}
		if strings.ContainsAny(h[k], "\r\n") {
			v.fail(key, "the value of %s contains a line break; headers must be one line", k)
		}
	}
}

func (v *validator) request() {
	c := v.c
	if c.Target != "" {
		v.checkTarget(c.Target)
	} else if len(c.Endpoints) == 0 && c.HARFile == "" {
		v.fail("target", "target is required: set it to an absolute URL (e.g. https://api.example.com/users), or give every endpoint a url")
	}
	if !validMethod(c.Method) {
		v.fail("method", "%q is not an HTTP method (want e.g. GET or POST)", c.Method)
	}
	v.checkHeaders("headers", c.Headers)
	if c.Body != "" && c.BodyFile != "" {
		v.fail("body_file", "body and body_file are both set; keep one")
	}
	if c.Timeout < 0 {
		v.fail("timeout", "%s is negative (want e.g. 30s, or 0 for no timeout)", c.Timeout)
	}
	if c.Retries < 0 {
		v.fail("retries", "%d is negative (want 0 for no retries, or e.g. 3)", c.Retries)
	}
}

func (v *validator) endpoints() {
	c := v.c
	names := map[string]int{}
	for i, ep := range c.Endpoints {
		key := fmt.Sprintf("endpoints[%d]", i)
		if ep.Weight <= 0 {
			v.fail(key+".weight", "%d is not a positive weight (want a whole number ≥ 1; weights are relative)", ep.Weight)
		}
		if ep.URL != "" {
			if c.EndpointProtocol(ep) == ProtocolHTTP {
				v.checkURL(key+".url", ep.URL) // other protocols: endpointProtocols
			}
			if ep.Path != "" {
				v.fail(key+".path", "url and path are both set; give a full url, or a path joined to target")
			}
		} else if c.Target == "" {
			v.fail(key, "has no url and there is no target: set this endpoint's url, or set target and give a path")
		}
		if ep.Method != "" && !validMethod(ep.Method) {
			v.fail(key+".method", "%q is not an HTTP method (want e.g. GET or POST)", ep.Method)
		}
		v.checkHeaders(key+".headers", ep.Headers)
		if ep.Body != "" && ep.BodyFile != "" {
			v.fail(key+".body_file", "body and body_file are both set; keep one")
		}
		if ep.Name != "" {
			if j, dup := names[strings.ToLower(ep.Name)]; dup {
				v.fail(key+".name", "%q is also the name of endpoints[%d]; endpoint names must be unique", ep.Name, j)
			} else {
				names[strings.ToLower(ep.Name)] = i
			}
		}
	}
}

// validity checks max_concurrency and validity: what the open model may
// grow to, and what a run that did not deliver its load does.
func (v *validator) validity() {
	c := v.c
	if c.MaxConcurrency < 0 {
		v.fail("max_concurrency", "%d is negative (want a whole number of workers, e.g. 500, or leave it out for min(1000, rate × timeout))", c.MaxConcurrency)
	}
	if c.MaxConcurrency > 0 && c.MaxConcurrency < c.Concurrency {
		v.fail("max_concurrency", "%d is below concurrency %d: the pool starts at concurrency and grows up to max_concurrency; raise max_concurrency or lower concurrency", c.MaxConcurrency, c.Concurrency)
	}
	if c.MaxConcurrency > 0 && c.Rate == 0 && len(c.Patterns) == 0 {
		v.fail("max_concurrency", "applies to the open model only (rate or load_patterns), where the worker pool grows on demand: remove it, or set concurrency (closed model) or vus")
	}
	if c.Validity != "" && c.Validity != ValidityFail && c.Validity != ValidityWarn {
		v.fail("validity", "%q is not a validity policy (want fail, the default, or warn)", string(c.Validity))
	}
}

func (v *validator) loadModel() {
	c := v.c
	if c.Rate < 0 {
		v.fail("rate", "%g is negative (want requests per second, e.g. 500, or 0 for as fast as the workers go)", c.Rate)
	}
	if c.Concurrency < 0 {
		v.fail("concurrency", "%d is negative (want a whole number of workers, e.g. 50)", c.Concurrency)
	}
	v.validity()
	if c.Total < 0 {
		v.fail("total", "%d is negative (want a number of requests, or 0 for no cap)", c.Total)
	}
	if c.Duration < 0 {
		v.fail("duration", "%s is negative (want e.g. 1m, or 0 for no cap)", c.Duration)
	}
	vus := c.Has("vus")
	if c.Has("concurrency") && c.Concurrency == 0 {
		v.fail("concurrency", "0 workers would send nothing (Crankfire refuses it too): use a whole number >= 1, or leave concurrency out for 1")
	}
	if vus && c.Rate > 0 {
		v.fail("vus", "vus and rate are both set: rate is the open model (arrivals per second), vus the closed model (users that loop); remove one")
	}
	if vus && len(c.Patterns) > 0 {
		v.fail("vus", "vus and load_patterns are both set: load_patterns shape an arrival rate (open model), vus run a closed model; remove one")
	}
	if vus && c.Concurrency > 0 {
		v.fail("concurrency", "concurrency and vus are both set: in the closed model vus is the number of users; remove concurrency")
	}
	if c.Arrival.Model != ArrivalUniform && c.Arrival.Model != ArrivalPoisson {
		key := "arrival.model"
		if c.Has("arrival_model") {
			key = "arrival_model"
		}
		v.fail(key, "%q is not an arrival model (want uniform or poisson)", string(c.Arrival.Model))
	}
	if c.Has("arrival") && c.Has("arrival_model") {
		v.fail("arrival_model", "arrival and arrival_model are both set; keep arrival: {model: ...}")
	}

}

// patterns checks each of load_patterns.
func (v *validator) patterns() {
	for i, p := range v.c.Patterns {
		v.pattern(fmt.Sprintf("load_patterns[%d]", i), p)
	}
}

// pattern checks one load pattern, at key, against the keys its type uses.
func (v *validator) pattern(key string, p Pattern) {
	has := func(k string) bool { return v.c.Has(key + "." + k) }
	unused := func(keys ...string) {
		for _, k := range keys {
			if has(k) {
				v.fail(key+"."+k, "%s is not used by a %s pattern; remove it", k, p.Type)
			}
		}
	}
	positive := func(k string, x float64) {
		if x < 0 {
			v.fail(key+"."+k, "%g is negative (want requests per second, e.g. 200)", x)
		}
	}
	needDuration := func() {
		if p.Duration <= 0 {
			v.fail(key+".duration", "a %s pattern needs a positive duration (want e.g. 5m)", p.Type)
		}
	}
	switch p.Type {
	case PatternRamp:
		if !has("from_rps") && !has("to_rps") {
			v.fail(key, "a ramp pattern needs from_rps and to_rps (e.g. from_rps: 10, to_rps: 200)")
		}
		positive("from_rps", p.FromRPS)
		positive("to_rps", p.ToRPS)
		if p.FromRPS == 0 && p.ToRPS == 0 && (has("from_rps") || has("to_rps")) {
			v.fail(key+".to_rps", "a ramp from 0 to 0 requests per second sends nothing; set to_rps (e.g. 200)")
		}
		needDuration()
		unused("rps", "steps")
	case PatternStep:
		v.patternSteps(key, p.Steps)
		unused("from_rps", "to_rps", "rps", "duration")
	case PatternSpike, PatternConstant:
		if p.RPS <= 0 {
			v.fail(key+".rps", "a %s pattern needs rps above 0 (want e.g. 800)", p.Type)
		}
		needDuration()
		unused("from_rps", "to_rps", "steps")
	case "":
		v.fail(key+".type", "type is required (want ramp, step or spike)")
	default:
		v.fail(key+".type", "%q is not a pattern type (want ramp, step, spike or constant)", string(p.Type))
	}
}

// patternSteps checks the steps of the step pattern at key.
func (v *validator) patternSteps(key string, steps []Step) {
	if len(steps) == 0 {
		v.fail(key+".steps", "a step pattern needs steps (e.g. steps: [{rps: 100, duration: 1m}])")
	}
	for j, s := range steps {
		sk := fmt.Sprintf("%s.steps[%d]", key, j)
		if !v.c.Has(sk + ".rps") {
			v.fail(sk, "a step needs rps (e.g. rps: 100)")
		} else if s.RPS < 0 {
			v.fail(sk+".rps", "%g is negative (want requests per second, e.g. 100)", s.RPS)
		}
		if s.Duration <= 0 {
			v.fail(sk+".duration", "a step needs a positive duration (want e.g. 1m)")
		}
	}
}

func (v *validator) closedModel() {
	c := v.c
	if c.Has("vus") {
		vu := c.VUs
		if len(vu.Stages) == 0 && vu.Count <= 0 {
			v.fail("vus", "%d is not a positive number of virtual users (want e.g. 50, or {stages: [...]})", vu.Count)
		}
		if vu.Start < 0 {
			v.fail("vus.start", "%d is negative (want e.g. 0)", vu.Start)
		}
		for i, s := range vu.Stages {
			sk := fmt.Sprintf("vus.stages[%d]", i)
			if s.Duration <= 0 {
				v.fail(sk+".duration", "a stage needs a positive duration (want e.g. 30s)")
			}
			if !c.Has(sk + ".target") {
				v.fail(sk, "a stage needs target, the number of virtual users at its end (e.g. target: 50)")
			} else if s.Target < 0 {
				v.fail(sk+".target", "%d is negative (want a number of virtual users, e.g. 50)", s.Target)
			}
		}
		if len(vu.Stages) > 0 && vu.Count <= 0 {
			v.fail("vus.stages", "no stage has a target above 0, so no virtual user would run")
		}
	}
	tt := c.ThinkTime
	if tt.Min < 0 || tt.Max < 0 {
		v.fail("think_time", "a think time cannot be negative (want e.g. 1s, or {min: 500ms, max: 2s})")
	} else if tt.Max < tt.Min {
		v.fail("think_time.max", "max %s is below min %s", tt.Max, tt.Min)
	}
	if (tt.Min > 0 || tt.Max > 0) && c.Open() {
		v.fail("think_time", "think_time applies to the closed model (vus, or concurrency without a rate); under rate or load_patterns arrivals are paced by the rate, so remove it")
	}
}

func (v *validator) thresholds() {
	c := v.c
	known := map[string]bool{}
	var names []string
	for _, ep := range c.Endpoints {
		if ep.Name != "" {
			known[ep.Name] = true
			names = append(names, ep.Name)
		}
	}
	for i, line := range c.Thresholds {
		key := "thresholds"
		t, err := threshold.Parse(line)
		if err != nil {
			v.fail(key, "%v", err)
			continue
		}
		v.thresholdPhase(line, t.Phase)
		v.thresholdAbort(i, line, t)
		if t.Endpoint != "" && !known[t.Endpoint] {
			if len(names) == 0 {
				v.fail(key, "threshold %q selects endpoint %q, but the config has no named endpoints", line, t.Endpoint)
			} else {
				v.fail(key, "threshold %q selects endpoint %q, which is not in endpoints (names: %s)", line, t.Endpoint, strings.Join(names, ", "))
			}
		}
	}
}

// thresholdAbort fails abort_on_fail on threshold i where it could never
// fire: a baseline bound (no baseline during the run) or a sut_* metric
// (summarised only at the end).
func (v *validator) thresholdAbort(i int, line string, t threshold.Threshold) {
	if !slices.ContainsFunc(v.c.ThresholdAborts, func(a ThresholdAbort) bool { return a.Index == i }) {
		return
	}
	switch {
	case t.Baseline:
		v.fail("thresholds", "threshold %q compares with a baseline, which is only read after the run: abort_on_fail cannot apply to it; give it a fixed bound or drop abort_on_fail", line)
	case t.Metric == threshold.MetricSUTCPU || t.Metric == threshold.MetricSUTMem:
		v.fail("thresholds", "threshold %q checks the system under test, which is summarised only after the run: abort_on_fail applies to http_req_duration, http_req_failed and http_requests", line)
	}
}

// thresholdPhase fails a threshold whose {phase:NAME} is not a phase of
// the config, listing the phases.
func (v *validator) thresholdPhase(line, phase string) {
	if phase == "" {
		return
	}
	names := v.c.PhaseNames()
	if slices.Contains(names, phase) {
		return
	}
	if len(names) == 0 {
		v.fail("thresholds", "threshold %q selects phase %q, but the config has no named phases: name them with load_patterns[].name or vus.stages[].name", line, phase)
		return
	}
	v.fail("thresholds", "threshold %q selects phase %q, which is not a phase of this config (phases: %s)", line, phase, strings.Join(names, ", "))
}

func (v *validator) distributed() {
	ds := v.c.Distributed
	if ds == nil {
		return
	}
	if ds.Workers < 1 {
		v.fail("distributed.workers", "distributed needs workers, the number of forgeload daemons to run the test (want e.g. 4)")
	}
	if v.c.Has("distributed.min_workers") && (ds.MinWorkers < 1 || ds.MinWorkers > ds.Workers) {
		v.fail("distributed.min_workers", "%d is not between 1 and workers (%d)", ds.MinWorkers, ds.Workers)
	}
	if ds.JoinTimeout <= 0 {
		v.fail("distributed.join_timeout", "%s is not a positive duration (want e.g. 60s)", ds.JoinTimeout)
	}
	switch ds.OnWorkerLoss {
	case LossReassign, LossContinue, LossAbort:
	default:
		v.fail("distributed.on_worker_loss", "%q is not a policy (want reassign, continue or abort)", string(ds.OnWorkerLoss))
	}
}

// Min returns MinWorkers, or Workers when MinWorkers was not given.
func (d *Distributed) Min() int {
	if d.MinWorkers > 0 {
		return d.MinWorkers
	}
	return d.Workers
}
