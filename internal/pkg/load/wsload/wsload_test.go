package wsload

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/forgeload/forgeload/internal/pkg/load"
	"github.com/forgeload/forgeload/internal/pkg/load/loadtarget"
)

func TestSessionsWithReplies(t *testing.T) {
	t.Parallel()
	srv := loadtarget.StartWebSocket(t)
	d, err := New(Options{URL: srv.URL + "/echo", Headers: map[string]string{"X-Test": "yes"},
		Messages: []string{"one", "two"}, ExpectReplies: true, ReceiveTimeout: 10 * time.Second, Connections: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for range 3 {
		var s load.Sample
		if err := d.DoSample(context.Background(), &s); err != nil {
			t.Fatalf("DoSample: %v", err)
		}
		if s.BytesOut != 6 || s.BytesIn != 6 {
			t.Errorf("bytes out/in = %d/%d, want 6/6", s.BytesOut, s.BytesIn)
		}
	}
	if got := strings.Join(srv.Messages(), ","); got != "one,two,one,two,one,two" {
		t.Errorf("server received %q", got)
	}
	if n := srv.Sessions(); n != 1 {
		t.Errorf("server saw %d connections, want 1 (the pooled connection is reused)", n)
	}
	if h := srv.Headers()[0].Get("X-Test"); h != "yes" {
		t.Errorf("handshake header X-Test = %q, want yes", h)
	}
	ps := d.ProtocolStats()
	if ps.Counters["messages_sent"] != 6 || ps.Counters["messages_received"] != 6 || ps.Counters["connections"] != 1 {
		t.Errorf("counters = %v", ps.Counters)
	}
	if ps.Timings["message_rtt"].Count() != 6 || ps.Timings["connect"].Count() != 1 {
		t.Errorf("timings: rtt %d, connect %d", ps.Timings["message_rtt"].Count(), ps.Timings["connect"].Count())
	}
}

func TestReceiveWindowCollectsReplies(t *testing.T) {
	t.Parallel()
	srv := loadtarget.StartWebSocket(t)
	d, err := New(Options{URL: srv.URL + "/twice", Messages: []string{"a"}, ReceiveTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var s load.Sample
	if err := d.DoSample(context.Background(), &s); err != nil {
		t.Fatalf("the end of the receive window is not an error, as in Crankfire: %v", err)
	}
	if s.BytesIn != 2 {
		t.Errorf("bytes in = %d, want the 2 replies", s.BytesIn)
	}
	if err := d.DoSample(context.Background(), &s); err != nil {
		t.Fatal(err)
	}
	if n := srv.Sessions(); n != 2 {
		t.Errorf("server saw %d connections, want 2: a drained connection is not reused", n)
	}
}

func TestFailures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, path string
		opts       Options
		class      load.ErrorClass
		status     int
		counter    string
	}{
		{name: "server closes", path: "/close", opts: Options{Messages: []string{"x", "y"}, ExpectReplies: true}, class: load.ClassNetwork, counter: "close_4001"},
		{name: "no reply", path: "/silent", opts: Options{Messages: []string{"x"}, ExpectReplies: true, ReceiveTimeout: 50 * time.Millisecond}, class: load.ClassTimeout, counter: "replies_missing"},
		{name: "handshake refused", path: "/forbidden", opts: Options{Messages: []string{"x"}}, class: load.ClassHTTP4xx, status: 403, counter: "connect_errors"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o := tt.opts
			o.URL = loadtarget.StartWebSocket(t).URL + tt.path
			d, err := New(o)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			var s load.Sample
			err = d.DoSample(context.Background(), &s)
			if err == nil {
				t.Fatal("DoSample succeeded, want an error")
			}
			if s.Class != tt.class || s.Status != tt.status {
				t.Errorf("class %s status %d, want %s %d (err %v)", s.Class, s.Status, tt.class, tt.status, err)
			}
			if d.ProtocolStats().Counters[tt.counter] != 1 {
				t.Errorf("counters %v, want %s = 1", d.ProtocolStats().Counters, tt.counter)
			}
		})
	}
}

func TestDialControlRefuses(t *testing.T) {
	t.Parallel()
	srv := loadtarget.StartWebSocket(t)
	refused := errors.New("refused by policy")
	var saw atomic.Value
	d, err := New(Options{URL: srv.URL + "/echo", Messages: []string{"x"}, DialControl: func(_, addr string, _ syscall.RawConn) error {
		saw.Store(addr)
		return refused
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var s load.Sample
	if err := d.DoSample(context.Background(), &s); !errors.Is(err, refused) {
		t.Fatalf("err = %v, want the dial control's refusal", err)
	}
	if a, _ := saw.Load().(string); !strings.HasPrefix(a, "127.0.0.1:") {
		t.Errorf("dial control saw %q, want the resolved address", a)
	}
	if srv.Sessions() != 0 {
		t.Error("the server saw a connection the dial control refused")
	}
}

func TestNewRejectsNonWebSocketURL(t *testing.T) {
	t.Parallel()
	_, err := New(Options{URL: "http://127.0.0.1/"})
	if err == nil || !strings.Contains(err.Error(), "ws://") {
		t.Fatalf("err = %v", err)
	}
}

func TestRunUnderSchedule(t *testing.T) {
	t.Parallel()
	srv := loadtarget.StartWebSocket(t)
	d, err := New(Options{URL: srv.URL + "/echo", Messages: []string{"m"}, ExpectReplies: true, ReceiveTimeout: 10 * time.Second, Connections: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	res, err := load.Run(context.Background(), load.Options{Requester: d, Rate: 200, Total: 40, Concurrency: 4, Endpoints: d.Names(), Grace: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != 40 || res.Errors != 0 {
		t.Fatalf("requests %d errors %d (%v), want 40 and 0", res.Requests, res.Errors, res.Classes)
	}
	if n := len(srv.Messages()); n != 40 {
		t.Errorf("server received %d messages, want 40", n)
	}
}

// TestBlockedWriteEndsAtTimeout: a server that stops reading backs the
// client's writes up; the session's timeout still ends a blocked write
// (writes carry no deadline of their own: one watcher per session closes
// the connection), the session fails as a timeout, and the connection is
// not kept for the next session.
func TestBlockedWriteEndsAtTimeout(t *testing.T) {
	t.Parallel()
	srv := loadtarget.StartWebSocket(t)
	big := strings.Repeat("x", 32<<20) // more than the socket buffers hold
	d, err := New(Options{URL: srv.URL + "/deaf", Messages: []string{big}, Timeout: 300 * time.Millisecond, Connections: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for i := range 2 {
		var s load.Sample
		done := make(chan error, 1)
		go func() { done <- d.DoSample(context.Background(), &s) }()
		select {
		case err := <-done:
			if err == nil || s.Class != load.ClassTimeout {
				t.Fatalf("session %d: err %v, class %s; want a timeout", i, err, s.Class)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("session %d: a write to a server that does not read was still blocked 30 s past its 300 ms timeout", i)
		}
	}
	if n := srv.Sessions(); n != 2 {
		t.Errorf("server saw %d connections for two timed-out sessions, want 2 (a closed one is never reused)", n)
	}
}

// TestBlockedWriteStopsWithTheRun: a run that stops while a write is
// blocked ends the session as canceled, not as a network failure.
func TestBlockedWriteStopsWithTheRun(t *testing.T) {
	t.Parallel()
	srv := loadtarget.StartWebSocket(t)
	d, err := New(Options{URL: srv.URL + "/deaf", Messages: []string{strings.Repeat("x", 32<<20)}, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	var s load.Sample
	if err := d.DoSample(ctx, &s); err == nil || s.Class != load.ClassCanceled {
		t.Fatalf("err %v, class %s; want the session canceled with the run", err, s.Class)
	}
}

// TestConnectionClosedByTheWatcherIsNotReused: a session whose context ends
// has its connection closed by the session's watcher (writes carry no
// context of their own), so that connection must not go back to the pool;
// the next session dials a new one and succeeds. A session that starts with
// a done context always has its watcher run, whatever its writes managed.
func TestConnectionClosedByTheWatcherIsNotReused(t *testing.T) {
	t.Parallel()
	srv := loadtarget.StartWebSocket(t)
	d, err := New(Options{URL: srv.URL + "/echo", Messages: []string{"a", "b"}, Connections: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var s load.Sample
	if err := d.DoSample(context.Background(), &s); err != nil {
		t.Fatalf("first session: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s = load.Sample{}
	if err := d.DoSample(ctx, &s); err != nil && s.Class != load.ClassCanceled {
		t.Errorf("session with a canceled context: err %v, class %s; want canceled (or no error)", err, s.Class)
	}
	for i := range 3 {
		s = load.Sample{}
		if err := d.DoSample(context.Background(), &s); err != nil {
			t.Fatalf("session %d after the canceled one: %v (was a closed connection pooled?)", i, err)
		}
	}
	if n := d.ProtocolStats().Counters["connections"]; n != 2 {
		t.Errorf("the driver opened %d connections, want 2: the canceled session's connection is closed, and the next one is reused", n)
	}
}
