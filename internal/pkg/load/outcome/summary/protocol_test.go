package summary

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/forgeload/forgeload/internal/pkg/load"
)

// TestMixedProtocolsMergeAndReport: a mixed-protocol run reports one
// section per protocol, with its endpoints' totals and the merged
// measurements of its drivers, in text, Markdown and JSON; a host's list
// merges into another's by protocol; and the single-protocol key stays
// absent.
func TestMixedProtocolsMergeAndReport(t *testing.T) {
	t.Parallel()
	ws1, ws2 := load.NewProtocolRecorder("websocket"), load.NewProtocolRecorder("websocket")
	ws1.Add("messages_sent", 2)
	ws2.Add("messages_sent", 5)
	sse := load.NewProtocolRecorder("sse")
	sse.Time("first_event", 4*time.Millisecond)
	stats := func(r *load.ProtocolRecorder, eps ...string) *load.ProtocolStats {
		s := r.Stats()
		s.Endpoints = eps
		return s
	}
	ep := func(name string, reqs, errs int64, lat time.Duration) load.EndpointStats {
		h := load.NewHistogram()
		for range reqs {
			h.Record(lat)
		}
		return load.EndpointStats{Name: name, Stats: load.Stats{Requests: reqs, Errors: errs, Latency: h}}
	}
	r := &load.Result{Elapsed: time.Second, Endpoints: []load.EndpointStats{ep("rest", 6, 1, time.Millisecond), ep("chat", 3, 0, 2*time.Millisecond), ep("events", 1, 0, 9*time.Millisecond)},
		Protocols: []*load.ProtocolStats{{Protocol: "http", Endpoints: []string{"rest"}}, stats(ws1, "chat"), stats(sse, "events")}}
	other := &load.Result{Elapsed: time.Second, Protocols: []*load.ProtocolStats{stats(ws2, "chat"), {Protocol: "grpc", Endpoints: []string{"rpc"}}}}
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
	sum := Of(r, nil)
	var txt, md, js bytes.Buffer
	if err := sum.WriteText(&txt); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"\nhttp\n  Endpoints", "rest", "\nwebsocket\n", "messages_sent: 7", "\nsse\n", "first_event p50", "Requests / errors        6 / 1 (16.67%)"} {
		if !strings.Contains(txt.String(), want) {
			t.Errorf("text summary lacks %q:\n%s", want, txt.String())
		}
	}
	if err := sum.WriteMarkdown(&md); err != nil || !strings.Contains(md.String(), "| websocket Endpoints | chat |") {
		t.Errorf("markdown summary lacks the websocket rows (err %v):\n%s", err, md.String())
	}
	if err := sum.WriteJSON(&js); err != nil {
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
