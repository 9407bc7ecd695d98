package spec

import (
	"errors"
	"strings"
	"testing"
)

// base is a valid open-model config that cases extend.
const base = "target: https://api.example.com\nrate: 10\nduration: 1m\n"

func TestValidateOK(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, src string }{
		{"open model", base},
		{"crankfire closed loop", "target: http://127.0.0.1:8080/\nconcurrency: 10\ntotal: 1000\n"},
		{"crankfire defaults only", "target: https://x.example.com\nduration: 10s\n"},
		{"patterns end the run", "target: https://x.example.com\nload_patterns: [{type: spike, rps: 5, duration: 1s}]\n"},
		{"ramp from zero", "target: https://x.example.com\nload_patterns: [{type: ramp, to_rps: 5, duration: 1s}]\n"},
		{"constant pattern", "target: https://x.example.com\nload_patterns: [{type: constant, rps: 5, duration: 1s}]\n"},
		{"step with zero rps", "target: https://x.example.com\nload_patterns: [{type: step, steps: [{rps: 0, duration: 1s}, {rps: 5, duration: 1s}]}]\n"},
		{"vus stages end the run", "target: https://x.example.com\nvus: {stages: [{duration: 10s, target: 5}]}\nthink_time: {min: 1s, max: 2s}\n"},
		{"concurrency with think time", "target: https://x.example.com\nconcurrency: 5\nthink_time: 1s\nduration: 1m\n"},
		{"poisson with rate", base + "arrival: {model: poisson}\nseed: 7\n"},
		{"endpoints with urls only", "endpoints: [{url: https://a.example.com/x}, {url: http://b.example.com:8080/y, weight: 3}]\nrate: 1\ntotal: 5\n"},
		{"endpoint defaults to target", base + "endpoints: [{name: root}]\n"},
		{"endpoint protocol http (Crankfire's mixed sample)", base + "endpoints: [{name: root, protocol: HTTP}]\n"},
		{"mixed without http: a top-level grpc status check", base + "checks: [{status: 0}]\nendpoints:\n  - {target: 'x.example.com:1', protocol: grpc, grpc: {proto_file: /p, service: a.S, method: M}}\n"},
		{"mixed protocols", base + "websocket: {messages: [hi]}\nendpoints:\n  - {name: x, path: /a, checks: [{status: 200}]}\n  - {url: ws://x.example.com/c, protocol: websocket, checks: [{body_contains: hi}]}\n  - {path: /e, protocol: sse, sse: {max_events: 2}}\n  - {target: 'x.example.com:1', protocol: grpc, grpc: {proto_file: /p, service: a.S, method: M}, checks: [{status: 0}]}\nthresholds: ['http_req_failed{endpoint:x}:rate < 1%']\n"},
		{"per-endpoint threshold", base + "endpoints: [{name: login, path: /login}]\nthresholds: ['http_req_duration{endpoint:login}:p99 < 1s']\n"},
		{"crankfire's plain fraction and milliseconds", base + "thresholds: ['http_req_failed:rate < 0.01', 'http_req_duration:p95 < 500']\n"},
		{"distributed", base + "distributed: {workers: 4, min_workers: 1, join_timeout: 5s, on_worker_loss: abort}\n"},
		{"non-selected protocol blocks are ignored", base + "websocket: {messages: [hi]}\nsse: {max_events: 1}\n"},
		{"zero timeout", base + "timeout: 0\n"},
		{"poisson without rate (closed model, as Crankfire)", "target: https://x.example.com\nconcurrency: 2\nduration: 1s\narrival: poisson\n"},
		{"rate with load_patterns (the patterns win, as Crankfire)", base + "load_patterns: [{type: spike, rps: 5, duration: 1s}]\n"},
		{"no end (runs until stopped)", "target: https://x.example.com\nrate: 100\n"},
		{"graceful_shutdown", base + "graceful_shutdown: -1s\n"},
		{"websocket", "protocol: websocket\ntarget: wss://x.example.com/ws\nrate: 5\nduration: 1m\nwebsocket: {messages: [hi], message_interval: 1s, receive_timeout: 2s, handshake_timeout: 3s, expect_replies: true}\n"},
		{"sse", "protocol: sse\ntarget: http://x.example.com/events\nconcurrency: 2\nduration: 1m\nsse: {read_timeout: 30s, max_events: 10}\n"},
		{"grpc host:port", "protocol: grpc\ntarget: x.example.com:50051\nrate: 5\nduration: 1m\ngrpc: {proto_file: a.proto, service: a.B, method: C, tls: true}\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := mustParse(t, tt.src)
			if err := c.Validate(); err != nil {
				t.Errorf("Validate(%q) = %v, want nil", tt.src, err)
			}
		})
	}
}

// TestValidateErrors pins every semantic message, with the file:line of the
// key at fault.
func TestValidateErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		src  string
		want string // the whole error, or with a leading "..." a line of it
	}{
		{"no target", "rate: 1\nduration: 1s\n", `test.yaml: target: target is required: set it to an absolute URL (e.g. https://api.example.com/users), or give every endpoint a url`},
		{"relative target", "target: api.example.com/users\nrate: 1\nduration: 1s\n", `test.yaml:1: target: "api.example.com/users" is not an absolute http or https URL (want e.g. https://api.example.com/users)`},
		{"ftp target", "target: ftp://x.example.com\nrate: 1\nduration: 1s\n", `test.yaml:1: target: "ftp://x.example.com" is not an absolute http or https URL (want e.g. https://api.example.com/users)`},
		{"bad method", base + "method: GE T\n", `test.yaml:4: method: "GE T" is not an HTTP method (want e.g. GET or POST)`},
		{"bad header name", base + "headers: {'bad header': x}\n", `test.yaml:4: headers: "bad header" is not a valid header name (letters, digits and -, e.g. X-Request-Id)`},
		{"header line break", base + "headers: {X-A: \"a\\nb\"}\n", `test.yaml:4: headers: the value of X-A contains a line break; headers must be one line`},
		{"body and body_file", base + "body: x\nbody_file: y\n", `test.yaml:5: body_file: body and body_file are both set; keep one`},
		{"negative timeout", base + "timeout: -1s\n", `test.yaml:4: timeout: -1s is negative (want e.g. 30s, or 0 for no timeout)`},
		{"negative retries", base + "retries: -1\n", `test.yaml:4: retries: -1 is negative (want 0 for no retries, or e.g. 3)`},
		{"negative rate", "target: https://x.example.com\nrate: -5\nduration: 1s\n", `test.yaml:2: rate: -5 is negative (want requests per second, e.g. 500, or 0 for as fast as the workers go)`},
		{"negative concurrency", base + "concurrency: -2\n", `test.yaml:4: concurrency: -2 is negative (want a whole number of workers, e.g. 50)`},
		{"negative total", base + "total: -2\n", `test.yaml:4: total: -2 is negative (want a number of requests, or 0 for no cap)`},
		{"negative duration", "target: https://x.example.com\nrate: 1\nduration: -1m\ntotal: 5\n", `test.yaml:3: duration: -1m0s is negative (want e.g. 1m, or 0 for no cap)`},
		{"endpoint protocol unknown", base + "endpoints: [{url: wss://x.example.com/chat, protocol: mqtt}]\n", `test.yaml:4: endpoints[0].protocol: "mqtt" is not a protocol (want http, websocket, sse or grpc)`},
		{"websocket endpoint with an http url", base + "endpoints: [{url: https://x.example.com/chat, protocol: websocket}]\n", `test.yaml:4: endpoints[0].url: "https://x.example.com/chat" is not a ws:// or wss:// URL (want e.g. ws://api.example.com/ws)`},
		{"websocket endpoint without url", base + "endpoints: [{path: /chat, protocol: websocket}]\n", `test.yaml:4: endpoints[0].url: a websocket endpoint needs its own url (want e.g. ws://api.example.com/ws)`},
		{"websocket endpoint with a body", base + "endpoints: [{url: ws://x.example.com/chat, protocol: websocket, body: hi}]\n", `test.yaml:4: endpoints[0].body: a websocket endpoint sends websocket.messages; body is for HTTP endpoints: remove it`},
		{"grpc endpoint without grpc block", base + "endpoints: [{target: 'x.example.com:1', protocol: grpc}]\n", `test.yaml:4: endpoints[0].grpc: protocol grpc needs a grpc block with proto_file, service and method`},
		{"grpc endpoint with headers", base + "endpoints: [{target: 'x.example.com:1', protocol: grpc, headers: {X-A: b}, grpc: {proto_file: /p, service: a.S, method: M}}]\n", `test.yaml:4: endpoints[0].headers: a grpc endpoint sends grpc.metadata, not headers: move them to this endpoint's grpc.metadata`},
		{"grpc endpoint distributed", base + "endpoints: [{target: 'x.example.com:1', protocol: grpc, grpc: {proto_file: /p, service: a.S, method: M}}]\ndistributed: {workers: 2}\n", `test.yaml:4: endpoints[0].grpc.proto_file: a .proto file cannot be used in a distributed test (the other hosts cannot read this workspace): remove distributed to run gRPC load on one host`},
		{"endpoint block of another protocol", base + "endpoints: [{url: ws://x.example.com/c, protocol: websocket, sse: {max_events: 1}}]\n", `test.yaml:4: endpoints[0].sse: this endpoint's protocol is websocket, so its sse block would be ignored: set protocol: sse in this endpoint, or remove the block`},
		{"endpoint negative block value", base + "endpoints: [{url: ws://x.example.com/c, protocol: websocket, websocket: {message_interval: -1s}}]\n", `test.yaml:4: endpoints[0].websocket.message_interval: -1s is negative (want e.g. 10s, or 0 for the default)`},
		{"mixed top-level status check", base + "checks: [{status: 200}]\nendpoints: [{path: /a}, {url: ws://x.example.com/c, protocol: websocket}]\n", `test.yaml:4: checks[0].status: the websocket endpoints have no status to check: use body_contains, body_not_contains, json, or move the check into the checks of the endpoints it is for (top-level checks run on every endpoint)`},
		{"sse endpoint with a method", base + "endpoints: [{url: 'http://x.example.com/e', protocol: sse, method: POST}]\n", `test.yaml:4: endpoints[0].method: an sse endpoint sends nothing but its headers; method is for HTTP endpoints: remove it`},
		{"config's grpc block reported once", base + "grpc: {proto_file: /p, service: a.S}\nendpoints: [{target: 'x.example.com:1', protocol: grpc}, {target: 'x.example.com:2', protocol: grpc}]\n", `test.yaml:4: grpc.method: required for protocol grpc (want e.g. CreateOrder)`},
		{"mixed baseline", base + "baseline_target: http://b.example.com\nendpoints: [{path: /a}, {url: ws://x.example.com/c, protocol: websocket}]\n", `test.yaml:4: baseline_target: a paired A/B run works with protocol http only, and this config's endpoints mix protocols: remove baseline_target, or the endpoints' protocol keys`},
		{"rate and vus", base + "vus: 5\n", `test.yaml:4: vus: vus and rate are both set: rate is the open model (arrivals per second), vus the closed model (users that loop); remove one`},
		{"patterns and vus", "target: https://x.example.com\nvus: 5\nload_patterns: [{type: spike, rps: 5, duration: 1s}]\n", `test.yaml:2: vus: vus and load_patterns are both set: load_patterns shape an arrival rate (open model), vus run a closed model; remove one`},
		{"concurrency and vus", "target: https://x.example.com\nvus: 5\nconcurrency: 5\nduration: 1s\n", `test.yaml:3: concurrency: concurrency and vus are both set: in the closed model vus is the number of users; remove concurrency`},
		{"bad arrival", base + "arrival: {model: burst}\n", `test.yaml:4: arrival.model: "burst" is not an arrival model (want uniform or poisson)`},
		{"bad flat arrival", base + "arrival_model: burst\n", `test.yaml:4: arrival_model: "burst" is not an arrival model (want uniform or poisson)`},
		{"both arrival spellings", base + "arrival: poisson\narrival_model: poisson\n", `test.yaml:5: arrival_model: arrival and arrival_model are both set; keep arrival: {model: ...}`},
		{"pattern without type", "target: https://x.example.com\nload_patterns:\n  - {rps: 5, duration: 1s}\n", `test.yaml:3: load_patterns[0].type: type is required (want ramp, step or spike)`},
		{"pattern bad type", "target: https://x.example.com\nload_patterns:\n  - {type: wave, rps: 5, duration: 1s}\n", `test.yaml:3: load_patterns[0].type: "wave" is not a pattern type (want ramp, step, spike or constant)`},
		{"ramp without rates", "target: https://x.example.com\nload_patterns:\n  - {type: ramp, duration: 1m}\n", `test.yaml:3: load_patterns[0]: a ramp pattern needs from_rps and to_rps (e.g. from_rps: 10, to_rps: 200)`},
		{"ramp zero to zero", "target: https://x.example.com\nload_patterns:\n  - {type: ramp, from_rps: 0, to_rps: 0, duration: 1m}\n", `test.yaml:3: load_patterns[0].to_rps: a ramp from 0 to 0 requests per second sends nothing; set to_rps (e.g. 200)`},
		{"ramp negative", "target: https://x.example.com\nload_patterns:\n  - {type: ramp, from_rps: -1, to_rps: 5, duration: 1m}\n", `test.yaml:3: load_patterns[0].from_rps: -1 is negative (want requests per second, e.g. 200)`},
		{"ramp without duration", "target: https://x.example.com\nload_patterns:\n  - type: ramp\n    to_rps: 5\n", `test.yaml:3: load_patterns[0].duration: a ramp pattern needs a positive duration (want e.g. 5m)`},
		{"ramp with steps", "target: https://x.example.com\nload_patterns:\n  - type: ramp\n    to_rps: 5\n    duration: 1s\n    steps: []\n", `test.yaml:6: load_patterns[0].steps: steps is not used by a ramp pattern; remove it`},
		{"step without steps", "target: https://x.example.com\nload_patterns:\n  - type: step\n", `test.yaml:3: load_patterns[0].steps: a step pattern needs steps (e.g. steps: [{rps: 100, duration: 1m}])`},
		{"step without rps", "target: https://x.example.com\nload_patterns:\n  - type: step\n    steps:\n      - duration: 1m\n", `test.yaml:5: load_patterns[0].steps[0]: a step needs rps (e.g. rps: 100)`},
		{"step without duration", "target: https://x.example.com\nload_patterns:\n  - type: step\n    steps:\n      - rps: 5\n", `test.yaml:5: load_patterns[0].steps[0].duration: a step needs a positive duration (want e.g. 1m)`},
		{"step with rps", "target: https://x.example.com\nload_patterns:\n  - type: step\n    rps: 4\n    steps: [{rps: 5, duration: 1s}]\n", `test.yaml:4: load_patterns[0].rps: rps is not used by a step pattern; remove it`},
		{"spike without rps", "target: https://x.example.com\nload_patterns:\n  - type: spike\n    duration: 10s\n", `test.yaml:3: load_patterns[0].rps: a spike pattern needs rps above 0 (want e.g. 800)`},
		{"spike with to_rps", "target: https://x.example.com\nload_patterns:\n  - {type: spike, rps: 5, duration: 1s, to_rps: 9}\n", `test.yaml:3: load_patterns[0].to_rps: to_rps is not used by a spike pattern; remove it`},
		{"zero vus", "target: https://x.example.com\nvus: 0\nduration: 1s\n", `test.yaml:2: vus: 0 is not a positive number of virtual users (want e.g. 50, or {stages: [...]})`},
		{"vus stage without target", "target: https://x.example.com\nvus:\n  stages:\n    - duration: 1m\n", `...test.yaml:4: vus.stages[0]: a stage needs target, the number of virtual users at its end (e.g. target: 50)`},
		{"vus stage without duration", "target: https://x.example.com\nvus:\n  stages:\n    - target: 4\n", `test.yaml:4: vus.stages[0].duration: a stage needs a positive duration (want e.g. 30s)`},
		{"vus all zero", "target: https://x.example.com\nvus:\n  stages:\n    - {target: 0, duration: 1s}\n", `test.yaml:3: vus.stages: no stage has a target above 0, so no virtual user would run`},
		{"think time reversed", "target: https://x.example.com\nvus: 2\nduration: 1s\nthink_time: {min: 2s, max: 1s}\n", `test.yaml:4: think_time.max: max 1s is below min 2s`},
		{"think time negative", "target: https://x.example.com\nvus: 2\nduration: 1s\nthink_time: -1s\n", `test.yaml:4: think_time: a think time cannot be negative (want e.g. 1s, or {min: 500ms, max: 2s})`},
		{"think time under rate", base + "think_time: 1s\n", `test.yaml:4: think_time: think_time applies to the closed model (vus, or concurrency without a rate); under rate or load_patterns arrivals are paced by the rate, so remove it`},
		{"zero weight", base + "endpoints:\n  - {path: /a, weight: 0}\n", `test.yaml:5: endpoints[0].weight: 0 is not a positive weight (want a whole number ≥ 1; weights are relative)`},
		{"endpoint bad url", base + "endpoints:\n  - {url: /a}\n", `test.yaml:5: endpoints[0].url: "/a" is not an absolute http or https URL (want e.g. https://api.example.com/users)`},
		{"endpoint url and path", base + "endpoints:\n  - {url: https://a.example.com, path: /a}\n", `test.yaml:5: endpoints[0].path: url and path are both set; give a full url, or a path joined to target`},
		{"endpoint path without target", "rate: 1\nduration: 1s\nendpoints:\n  - {path: /a}\n", `test.yaml:4: endpoints[0]: has no url and there is no target: set this endpoint's url, or set target and give a path`},
		{"endpoint bad method", base + "endpoints:\n  - {path: /a, method: 'P OST'}\n", `test.yaml:5: endpoints[0].method: "P OST" is not an HTTP method (want e.g. GET or POST)`},
		{"endpoint body twice", base + "endpoints:\n  - {path: /a, body: x, body_file: y}\n", `test.yaml:5: endpoints[0].body_file: body and body_file are both set; keep one`},
		{"duplicate endpoint names", base + "endpoints:\n  - {name: Login, path: /a}\n  - {name: login, path: /b}\n", `test.yaml:6: endpoints[1].name: "login" is also the name of endpoints[0]; endpoint names must be unique`},
		{"bad threshold", base + "thresholds:\n  - http_req_duration:p99 < soon\n", `test.yaml:4: thresholds: threshold "http_req_duration:p99 < soon": column 25: want a duration such as 300ms, 0.5s or 250 (milliseconds), got "soo"…`},
		{"plain failure rate of 1", base + "thresholds:\n  - http_req_failed:rate < 1\n", `test.yaml:4: thresholds: threshold "http_req_failed:rate < 1": column 24: the failure rate has no unit, and a plain number of 1 or more is not a fraction: write 1% or 0.01`},
		{"threshold unknown endpoint", base + "endpoints: [{name: a, path: /a}, {name: b, path: /b}]\nthresholds: ['http_req_failed{endpoint:c}:rate < 1%']\n", `test.yaml:5: thresholds: threshold "http_req_failed{endpoint:c}:rate < 1%" selects endpoint "c", which is not in endpoints (names: a, b)`},
		{"threshold endpoint without endpoints", base + "thresholds: ['http_req_failed{endpoint:c}:rate < 1%']\n", `test.yaml:4: thresholds: threshold "http_req_failed{endpoint:c}:rate < 1%" selects endpoint "c", but the config has no named endpoints`},
		{"websocket needs a ws url", base + "protocol: websocket\n", `test.yaml:1: target: "https://api.example.com" is not a ws:// or wss:// URL (want e.g. ws://api.example.com/ws)`},
		{"grpc needs host:port", "target: https://api.example.com\nrate: 10\nduration: 1m\nprotocol: grpc\ngrpc: {proto_file: a.proto, service: a.B, method: C}\n", `test.yaml:1: target: "https://api.example.com" is not host:port (want e.g. orders.example.com:50051)`},
		{"grpc needs proto_file", "target: 127.0.0.1:50051\nrate: 10\nduration: 1m\nprotocol: grpc\ngrpc: {service: a.B, method: C}\n", `test.yaml:5: grpc.proto_file: required for protocol grpc (want e.g. ./api/orders.proto)`},
		{"grpc needs a block", "target: 127.0.0.1:50051\nrate: 10\nduration: 1m\nprotocol: grpc\n", `test.yaml: grpc: protocol grpc needs a grpc block with proto_file, service and method`},
		{"sse max_events negative", base + "protocol: sse\nsse: {max_events: -1}\n", `test.yaml:5: sse.max_events: -1 is negative (want e.g. 100, or 0 for the default of 100)`},
		{"expect_replies without messages", "target: ws://127.0.0.1:1/\nrate: 10\nduration: 1m\nprotocol: websocket\nwebsocket: {expect_replies: true}\n", `test.yaml:5: websocket.expect_replies: expect_replies waits for a reply to each message, but websocket.messages is empty: add messages`},
		{"endpoints with websocket", "target: ws://127.0.0.1:1/\nrate: 10\nduration: 1m\nprotocol: websocket\nendpoints: [{path: /a}]\n", `test.yaml:5: endpoints: endpoints are for protocol http; a websocket run has one target: remove endpoints and set target, or for a mixed-protocol run remove the top-level protocol and set protocol: websocket in each endpoint that uses it`},
		{"concurrency 0", base + "concurrency: 0\n", `test.yaml:4: concurrency: 0 workers would send nothing (Crankfire refuses it too): use a whole number >= 1, or leave concurrency out for 1`},
		{"protocol unknown", base + "protocol: quic\n", `test.yaml:4: protocol: "quic" is not a protocol (want http, websocket, sse or grpc)`},
		{"auth without token_url", base + "auth:\n  type: oauth2_client_credentials\n  client_secret: hunter2\n", `test.yaml:4: auth.token_url: required for oauth2_client_credentials: an absolute http(s) URL (want e.g. https://idp.example.com/oauth/token)`},
		{"auth type", base + "auth: {type: magic, static_token: hunter2}\n", `test.yaml:4: auth.type: "magic" is not an auth type (want oauth2_client_credentials, oauth2_resource_owner, oidc_implicit, oidc_auth_code or bearer)`},
		{"feeder type", base + "feeder: {path: u.csv, type: xml}\n", `test.yaml:4: feeder.type: "xml" is not a feeder type (want csv or json)`},
		{"feeder path", base + "feeder: {type: csv}\n", `test.yaml:4: feeder.path: required: the CSV or JSON file of rows (want e.g. ./users.csv)`},
		{"har missing", base + "har_file: x.har\n", `test.yaml:4: har_file: har_file x.har: open x.har: no such file or directory`},
		{"har distributed", base + "har_file: /etc/passwd\ndistributed: {workers: 2}\n", `test.yaml:4: har_file: a HAR file cannot be used in a distributed test (the other hosts cannot read this workspace): remove distributed, or har_file`},
		{"grpc distributed", "target: 127.0.0.1:1\nrate: 10\nduration: 1m\nprotocol: grpc\ngrpc: {proto_file: /etc/passwd, service: a.B, method: C}\ndistributed: {workers: 2}\n", `test.yaml:5: grpc.proto_file: a .proto file cannot be used in a distributed test (the other hosts cannot read this workspace): remove distributed to run gRPC load on one host`},
		{"har filter alone", base + "har_filter: host:x\n", `test.yaml:4: har_filter: har_filter filters har_file, which is not set: set har_file or remove har_filter`},
		{"tracing sample rate", base + "tracing: {endpoint: 'localhost:4317', sample_rate: 2}\n", `test.yaml:4: tracing.sample_rate: 2 is not between 0 and 1`},
		{"extractor without var", base + "endpoints:\n  - path: /a\n    extractors: [{jsonpath: $.id}]\n", `test.yaml:6: endpoints[0].extractors[0]: var is required: the name later requests use as {{name}}`},
		{"extractor bad regex", base + "endpoints:\n  - path: /a\n    extractors: [{regex: '(', var: x}]\n", "test.yaml:6: endpoints[0].extractors[0]: regex \"(\": error parsing regexp: missing closing ): `(`"},
		{"distributed without workers", base + "distributed: {min_workers: 1}\n", `...test.yaml:4: distributed.workers: distributed needs workers, the number of forgeload daemons to run the test (want e.g. 4)`},
		{"min above workers", base + "distributed: {workers: 2, min_workers: 3}\n", `test.yaml:4: distributed.min_workers: 3 is not between 1 and workers (2)`},
		{"zero join timeout", base + "distributed: {workers: 2, join_timeout: 0}\n", `test.yaml:4: distributed.join_timeout: 0s is not a positive duration (want e.g. 60s)`},
		{"bad loss policy", base + "distributed:\n  workers: 2\n  on_worker_loss: retry\n", `test.yaml:6: distributed.on_worker_loss: "retry" is not a policy (want reassign, continue or abort)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := mustParse(t, tt.src)
			err := c.Validate()
			if err == nil {
				t.Fatalf("Validate(%q) = nil, want %q", tt.src, tt.want)
			}
			if line, ok := strings.CutPrefix(tt.want, "..."); ok {
				if !strings.Contains(err.Error()+"\n", line+"\n") {
					t.Errorf("Validate(%q) error =\n  %s\nwant a line\n  %s", tt.src, err, line)
				}
			} else if err.Error() != tt.want {
				t.Errorf("Validate(%q) error =\n  %s\nwant\n  %s", tt.src, err, tt.want)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("Validate error leaks a secret: %s", err)
			}
			var se *Error
			if !errors.As(err, &se) {
				t.Errorf("Validate error %T holds no *spec.Error", err)
			}
		})
	}
}

func TestValidateReportsAll(t *testing.T) {
	t.Parallel()
	c := mustParse(t, "target: nope\nrate: -1\nprotocol: sse\nsse: {max_events: -2}\nconcurrency: 0\n")
	err := c.Validate()
	if err == nil {
		t.Fatal("Validate = nil, want errors")
	}
	for _, w := range []string{"test.yaml:1: target:", "test.yaml:2: rate:", "test.yaml:4: sse.max_events:", "test.yaml:5: concurrency: 0 workers"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("Validate error\n%s\ndoes not contain %q", err, w)
		}
	}
	var zero Config
	if zero.Validate() == nil {
		t.Error("zero Config validated, want an error")
	}
}
