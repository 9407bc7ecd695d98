package build

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/forgeload/forgeload/internal/pkg/load"
	"github.com/forgeload/forgeload/internal/pkg/load/outcome/summary"
	"github.com/forgeload/forgeload/internal/pkg/load/spec"
)

// TestChecksFromConfigToVerdict runs a config with response checks against
// a target that answers 200 with an error body on /orders: before checks,
// every request was a success and the run passed. Now the failed check
// fails the requests (http_req_failed), the checks threshold, and the
// summary, JSON result and Markdown name the check.
func TestChecksFromConfigToVerdict(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/orders" {
			_, _ = io.WriteString(w, `{"error": "database is down"}`)
			return
		}
		_, _ = io.WriteString(w, `{"items": [{"id": 1}]}`)
	}))
	defer srv.Close()
	cfg := parse(t, `
target: `+srv.URL+`
concurrency: 2
total: 60
checks:
  - status: [200, 201]
  - body_not_contains: error
endpoints:
  - name: users
    path: /users
    checks:
      - json: $.items[0].id
  - name: orders
    path: /orders
thresholds:
  - checks:rate > 99%
  - http_req_failed{endpoint:users}:rate < 1%
  - http_req_failed{endpoint:orders}:rate < 1%
`)
	p, err := New(cfg, Settings{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	res, err := p.Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Checks) != 3 {
		t.Fatalf("result checks = %+v, want the 3 of the config", res.Checks)
	}
	byName := map[string]load.CheckStats{}
	for _, c := range res.Checks {
		byName[c.Name] = c
	}
	status, body, js := byName["checks[0] status in [200, 201]"], byName[`checks[1] body does not contain "error"`], byName["endpoints[0].checks[0] json $.items[0].id exists"]
	if status.Passed != 60 || status.Failed != 0 || body.Failed == 0 || body.Passed != js.Passed || js.Failed != 0 || body.Passed+body.Failed != 60 {
		t.Errorf("check counts %+v, want status passed by all 60, the body check failed by every /orders request, json passed by every /users one", res.Checks)
	}
	if res.Errors != body.Failed || res.Classes["check"] != body.Failed {
		t.Errorf("errors %d, classes %v; want the %d failed checks counted as failed requests of class check", res.Errors, res.Classes, body.Failed)
	}
	verdict := Evaluate(p.Thresholds, res)
	for i, want := range []bool{false, true, false} {
		if verdict[i].Passed != want {
			t.Errorf("threshold %s passed %v (actual %s), want %v", verdict[i].Name, verdict[i].Passed, verdict[i].Actual, want)
		}
	}
	var text, md, js2 bytes.Buffer
	ws := summary.Of(res, verdict)
	if err := ws.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if err := ws.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	if err := ws.WriteJSON(&js2); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{text.String(), md.String()} {
		if !strings.Contains(out, `FAIL | checks[1] body does not contain "error"`) && !strings.Contains(out, `FAIL  checks[1] body does not contain "error"`) {
			t.Errorf("summary does not list the failed check:\n%s", out)
		}
	}
	var sum struct {
		Checks struct {
			Rate   float64
			Checks []load.CheckStats
		}
	}
	if err := json.Unmarshal(js2.Bytes(), &sum); err != nil {
		t.Fatal(err)
	}
	if len(sum.Checks.Checks) != 3 || sum.Checks.Rate <= 0 || sum.Checks.Rate >= 1 {
		t.Errorf("JSON checks = %+v, want the 3 checks and a rate between 0 and 1", sum.Checks)
	}
}

// TestChecksRefusedByOtherProtocols: a protocol refuses the checks it has
// no part of a response for, naming the key.
func TestChecksRefusedByOtherProtocols(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ src, key, proto string }{
		{"protocol: websocket\ntarget: ws://127.0.0.1:1/x\nchecks:\n  - body_contains: ok\n  - status: 101\n", "checks[1].status", "websocket"},
		{"protocol: websocket\ntarget: ws://127.0.0.1:1/x\nchecks:\n  - header: X\n", "checks[0].header", "websocket"},
		{"protocol: grpc\ntarget: 127.0.0.1:1\ngrpc: {proto_file: a.proto, service: a.B, method: C}\nchecks:\n  - status: 0\n  - header: X\n", "checks[1].header", "grpc"},
	} {
		cfg, err := spec.Parse("test.yaml", []byte(tc.src))
		if err != nil {
			t.Fatal(err)
		}
		err = cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.key+": protocol "+tc.proto+" has no") || strings.Count(err.Error(), "\n") != 0 {
			t.Errorf("Validate(%q) = %v, want one error naming %s", tc.src, err, tc.key)
		}
	}
}
