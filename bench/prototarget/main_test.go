package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/coder/websocket"
)

func TestGreeterDescribesSayHello(t *testing.T) {
	d, err := greeter(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if d.ServiceName != "bench.Greeter" || len(d.Methods) != 1 || d.Methods[0].MethodName != "SayHello" {
		t.Fatalf("service %q with %d methods, want bench.Greeter with SayHello", d.ServiceName, len(d.Methods))
	}
}

func TestSSEStreamsEvents(t *testing.T) {
	s := httptest.NewServer(http.HandlerFunc(serveSSE))
	defer s.Close()
	resp, err := http.Get(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	br := bufio.NewReader(resp.Body)
	for i := range 6 { // two events: an event line, a data line and a blank line each
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if want := string(event[:12]); i%3 == 0 && line != want {
			t.Fatalf("line %d = %q, want %q", i, line, want)
		}
	}
}

func TestRunRequiresProto(t *testing.T) {
	if err := run(nil); err == nil {
		t.Fatal("run without -proto succeeded")
	}
}

func TestStatsCountWebSocketMessages(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/ws", serveWS)
	mux.HandleFunc("GET /__bench/stats", serveStats)
	s := httptest.NewServer(mux)
	defer s.Close()
	before := wsMessages.Load()
	ctx := context.Background()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(s.URL, "http")+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := c.Write(ctx, websocket.MessageText, []byte("ping")); err != nil {
			t.Fatal(err)
		}
	}
	_ = c.Close(websocket.StatusNormalClosure, "")
	// The server counts a message after reading it; the close handshake
	// returns only once the server has read past the three messages.
	resp, err := http.Get(s.URL + "/__bench/stats")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var st struct {
		WS int64 `json:"ws_messages"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	if got := st.WS - before; got != 3 {
		t.Fatalf("stats count %d WebSocket messages, want 3", got)
	}
}
