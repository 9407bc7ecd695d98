package loadrun

import (
	"strings"
	"testing"

	"github.com/forgeload/forgeload/internal/pkg/load/loadtarget"
	"github.com/forgeload/forgeload/internal/pkg/metrics"
	"github.com/forgeload/forgeload/internal/pkg/redistest"
)

// TestDistributedMixedProtocols: a mixed-protocol config (HTTP, WebSocket
// and SSE endpoints) over two pools through a real Redis: every host
// sends its share of the arrivals to the endpoints by weight, each with
// its protocol's driver, against real servers on 127.0.0.1, and the
// merged result has each endpoint's requests, equal to what its server
// received. The load metrics label the run mixed.
func TestDistributedMixedProtocols(t *testing.T) {
	t.Parallel()
	h, ws, sse := loadtarget.StartHTTP(t), loadtarget.StartWebSocket(t), loadtarget.StartSSE(t)
	rs := redistest.Start(t)
	rdb := redisClient(t, rs.Addr())
	startPools(t, rdb, map[string]string{"w1": rs.Addr(), "w2": rs.Addr()}, nil)
	cfg := validated(t, "mixed.yaml", `
target: `+h.URL+`
rate: 60
duration: 2s
concurrency: 2
validity: warn
endpoints:
  - {name: rest, weight: 2, path: /api}
  - {name: chat, weight: 1, protocol: websocket, url: '`+ws.URL+`/echo', websocket: {messages: [hi], expect_replies: true}}
  - {name: events, weight: 1, protocol: sse, url: '`+sse.URL+`/events', sse: {max_events: 1}}
distributed: {workers: 2, join_timeout: 20s}
`, nil)
	if got := Protocol(cfg); got != metrics.ProtocolMixed {
		t.Errorf("Protocol(mixed config) = %q, want %q", got, metrics.ProtocolMixed)
	}
	d, err := Coordinate(t.Context(), cfg, CoordSettings{Cluster: redisCluster{rdb}, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	res := d.Result
	got := map[string]int64{}
	var sum int64
	for _, e := range res.Endpoints {
		got[e.Name] = e.Requests
		sum += e.Requests
	}
	if res.Requests == 0 || sum != res.Requests || got["rest"] == 0 || got["chat"] == 0 || got["events"] == 0 {
		t.Fatalf("merged endpoints %v over %d requests, want each of rest, chat and events", got, res.Requests)
	}
	if res.Errors != 0 {
		t.Errorf("merged errors %d (%v), want none", res.Errors, res.Classes)
	}
	if n := int64(len(h.Requests())); n != got["rest"] {
		t.Errorf("HTTP server got %d requests, merged rest %d", n, got["rest"])
	}
	if n := int64(len(ws.Messages())); n != got["chat"] {
		t.Errorf("WebSocket server got %d messages, merged chat %d", n, got["chat"])
	}
	if n := sse.Requests(); n < 1 || n > got["events"] {
		t.Errorf("SSE server opened %d streams for %d merged sessions", n, got["events"])
	}
}

// TestSpecRoundTripMixed: a mixed config's endpoint protocols and blocks
// reach the workers, as spec version 3, which a member that predates mixed
// runs refuses rather than send the endpoints as HTTP; a config of one
// protocol is still version 2, without endpoint block fields, as such
// members read it.
func TestSpecRoundTripMixed(t *testing.T) {
	t.Parallel()
	cfg := validated(t, "mixed.yaml", "target: http://127.0.0.1:9/\nrate: 1\nduration: 1s\nendpoints:\n  - {path: /a}\n  - {protocol: websocket, url: 'ws://127.0.0.1:9/c', websocket: {messages: [hi]}}\ndistributed: {workers: 2}\n", nil)
	b, err := EncodeSpec(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), `{"v":3,`) {
		t.Errorf("EncodeSpec(mixed config) = %.40s, want version 3, which members that predate mixed runs refuse", b)
	}
	got, err := DecodeSpec(b)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Mixed() || got.Endpoints[1].WebSocket == nil || got.Endpoints[1].WebSocket.Messages[0] != "hi" {
		t.Errorf("decoded endpoints %+v, want the websocket endpoint with its block", got.Endpoints)
	}
	plain := validated(t, "plain.yaml", "target: http://127.0.0.1:9/\nrate: 1\nduration: 1s\nendpoints: [{path: /a}]\ndistributed: {workers: 2}\n", nil)
	if b, err = EncodeSpec(plain); err != nil || !strings.Contains(string(b), `"Checks":null,"Protocol":""}]`) || !strings.HasPrefix(string(b), `{"v":2,`) {
		t.Errorf("EncodeSpec(config without endpoint blocks) = %s (err %v), want no endpoint block fields", b, err)
	}
}
