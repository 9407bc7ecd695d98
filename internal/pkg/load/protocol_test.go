package load

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestProtocolStatsMergeAndReport(t *testing.T) {
	t.Parallel()
	a, b := NewProtocolRecorder("websocket"), NewProtocolRecorder("websocket")
	a.Add("messages_sent", 2)
	a.Time("connect", 3*time.Millisecond)
	b.Add("messages_sent", 3)
	b.Add("close_4001", 1)
	b.Time("connect", 5*time.Millisecond)
	r1 := &Result{Protocol: a.Stats()}
	r1.Merge(&Result{Protocol: b.Stats()})
	p := r1.Protocol
	if p.Counters["messages_sent"] != 5 || p.Counters["close_4001"] != 1 || p.Timings["connect"].Count() != 2 {
		t.Fatalf("merged = %+v", p)
	}
	var txt, js, md bytes.Buffer
	if err := WriteText(&txt, r1, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(txt.String(), "\nwebsocket\n") || !strings.Contains(txt.String(), "close_4001: 1, messages_sent: 5") ||
		!strings.Contains(txt.String(), "connect p50 / p99 / max") {
		t.Errorf("text summary lacks the protocol section:\n%s", txt.String())
	}
	if err := WriteMarkdown(&md, r1, nil); err != nil || !strings.Contains(md.String(), "| websocket Counters |") {
		t.Errorf("markdown summary lacks the protocol rows (err %v):\n%s", err, md.String())
	}
	if err := WriteJSON(&js, r1, nil); err != nil {
		t.Fatal(err)
	}
	var s struct {
		Protocol struct {
			Counters map[string]int64 `json:"counters"`
			Timings  map[string]struct {
				Max float64 `json:"max_ms"`
			} `json:"timings"`
		} `json:"protocol"`
	}
	if err := json.Unmarshal(js.Bytes(), &s); err != nil || s.Protocol.Counters["messages_sent"] != 5 || s.Protocol.Timings["connect"].Max < 4.9 {
		t.Errorf("json protocol = %+v (err %v)", s.Protocol, err)
	}
}

func TestGRPCClass(t *testing.T) {
	t.Parallel()
	for code, want := range map[uint32]string{0: "ok", 1: "grpc_canceled", 5: "grpc_not_found", 14: "grpc_unavailable", 16: "grpc_unauthenticated", 17: "other"} {
		if got := GRPCClass(code).String(); got != want {
			t.Errorf("GRPCClass(%d) = %s, want %s", code, got, want)
		}
	}
	if !(RetryPolicy{Retries: 1}).ShouldRetry(t.Context(), &Sample{Class: GRPCClass(14)}, StatusError{Code: 0}) {
		t.Error("grpc_unavailable is not retried")
	}
}

// TestAddCounts: a session's tally lands in one step, and a zero count
// adds no counter that was never seen.
func TestAddCounts(t *testing.T) {
	t.Parallel()
	r := NewProtocolRecorder("websocket")
	r.Add("messages_sent", 1)
	r.AddCounts(Count{"messages_sent", 10}, Count{"bytes_sent", 150}, Count{"messages_received", 0})
	c := r.Stats().Counters
	if c["messages_sent"] != 11 || c["bytes_sent"] != 150 {
		t.Errorf("counters %v, want 11 messages and 150 bytes sent", c)
	}
	if _, ok := c["messages_received"]; ok {
		t.Errorf("a zero count added the counter messages_received: %v", c)
	}
}

// TestMixedProtocolsMergeAndReport: a mixed-protocol run reports one
// section per protocol, with its endpoints' totals and the merged
// measurements of its drivers, in text, Markdown and JSON; a host's list
// merges into another's by protocol; and the single-protocol key stays
// absent.
func TestMixedProtocolsMergeAndReport(t *testing.T) {
	t.Parallel()
	ws1, ws2 := NewProtocolRecorder("websocket"), NewProtocolRecorder("websocket")
	ws1.Add("messages_sent", 2)
	ws2.Add("messages_sent", 5)
	sse := NewProtocolRecorder("sse")
	sse.Time("first_event", 4*time.Millisecond)
	stats := func(r *ProtocolRecorder, eps ...string) *ProtocolStats {
		s := r.Stats()
		s.Endpoints = eps
		return s
	}
	ep := func(name string, reqs, errs int64, lat time.Duration) EndpointStats {
		h := NewHistogram()
		for range reqs {
			h.Record(lat)
		}
		return EndpointStats{Name: name, Stats: Stats{Requests: reqs, Errors: errs, Latency: h}}
	}
	r := &Result{Elapsed: time.Second, Endpoints: []EndpointStats{ep("rest", 6, 1, time.Millisecond), ep("chat", 3, 0, 2*time.Millisecond), ep("events", 1, 0, 9*time.Millisecond)},
		Protocols: []*ProtocolStats{{Protocol: "http", Endpoints: []string{"rest"}}, stats(ws1, "chat"), stats(sse, "events")}}
	other := &Result{Elapsed: time.Second, Protocols: []*ProtocolStats{stats(ws2, "chat"), {Protocol: "grpc", Endpoints: []string{"rpc"}}}}
	r.Merge(other)
	var names []string
	for _, p := range r.Protocols {
		names = append(names, p.Protocol)
	}
	if strings.Join(names, ",") != "http,websocket,sse,grpc" || r.Protocols[1].Counters["messages_sent"] != 7 || len(r.Protocols[1].Endpoints) != 1 {
		t.Fatalf("merged protocols = %v, websocket %+v", names, r.Protocols[1])
	}
	if other.Protocols[0].Counters["messages_sent"] != 5 {
		t.Errorf("the merge changed its source: %+v", other.Protocols[0])
	}
	var txt, md, js bytes.Buffer
	if err := WriteText(&txt, r, nil); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"\nhttp\n  Endpoints", "rest", "\nwebsocket\n", "messages_sent: 7", "\nsse\n", "first_event p50", "Requests / errors        6 / 1 (16.67%)"} {
		if !strings.Contains(txt.String(), want) {
			t.Errorf("text summary lacks %q:\n%s", want, txt.String())
		}
	}
	if err := WriteMarkdown(&md, r, nil); err != nil || !strings.Contains(md.String(), "| websocket Endpoints | chat |") {
		t.Errorf("markdown summary lacks the websocket rows (err %v):\n%s", err, md.String())
	}
	if err := WriteJSON(&js, r, nil); err != nil {
		t.Fatal(err)
	}
	var s struct {
		Protocol  *json.RawMessage `json:"protocol"`
		Protocols []struct {
			Protocol  string           `json:"protocol"`
			Endpoints []string         `json:"endpoints"`
			Requests  int64            `json:"requests"`
			Counters  map[string]int64 `json:"counters"`
			Latency   *struct {
				Max float64 `json:"max_ms"`
			} `json:"latency"`
		} `json:"protocols"`
	}
	if err := json.Unmarshal(js.Bytes(), &s); err != nil {
		t.Fatal(err)
	}
	if s.Protocol != nil || len(s.Protocols) != 4 || s.Protocols[2].Protocol != "sse" || s.Protocols[2].Requests != 1 ||
		s.Protocols[2].Latency == nil || s.Protocols[2].Latency.Max < 8.9 || s.Protocols[1].Counters["messages_sent"] != 7 {
		t.Errorf("json protocols = %+v, protocol %v", s.Protocols, s.Protocol)
	}
}
