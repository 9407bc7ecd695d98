package load

import (
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
