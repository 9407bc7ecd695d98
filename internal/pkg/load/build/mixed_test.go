package build

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/forgeload/forgeload/internal/pkg/load"
	"github.com/forgeload/forgeload/internal/pkg/load/loadtarget"
	"github.com/forgeload/forgeload/internal/pkg/load/loadtarget/grpctarget"
	"github.com/forgeload/forgeload/internal/pkg/load/outcome/summary"
	"github.com/forgeload/forgeload/internal/pkg/load/spec"
)

// mixedTargets are one real server of each protocol on 127.0.0.1.
type mixedTargets struct {
	http  *loadtarget.HTTP
	ws    *loadtarget.WebSocket
	sse   *loadtarget.SSE
	grpc  *grpctarget.GRPC
	proto string
}

func startMixedTargets(t *testing.T) mixedTargets {
	t.Helper()
	return mixedTargets{http: loadtarget.StartHTTP(t), ws: loadtarget.StartWebSocket(t), sse: loadtarget.StartSSE(t),
		grpc: grpctarget.StartGRPC(t, nil), proto: grpctarget.ProtoFile(t)}
}

// TestMixedProtocolRun: a config whose endpoints use HTTP, WebSocket, SSE
// and gRPC (Crankfire's mixed-protocol sample, made runnable) sends each
// arrival to an endpoint picked by weight, with that endpoint's protocol,
// to real servers on 127.0.0.1. Each server receives its endpoint's share;
// the per-endpoint stats, checks and {endpoint:…} thresholds are those of
// each endpoint; and the protocols' own measurements come as one entry per
// protocol. Before, the config was refused ("endpoints are HTTP
// requests, one protocol per run").
func TestMixedProtocolRun(t *testing.T) {
	t.Parallel()
	tg := startMixedTargets(t)
	const total = 800
	cfg := parse(t, fmt.Sprintf(`
target: %s
total: %d
concurrency: 4
validity: warn
headers: {X-Run: mixed}
endpoints:
  - name: rest
    weight: 4
    path: /api
    checks: [{status: 200}]
  - name: chat
    weight: 2
    protocol: websocket
    url: %s/echo
    websocket: {messages: ['hi {{seq}}'], expect_replies: true}
    checks: [{body_contains: hi}]
  - name: events
    weight: 1
    protocol: sse
    url: %s/events
    sse: {max_events: 2}
  - name: rpc
    weight: 1
    protocol: grpc
    target: %s
    grpc: {proto_file: %s, service: loadtest.Greeter, method: SayHello, message: '{"name": "mixed"}'}
thresholds:
  - "http_req_failed{endpoint:rest}:rate < 1%%"
  - "http_req_failed{endpoint:chat}:rate < 1%%"
  - "http_req_failed{endpoint:events}:rate < 1%%"
  - "http_req_failed{endpoint:rpc}:rate < 1%%"
  - "checks:rate == 100%%"
`, tg.http.URL, total, tg.ws.URL, tg.sse.URL, tg.grpc.Addr, tg.proto))
	p, err := New(cfg, Settings{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	res, err := p.Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != total || res.Errors != 0 {
		t.Fatalf("requests %d, errors %d (%v), want %d without errors", res.Requests, res.Errors, res.Classes, total)
	}
	got := map[string]int64{}
	for _, e := range res.Endpoints {
		got[e.Name] = e.Requests
	}
	// Each endpoint's share is binomial: within 5 standard deviations.
	for name, w := range map[string]float64{"rest": 4, "chat": 2, "events": 1, "rpc": 1} {
		share := w / 8
		sd := math.Sqrt(total * share * (1 - share))
		if d := math.Abs(float64(got[name]) - total*share); d > 5*sd {
			t.Errorf("endpoint %s got %d requests, want %.0f ± %.0f (weight %g of 8)", name, got[name], total*share, 5*sd, w)
		}
	}
	// What each server received is its endpoint's requests.
	reqs := tg.http.Requests()
	if int64(len(reqs)) != got["rest"] || len(reqs) == 0 || reqs[0].URI != "/api" || reqs[0].Header.Get("X-Run") != "mixed" {
		t.Errorf("HTTP server got %d requests (first %+v), want %d to /api with X-Run", len(reqs), reqs[:min(1, len(reqs))], got["rest"])
	}
	if n := int64(len(tg.ws.Messages())); n != got["chat"] {
		t.Errorf("WebSocket server got %d messages, want one per chat session: %d", n, got["chat"])
	}
	if hs := tg.ws.Headers(); len(hs) == 0 || hs[0].Get("X-Run") != "mixed" {
		t.Errorf("WebSocket handshakes lack the config's headers: %v", hs)
	}
	if n := tg.sse.Requests(); n < 1 || n > got["events"] {
		t.Errorf("SSE server opened %d streams for %d sessions, want 1 to one per session", n, got["events"])
	}
	if n := int64(len(tg.grpc.Calls())); n != got["rpc"] {
		t.Errorf("gRPC server got %d calls, want %d", n, got["rpc"])
	}
	checkMixedProtocols(t, res, got)
	for _, c := range Evaluate(p.Thresholds, res) {
		if !c.Passed {
			t.Errorf("threshold %s failed: %s", c.Name, c.Actual)
		}
	}
	var txt bytes.Buffer
	sum := summary.Of(res, nil)
	if err := sum.WriteText(&txt); err != nil {
		t.Fatal(err)
	}
	t.Logf("summary:\n%s", txt.String())
	for _, want := range []string{"\nwebsocket\n  Endpoints", "\nsse\n  Endpoints", "\ngrpc\n  Endpoints", "\nhttp\n  Endpoints"} {
		if !strings.Contains(txt.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, txt.String())
		}
	}
}

// checkMixedProtocols checks a mixed run's per-protocol measurements
// against the endpoints' request counts got.
func checkMixedProtocols(t *testing.T, res *load.Result, got map[string]int64) {
	t.Helper()
	if res.Protocol != nil {
		t.Errorf("a mixed run's result has the single-protocol key: %+v", res.Protocol)
	}
	byName := map[string]*load.ProtocolStats{}
	var order []string
	for _, ps := range res.Protocols {
		byName[ps.Protocol] = ps
		order = append(order, ps.Protocol+"="+strings.Join(ps.Endpoints, ","))
	}
	if strings.Join(order, " ") != "http=rest websocket=chat sse=events grpc=rpc" {
		t.Fatalf("protocols %v, want http=rest websocket=chat sse=events grpc=rpc", order)
	}
	if ws := byName["websocket"]; ws.Counters["messages_sent"] != got["chat"] || ws.Counters["messages_received"] != got["chat"] || ws.Timings["message_rtt"].Count() != got["chat"] {
		t.Errorf("websocket measurements %+v, want %d messages each way with their round trips", ws.Counters, got["chat"])
	}
	if sse := byName["sse"]; sse.Counters["events"] != 2*got["events"] {
		t.Errorf("sse measurements %+v, want 2 events per session (%d)", sse.Counters, 2*got["events"])
	}
	if len(res.Checks) != 2 || res.Checks[0].Passed != got["rest"] || res.Checks[1].Passed != got["chat"] {
		t.Errorf("checks %+v, want the status check on rest's %d responses and body_contains on chat's %d replies", res.Checks, got["rest"], got["chat"])
	}
}

// TestMixedProtocolSpanNames: in a mixed run with a tracing endpoint, each
// request's span is named after its endpoint's protocol (http.request,
// ws.session, sse.session), at a real OTLP receiver. Before, every span
// was named after the run's protocol.
func TestMixedProtocolSpanNames(t *testing.T) {
	t.Parallel()
	tg := startMixedTargets(t)
	rc := grpctarget.StartOTLP(t)
	rep, err := runTraced(t, fmt.Sprintf(`
target: %s
total: 60
concurrency: 2
validity: warn
endpoints:
  - {name: rest, path: /api}
  - {name: chat, protocol: websocket, url: '%s/echo', websocket: {messages: [hi], expect_replies: true}}
  - {name: events, protocol: sse, url: '%s/events', sse: {max_events: 1}}
tracing: {endpoint: '%s', protocol: http, insecure: true}
`, tg.http.URL, tg.ws.URL, tg.sse.URL, rc.HTTPAddr), Settings{})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.complete {
		t.Fatalf("trace report %q is not complete", rep.lines)
	}
	want := map[string]string{"rest": "http.request", "chat": "ws.session", "events": "sse.session"}
	seen := map[string]int{}
	for _, sp := range rc.Spans() {
		var ep string
		for _, a := range sp.GetAttributes() {
			if a.GetKey() == "forgeload.endpoint" {
				ep = a.GetValue().GetStringValue()
			}
		}
		if sp.GetName() != want[ep] {
			t.Errorf("span of endpoint %q is named %q, want %q", ep, sp.GetName(), want[ep])
		}
		seen[ep]++
	}
	if len(seen) != 3 {
		t.Errorf("spans by endpoint %v, want spans of rest, chat and events", seen)
	}
}

// TestMixedProtocolSharesVariables: the endpoints of a mixed run share the
// virtual user's variables, so a value an HTTP endpoint extracted fills a
// later WebSocket message of the same user, as the docs say.
func TestMixedProtocolSharesVariables(t *testing.T) {
	t.Parallel()
	tg := startMixedTargets(t)
	cfg := parse(t, fmt.Sprintf(`
target: %s
vus: 2
total: 200
validity: warn
endpoints:
  - {name: login, path: /login, extractors: [{jsonpath: $.user.token, var: token}]}
  - {name: chat, protocol: websocket, url: '%s/echo', websocket: {messages: ['token={{token}}'], expect_replies: true}}
`, tg.http.URL, tg.ws.URL))
	p, err := New(cfg, Settings{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	filled := 0
	for _, m := range tg.ws.Messages() {
		switch m {
		case "token=t0k3n":
			filled++
		case "token={{token}}":
			// sent before this user's first login: an unknown
			// placeholder is sent as written, as in an HTTP run
		default:
			t.Errorf("WebSocket message %q, want token=t0k3n (or the placeholder as written before the user's first login)", m)
		}
	}
	if filled == 0 {
		t.Errorf("no WebSocket message carried the token the HTTP endpoint extracted (%d messages)", len(tg.ws.Messages()))
	}
}

// TestDocsMixedExampleRuns runs the mixed-protocol example of
// docs/load-config.md, its addresses, proto and method replaced by real
// servers' on 127.0.0.1 and its duration shortened: it validates, every
// endpoint gets requests of its protocol, and its thresholds pass.
func TestDocsMixedExampleRuns(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../../../docs/load-config.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(doc), "```yaml\n# A mixed-protocol run")
	example, _, ok2 := strings.Cut(after, "```")
	if !ok || !ok2 {
		t.Fatal("docs/load-config.md has no yaml block starting \"# A mixed-protocol run\"")
	}
	tg := startMixedTargets(t)
	yaml := strings.NewReplacer(
		"http://127.0.0.1:8080", tg.http.URL,
		"ws://127.0.0.1:8081", tg.ws.URL,
		"http://127.0.0.1:8082", tg.sse.URL,
		"127.0.0.1:50051", tg.grpc.Addr,
		"./api/orders.proto", tg.proto,
		"orders.OrderService", "loadtest.Greeter",
		"GetOrder", "SayHello",
		`{"id": "42"}`, `{"name": "42"}`,
	).Replace("# A mixed-protocol run" + example)
	cfg, err := spec.Parse("docs-example.yaml", []byte(yaml))
	if err != nil {
		t.Fatalf("the docs example does not parse: %v\n%s", err, yaml)
	}
	if err := cfg.Override(map[string]string{"duration": "2s", "validity": "warn"}); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("the docs example does not validate: %v\n%s", err, yaml)
	}
	p, err := New(cfg, Settings{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	res, err := p.Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, e := range res.Endpoints {
		got[e.Name] = e.Requests
	}
	for _, name := range []string{"list-orders", "chat", "order-events", "get-order"} {
		if got[name] == 0 {
			t.Errorf("endpoint %s got no requests: %v", name, got)
		}
	}
	if int64(len(tg.http.Requests())) != got["list-orders"] || int64(len(tg.ws.Messages())) != got["chat"] || int64(len(tg.grpc.Calls())) != got["get-order"] {
		t.Errorf("servers got %d HTTP requests, %d WebSocket messages, %d gRPC calls; endpoints %v",
			len(tg.http.Requests()), len(tg.ws.Messages()), len(tg.grpc.Calls()), got)
	}
	for _, c := range Evaluate(p.Thresholds, res) {
		if !c.Passed {
			t.Errorf("the docs example's threshold %s failed: %s", c.Name, c.Actual)
		}
	}
}
