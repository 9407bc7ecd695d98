package spec

import (
	"testing"
)

func TestMix(t *testing.T) {
	t.Parallel()
	c := mustParse(t, `
target: https://api.example.com/v1/
method: PUT
headers: {Accept: application/json, X-Env: ci}
body: '{"top":1}'
rate: 1
duration: 1s
endpoints:
  - {name: list, path: '/users?limit=5'}
  - {name: root}
  - {name: post, method: post, url: https://other.example.com/x, headers: {X-Env: prod}, body_file: b.json}
`)
	got := c.Mix()
	want := []Endpoint{
		{Name: "list", Weight: 1, Method: "PUT", URL: "https://api.example.com/v1/users?limit=5", Path: "/users?limit=5",
			Headers: map[string]string{"Accept": "application/json", "X-Env": "ci"}, Body: `{"top":1}`, Protocol: ProtocolHTTP},
		{Name: "root", Weight: 1, Method: "PUT", URL: "https://api.example.com/v1/",
			Headers: map[string]string{"Accept": "application/json", "X-Env": "ci"}, Body: `{"top":1}`, Protocol: ProtocolHTTP},
		{Name: "post", Weight: 1, Method: "POST", URL: "https://other.example.com/x",
			Headers: map[string]string{"Accept": "application/json", "X-Env": "prod"}, BodyFile: "b.json", Protocol: ProtocolHTTP},
	}
	eq(t, "Mix", got, want)
	// The endpoints' maps are copies: changing one changes nothing else.
	got[0].Headers["Accept"] = "x"
	eq(t, "config headers after edit", c.Headers["Accept"], "application/json")

	single := mustParse(t, "target: https://x.example.com\nrate: 1\nduration: 1s\n").Mix()
	eq(t, "Mix without endpoints", single, []Endpoint{{Weight: 1, Method: "GET", URL: "https://x.example.com", Protocol: ProtocolHTTP}})
}

// TestMixProtocols: each endpoint of a mixed run carries its protocol and
// the block of that protocol (its own, else the config's), and a gRPC
// host:port becomes a URL the target policy can check.
func TestMixProtocols(t *testing.T) {
	t.Parallel()
	c := mustParse(t, `
target: https://api.example.com
rate: 1
duration: 1s
websocket: {messages: [top]}
grpc: {proto_file: /p.proto, service: a.S, method: M}
endpoints:
  - {name: rest, path: /users}
  - {name: chat, protocol: websocket, url: 'ws://ws.example.com/chat'}
  - {name: feed, protocol: WebSocket, url: 'ws://ws.example.com/feed', websocket: {messages: [own]}}
  - {name: events, protocol: sse, path: /events, sse: {max_events: 3}}
  - {name: rpc, protocol: grpc, target: 'rpc.example.com:50051', grpc: {proto_file: /q.proto, service: b.T, method: N, tls: true}}
  - {name: rpc2, protocol: grpc, target: 'rpc.example.com:50052'}
`)
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if !c.Mixed() {
		t.Error("Mixed() = false, want true")
	}
	eq(t, "Protocols", c.Protocols(), []Protocol{ProtocolHTTP, ProtocolWebSocket, ProtocolSSE, ProtocolGRPC})
	mix := c.Mix()
	type got struct {
		P   Protocol
		URL string
		Blk string
	}
	var gots []got
	for _, ep := range mix {
		g := got{P: ep.Protocol, URL: ep.URL}
		switch {
		case ep.WebSocket != nil:
			g.Blk = ep.WebSocket.Messages[0]
		case ep.SSE != nil:
			g.Blk = "sse"
		case ep.GRPC != nil:
			g.Blk = ep.GRPC.ProtoFile
		}
		gots = append(gots, g)
	}
	eq(t, "Mix protocols", gots, []got{
		{ProtocolHTTP, "https://api.example.com/users", ""},
		{ProtocolWebSocket, "ws://ws.example.com/chat", "top"},
		{ProtocolWebSocket, "ws://ws.example.com/feed", "own"},
		{ProtocolSSE, "https://api.example.com/events", "sse"},
		{ProtocolGRPC, "grpcs://rpc.example.com:50051", "/q.proto"},
		{ProtocolGRPC, "grpc://rpc.example.com:50052", "/p.proto"},
	})
	if single := mustParse(t, "target: https://x.example.com\nrate: 1\nduration: 1s\nendpoints: [{path: /a, protocol: http}]\n"); single.Mixed() {
		t.Error("Mixed() of an all-http config = true, want false")
	}
}

func TestParsedThresholds(t *testing.T) {
	t.Parallel()
	c := mustParse(t, base+"thresholds: |\n  http_req_duration:p99 < 300ms\n  http_req_failed:rate < 1%\n")
	ts, err := c.ParsedThresholds()
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 2 || ts[0].Value != 0.3 || ts[1].Value != 0.01 {
		t.Errorf("ParsedThresholds = %+v, want p99 0.3s and rate 0.01", ts)
	}
}
