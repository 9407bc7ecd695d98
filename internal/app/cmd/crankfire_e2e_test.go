package cmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/forgeload/forgeload/internal/pkg/load/loadtarget"
	"github.com/forgeload/forgeload/internal/pkg/load/loadtarget/grpctarget"
)

// crankfireTargets are the servers the Crankfire-format corpus aims at.
type crankfireTargets struct {
	oauth *loadtarget.OAuth2
	http  *loadtarget.HTTP
	ws    *loadtarget.WebSocket
	sse   *loadtarget.SSE
	grpc  *grpctarget.GRPC
	otlp  *grpctarget.OTLP
	proto string
}

// crankfireSummary is the part of the JSON summary the corpus checks.
type crankfireSummary struct {
	Requests     int64            `json:"requests"`
	Errors       int64            `json:"errors"`
	ErrorClasses map[string]int64 `json:"error_classes"`
	Protocol     *struct {
		Protocol string           `json:"protocol"`
		Counters map[string]int64 `json:"counters"`
	} `json:"protocol"`
}

// TestE2ECrankfireCorpus runs each config of testdata/crankfire through the
// real binary against real servers on 127.0.0.1, and judges it by what the
// servers received. Validity is judged only where it is what the config
// shows (feeder-exhausted.yml, whose run is INVALID); the others run with
// --validity warn, since a CPU-starved generator on a busy test machine is
// rightly INVALID but is not what they test.
func TestE2ECrankfireCorpus(t *testing.T) {
	parallelLong(t, 5)
	tests := []struct {
		file  string
		code  int
		check func(t *testing.T, tg *crankfireTargets, sum *crankfireSummary)
	}{
		{"chaining.yml", ExitOK, func(t *testing.T, tg *crankfireTargets, sum *crankfireSummary) {
			created := false
			gets := 0
			for _, r := range tg.http.Requests() {
				if r.URI == "/orders" {
					created = true
					continue
				}
				gets++
				wantID, wantTok := "/orders/none", "none"
				if created {
					wantID, wantTok = "/orders/abc-123", "t0k3n"
				}
				if r.URI != wantID || r.Header.Get("X-Token") != wantTok {
					t.Errorf("after create=%v: %s X-Token %q, want %s %q", created, r.URI, r.Header.Get("X-Token"), wantID, wantTok)
				}
			}
			if gets == 0 || !created {
				t.Errorf("the random mix sent %d gets and created=%v; want both kinds", gets, created)
			}
		}},
		{"auth-oauth2.yml", ExitOK, func(t *testing.T, tg *crankfireTargets, sum *crankfireSummary) {
			var got []string
			for _, r := range tg.http.Requests() {
				got = append(got, r.Header.Get("Authorization"))
			}
			// tok-1 was fetched before the run; each request needed a new one.
			if strings.Join(got, ",") != "Bearer tok-2,Bearer tok-3,Bearer tok-4" {
				t.Errorf("Authorization headers = %q, want a refreshed token per request", got)
			}
			if g := tg.oauth.Grants(); len(g) != 4 || g[0].Scope != "api:read" {
				t.Errorf("grants = %+v", g)
			}
		}},
		{"auth-password-grpc.yml", ExitOK, func(t *testing.T, tg *crankfireTargets, sum *crankfireSummary) {
			calls := tg.grpc.Calls()
			if len(calls) != 2 || !strings.HasPrefix(strings.Join(calls[0].Metadata.Get("authorization"), ""), "Bearer tok-") {
				t.Errorf("calls = %d, authorization %v", len(calls), calls)
			}
			if g := tg.oauth.Grants(); len(g) == 0 || g[0].Type != "password" || g[0].Username != "alice" {
				t.Errorf("grants = %+v", g)
			}
		}},
		{"auth-static-websocket.yml", ExitOK, func(t *testing.T, tg *crankfireTargets, sum *crankfireSummary) {
			if h := tg.ws.Headers(); len(h) == 0 || h[0].Get("Authorization") != "Bearer static-abc" {
				t.Errorf("handshake headers %v", h)
			}
		}},
		{"auth-bad-secret.yml", ExitBadInput, func(t *testing.T, tg *crankfireTargets, sum *crankfireSummary) {
			if n := len(tg.http.Requests()); n != 0 {
				t.Errorf("server saw %d requests, want none", n)
			}
		}},
		{"basic-auth-url.yml", ExitOK, func(t *testing.T, tg *crankfireTargets, sum *crankfireSummary) {
			reqs := tg.http.Requests()
			if len(reqs) != 2 || reqs[0].URI != "/private" || reqs[0].Header.Get("Authorization") != "Basic dXNlcjpwQHNz" {
				t.Errorf("server saw %+v, want Basic user:p@ss", reqs)
			}
		}},
		{"tracing.yml", ExitOK, func(t *testing.T, tg *crankfireTargets, sum *crankfireSummary) {
			seen := map[string]bool{}
			for _, r := range tg.http.Requests() {
				tp := r.Header.Get("Traceparent")
				if len(tp) != 55 || !strings.HasPrefix(tp, "00-") || !strings.HasSuffix(tp, "-01") || seen[tp] {
					t.Errorf("traceparent %q: want a new W3C trace context per request", tp)
				}
				seen[tp] = true
			}
			if len(seen) != 3 {
				t.Errorf("%d traced requests, want 3", len(seen))
			}
			spans := tg.otlp.Spans()
			for _, sp := range spans {
				if k := grpctarget.SpanKey(sp); !seen["00-"+k+"-01"] {
					t.Errorf("span %s matches no traceparent the target received (%v)", k, seen)
				}
			}
			// One export or more (the batch processor's timer may fire
			// between spans on a loaded machine), each from service loadtest.
			if services := slices.Compact(tg.otlp.Services()); len(spans) != 3 || !slices.Equal(services, []string{"loadtest"}) {
				t.Errorf("the OTLP receiver has %d spans from %v, want 3 from service loadtest", len(spans), tg.otlp.Services())
			}
		}},
		{"har.yml", ExitOK, func(t *testing.T, tg *crankfireTargets, sum *crankfireSummary) {
			reqs := tg.http.Requests()
			if len(reqs) != 10 {
				t.Fatalf("server saw %d requests, want 10", len(reqs))
			}
			for _, r := range reqs {
				ok := r.Method == "GET" && r.URI == "/api/users?page=1" && r.Header.Get("Accept") == "application/json" ||
					r.Method == "POST" && r.URI == "/api/users" && r.Body == `{"name": "a"}`
				if !ok || r.Header.Get("Cookie") != "" || r.Header.Get("Authorization") != "" {
					t.Errorf("replayed %s %s %v %q", r.Method, r.URI, r.Header, r.Body)
				}
			}
		}},
		{"feeder-csv.yml", ExitOK, func(t *testing.T, tg *crankfireTargets, sum *crankfireSummary) {
			reqs := tg.http.Requests()
			if len(reqs) != 3 {
				t.Fatalf("server saw %d requests, want 3", len(reqs))
			}
			for i, want := range []struct{ uri, email, role string }{
				{"/users/101", "alice@example.com", "admin"}, {"/users/102", "bob@example.com", "user"}, {"/users/103", "charlie@example.com", "user"},
			} {
				r := reqs[i]
				if r.URI != want.uri || r.Header.Get("X-User-Email") != want.email || r.Header.Get("X-User-Role") != want.role || r.Header.Get("Authorization") != "Bearer no-auth" {
					t.Errorf("request %d = %s %v, want %+v and the default token", i+1, r.URI, r.Header, want)
				}
			}
		}},
		{"feeder-json.json", ExitOK, func(t *testing.T, tg *crankfireTargets, sum *crankfireSummary) {
			reqs := tg.http.Requests()
			if len(reqs) != 2 || reqs[0].Method != "POST" ||
				reqs[0].Body != `{"id": "p1001", "name": "Widget", "price": 49.99}` || reqs[1].Body != `{"id": "p1002", "name": "Gadget", "price": 79.99}` {
				t.Errorf("server saw %+v", reqs)
			}
		}},
		{"feeder-exhausted.yml", ExitFailure, func(t *testing.T, tg *crankfireTargets, sum *crankfireSummary) {
			if n := len(tg.http.Requests()); n != 3 {
				t.Errorf("server saw %d requests, want the 3 rows", n)
			}
		}},
		{"feeder-recycle.yml", ExitOK, func(t *testing.T, tg *crankfireTargets, sum *crankfireSummary) {
			reqs := tg.http.Requests()
			var uris []string
			for _, r := range reqs {
				uris = append(uris, r.URI)
				if got := r.Header.Get("X-Missing"); got != "{{no_such_column}}" {
					t.Errorf("X-Missing = %q, want the placeholder as written, as Crankfire sends it", got)
				}
			}
			if want := "/users/101 /users/102 /users/103 /users/101 /users/102 /users/103 /users/101"; strings.Join(uris, " ") != want {
				t.Errorf("server saw %q, want the 3 rows over again, %q", strings.Join(uris, " "), want)
			}
		}},
		{"feeder-websocket.yml", ExitOK, func(t *testing.T, tg *crankfireTargets, sum *crankfireSummary) {
			if got := strings.Join(tg.ws.Messages(), "\n"); got != `{"user": "101", "role": "admin"}`+"\n"+`{"user": "102", "role": "user"}`+"\n"+`{"user": "103", "role": "user"}` {
				t.Errorf("server received %s", got)
			}
		}},
		{"feeder-sse.yml", ExitOK, func(t *testing.T, tg *crankfireTargets, sum *crankfireSummary) {
			h := tg.sse.Headers()
			if len(h) != 3 || h[2].Get("X-User-Email") != "charlie@example.com" {
				t.Errorf("stream headers %v", h)
			}
		}},
		{"feeder-grpc.yml", ExitOK, func(t *testing.T, tg *crankfireTargets, sum *crankfireSummary) {
			calls := tg.grpc.Calls()
			if len(calls) != 3 {
				t.Fatalf("server saw %d calls", len(calls))
			}
			var req struct {
				Name  string `json:"name"`
				Count int    `json:"count"`
			}
			if err := json.Unmarshal([]byte(calls[1].JSON), &req); err != nil || req.Name != "Bob Johnson" || req.Count != 102 {
				t.Errorf("second call = %s (%v)", calls[1].JSON, err)
			}
			if got := calls[1].Metadata.Get("x-user-email"); len(got) != 1 || got[0] != "bob@example.com" {
				t.Errorf("metadata = %v", got)
			}
		}},
		{"websocket-echo.yml", ExitOK, func(t *testing.T, tg *crankfireTargets, sum *crankfireSummary) {
			msgs := tg.ws.Messages()
			if len(msgs) != 12 || msgs[0] != `{"type": "ping"}` {
				t.Errorf("server received %d messages (%q), want 12 starting with the ping", len(msgs), msgs)
			}
			if h := tg.ws.Headers(); len(h) == 0 || h[0].Get("X-Client-Id") != "loadtest-client" {
				t.Errorf("handshake headers %v lack X-Client-ID", h)
			}
			if sum.Protocol == nil || sum.Protocol.Counters["messages_received"] != 12 {
				t.Errorf("summary protocol section = %+v, want 12 messages received", sum.Protocol)
			}
		}},
		{"websocket-receive-window.yml", ExitOK, func(t *testing.T, tg *crankfireTargets, sum *crankfireSummary) {
			if n := len(tg.ws.Messages()); n != 4 {
				t.Errorf("server received %d messages, want 4", n)
			}
			if sum.Protocol.Counters["messages_received"] != 8 {
				t.Errorf("counters %v, want the 8 replies collected", sum.Protocol.Counters)
			}
		}},
		{"sse.json", ExitOK, func(t *testing.T, tg *crankfireTargets, sum *crankfireSummary) {
			// As in Crankfire, a session that ends on max_events leaves its
			// stream open for the next: two workers open at most two.
			if n := tg.sse.Requests(); n < 1 || n > 2 {
				t.Errorf("server saw %d streams for 5 sessions of 2 workers, want 1 or 2", n)
			}
			if h := tg.sse.Headers(); len(h) == 0 || h[0].Get("X-Client-Id") != "sse-client" || h[0].Get("Accept") != "text/event-stream" {
				t.Errorf("stream headers %v", h)
			}
			if sum.Protocol.Counters["events"] != 15 {
				t.Errorf("counters %v, want 15 events", sum.Protocol.Counters)
			}
		}},
		{"grpc-unary.yml", ExitOK, func(t *testing.T, tg *crankfireTargets, sum *crankfireSummary) {
			calls := tg.grpc.Calls()
			if len(calls) != 10 {
				t.Fatalf("server saw %d calls, want 10", len(calls))
			}
			var req struct {
				Name  string `json:"name"`
				Count int    `json:"count"`
			}
			c := calls[0]
			if err := json.Unmarshal([]byte(c.JSON), &req); err != nil || c.Method != "SayHello" || req.Name != "LoadTest" || req.Count != 7 {
				t.Errorf("call = %s %s (%v)", c.Method, c.JSON, err)
			}
			if md := strings.Join(c.Metadata.Get("x-tenant-id"), ","); md != "tenant-a" {
				t.Errorf("metadata x-tenant-id = %q, want tenant-a", md)
			}
		}},
		{"grpc-stream.yml", ExitOK, func(t *testing.T, tg *crankfireTargets, sum *crankfireSummary) {
			if n := len(tg.grpc.Calls()); n != 3 {
				t.Errorf("server saw %d calls, want 3", n)
			}
			if sum.Protocol.Counters["stream_messages"] != 6 {
				t.Errorf("counters %v, want 6 stream messages", sum.Protocol.Counters)
			}
		}},
		{"grpc-status.yml", ExitFailure, func(t *testing.T, tg *crankfireTargets, sum *crankfireSummary) {
			if n := len(tg.grpc.Calls()); n != 4 {
				t.Errorf("server saw %d calls, want 4", n)
			}
			if sum.ErrorClasses["grpc_not_found"] != 4 {
				t.Errorf("error classes %v, want 4 grpc_not_found", sum.ErrorClasses)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			parallelSub(t)
			tg := &crankfireTargets{oauth: loadtarget.StartOAuth2(t, 1), http: loadtarget.StartHTTP(t), ws: loadtarget.StartWebSocket(t), sse: loadtarget.StartSSE(t),
				grpc: grpctarget.StartGRPC(t, nil), otlp: grpctarget.StartOTLP(t), proto: grpctarget.ProtoFile(t)}
			n := newNode(t, "")
			copyCorpus(t, n.dir, strings.NewReplacer("@OAUTH@", tg.oauth.URL, "@HTTPUSER@", strings.Replace(tg.http.URL, "://", "://user:p%40ss@", 1), "@HTTP@", tg.http.URL, "@WS@", tg.ws.URL, "@SSE@", tg.sse.URL, "@GRPC@", tg.grpc.Addr, "@OTLP@", tg.otlp.GRPCAddr, "@PROTO@", tg.proto))
			path := filepath.Join(n.dir, tt.file)
			out := filepath.Join(n.dir, "summary.json")
			args := []string{"load", "-f", path, "-q", "--json-output", out}
			if tt.file != "feeder-exhausted.yml" {
				args = append(args, "--validity", "warn")
			}
			code, output := n.forgeload(args...)
			if code != tt.code {
				t.Fatalf("exit code %d, want %d; output:\n%s", code, tt.code, output)
			}
			if tt.file == "tracing.yml" && !strings.Contains(output, "tracing: exported 3 of 3 spans to http://"+tg.otlp.GRPCAddr) {
				t.Errorf("output does not say the 3 spans were exported:\n%s", output)
			}
			if tt.file == "har.yml" && !strings.Contains(output, "2 recorded credential headers") {
				t.Errorf("output does not say the recorded credentials were dropped:\n%s", output)
			}
			if strings.HasPrefix(tt.file, "feeder-exhausted") && !strings.Contains(output, "users.csv has 3 rows and all were used") {
				t.Errorf("output does not say the feeder ran out:\n%s", output)
			}
			for _, secret := range []string{"s3cret", "not-the-secret", "static-abc", "tok-", "recorded-secret", "p%40ss", "p@ss"} {
				if strings.Contains(output, secret) {
					t.Errorf("the output holds the secret %q:\n%s", secret, output)
				}
			}
			if tt.code == ExitBadInput {
				tt.check(t, tg, nil)
				return
			}
			b, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			var sum crankfireSummary
			if err := json.Unmarshal(b, &sum); err != nil {
				t.Fatal(err)
			}
			if sum.Protocol == nil && (strings.Contains(tt.file, "websocket") || strings.Contains(tt.file, "sse") || strings.Contains(tt.file, "grpc")) {
				t.Fatalf("summary has no protocol section:\n%s", b)
			}
			tt.check(t, tg, &sum)
		})
	}
}

// copyCorpus copies every file of testdata/crankfire into dir, with the
// server addresses filled in.
func copyCorpus(t *testing.T, dir string, addrs *strings.Replacer) {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join("testdata", "crankfire"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("testdata", "crankfire", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), []byte(addrs.Replace(string(b))), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// TestE2ECrankfireFlags runs the binary with Crankfire's flags only.
func TestE2ECrankfireFlags(t *testing.T) {
	parallelLong(t, 5)
	t.Run("http", func(t *testing.T) {
		parallelSub(t)
		srv := loadtarget.StartHTTP(t)
		n := newNode(t, "")
		out := filepath.Join(n.dir, "s.json")
		code, output := n.forgeload("load", "--target", srv.URL+"/users", "--method", "post", "--header", "X-A=1", "--header", "X-B: two",
			"--body", `{"a": 1}`, "-t", "3", "-r", "100", "--timeout", "5s", "--retries", "1", "--graceful-shutdown", "2s", "-q", "--json-output", out)
		if code != ExitOK {
			t.Fatalf("exit %d:\n%s", code, output)
		}
		reqs := srv.Requests()
		if len(reqs) != 3 || reqs[0].Method != "POST" || reqs[0].Header.Get("X-A") != "1" || reqs[0].Header.Get("X-B") != "two" || reqs[0].Body != `{"a": 1}` {
			t.Errorf("server saw %+v", reqs)
		}
		b, _ := os.ReadFile(out)
		var sum struct {
			Total *int64   `json:"total"`
			P99   *float64 `json:"p99_latency_ms"`
		}
		if err := json.Unmarshal(b, &sum); err != nil || sum.Total == nil || *sum.Total != 3 || sum.P99 == nil {
			t.Errorf("JSON lacks Crankfire's total/p99_latency_ms: %s", b)
		}
	})
	t.Run("websocket and --config", func(t *testing.T) {
		parallelSub(t)
		ws := loadtarget.StartWebSocket(t)
		n := newNode(t, "")
		cfg := filepath.Join(n.dir, "c.yml")
		if err := os.WriteFile(cfg, []byte("total: 2\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		code, output := n.forgeload("load", "--config", cfg, "--protocol", "websocket", "--target", ws.URL+"/twice",
			"--ws-messages", "a", "--ws-messages", "b", "--ws-receive-timeout", "200ms", "-q")
		if code != ExitOK {
			t.Fatalf("exit %d:\n%s", code, output)
		}
		if got := strings.Join(ws.Messages(), ","); got != "a,b,a,b" {
			t.Errorf("server received %q", got)
		}
	})
	t.Run("tracing", func(t *testing.T) {
		parallelSub(t)
		srv := loadtarget.StartHTTP(t)
		otlp := grpctarget.StartOTLP(t)
		n := newNode(t, "")
		// The backend's API key comes from OpenTelemetry's variable, as with
		// Crankfire, and the service name too when no flag sets it.
		code, output := n.forgeloadEnv([]string{"OTEL_EXPORTER_OTLP_HEADERS=x-api-key=s3cret%20key,x-team=load", "OTEL_SERVICE_NAME=from-env"},
			"load", "--target", srv.URL+"/", "-t", "4", "-q", "--tracing-endpoint", otlp.GRPCAddr,
			"--tracing-protocol", "grpc", "--tracing-insecure", "--tracing-sample-rate", "1")
		if code != ExitOK || !strings.Contains(output, "tracing: exported 4 of 4 spans") || strings.Contains(output, "s3cret") {
			t.Fatalf("exit %d, want 0 and the export line, without the API key:\n%s", code, output)
		}
		if got := len(otlp.Spans()); got != 4 || !slices.Equal(slices.Compact(otlp.Services()), []string{"from-env"}) {
			t.Errorf("the OTLP receiver has %d spans from %v, want 4 from from-env", got, otlp.Services())
		}
		for _, h := range otlp.Headers() {
			if h.Get("X-Api-Key") != "s3cret key" || h.Get("X-Team") != "load" {
				t.Errorf("an export carried headers %v, want the ones from OTEL_EXPORTER_OTLP_HEADERS", h)
			}
		}
		code, output = n.forgeload("load", "--target", srv.URL+"/", "-t", "2", "-q", "--tracing-endpoint", otlp.HTTPAddr,
			"--tracing-protocol", "http", "--tracing-insecure", "--tracing-service-name", "cli")
		if code != ExitOK || !strings.Contains(output, "tracing: exported 2 of 2 spans") || !slices.Contains(otlp.Services(), "cli") {
			t.Errorf("OTLP/HTTP: exit %d, services %v, want 2 spans from cli:\n%s", code, otlp.Services(), output)
		}
	})
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"non-number", []string{"--retries", "abc"}, "retries"},
		{"bad sample rate", []string{"--tracing-endpoint", "localhost:4317", "--tracing-sample-rate", "2"}, "tracing.sample_rate: 2 is not between 0 and 1"},
		{"concurrency 0", []string{"--concurrency", "0"}, "concurrency: 0 workers would send nothing"},
		{"bad header", []string{"--header", "nope"}, `--header "nope": want key=value`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			parallelSub(t)
			n := newNode(t, "")
			code, output := n.forgeload(append([]string{"load", "--target", "http://127.0.0.1:1/", "--total", "1", "-q"}, tt.args...)...)
			if code != ExitBadInput || !strings.Contains(output, tt.want) {
				t.Errorf("exit %d, output:\n%s\nwant 2 and %q", code, output, tt.want)
			}
		})
	}
}
