package cmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forgeload/forgeload/internal/pkg/load/loadtarget"
)

// TestLoadCommandMixedProtocols: `forgeload load -f` runs a config whose
// endpoints use HTTP, WebSocket and SSE against real servers on 127.0.0.1;
// the JSON summary lists the protocols with their endpoints and names the
// run's protocol mixed, and the table has a section per protocol. Before,
// the config was refused and the run described as http.
func TestLoadCommandMixedProtocols(t *testing.T) {
	parallel(t)
	h, ws, sse := loadtarget.StartHTTP(t), loadtarget.StartWebSocket(t), loadtarget.StartSSE(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "mixed.yaml")
	if err := os.WriteFile(cfg, []byte(`target: `+h.URL+`
total: 60
concurrency: 2
validity: warn
endpoints:
  - {name: rest, weight: 2, path: /api}
  - {name: chat, protocol: websocket, url: '`+ws.URL+`/echo', websocket: {messages: [hi], expect_replies: true}}
  - {name: events, protocol: sse, url: '`+sse.URL+`/events', sse: {max_events: 1}}
thresholds: ["http_req_failed:rate < 1%"]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	jsonOut := filepath.Join(dir, "summary.json")
	code, stdout, stderr := runMain(t, "load", "-f", cfg, "--json-output", jsonOut, "-q")
	if code != ExitOK {
		t.Fatalf("exit code = %d, want 0; stderr:\n%s", code, stderr)
	}
	for _, want := range []string{"\nwebsocket\n", "\nsse\n", "\nhttp\n"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks the %q section:\n%s", want, stdout)
		}
	}
	b, err := os.ReadFile(jsonOut)
	if err != nil {
		t.Fatal(err)
	}
	var sum struct {
		Requests  int64 `json:"requests"`
		Protocols []struct {
			Protocol  string   `json:"protocol"`
			Endpoints []string `json:"endpoints"`
			Requests  int64    `json:"requests"`
		} `json:"protocols"`
		Run struct {
			Protocol string `json:"protocol"`
		} `json:"run"`
	}
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	var total int64
	var names []string
	for _, p := range sum.Protocols {
		names = append(names, p.Protocol+"="+strings.Join(p.Endpoints, ","))
		total += p.Requests
	}
	if strings.Join(names, " ") != "http=rest websocket=chat sse=events" || total != sum.Requests || sum.Requests != 60 || sum.Run.Protocol != "mixed" {
		t.Errorf("json summary protocols %v over %d of %d requests, run protocol %q; want http, websocket and sse with every request, run protocol mixed\n%s",
			names, total, sum.Requests, sum.Run.Protocol, b)
	}
}
