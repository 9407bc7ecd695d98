package sseload

import (
	"bufio"
	"context"
	"errors"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/forgeload/forgeload/internal/pkg/load"
	"github.com/forgeload/forgeload/internal/pkg/load/loadtarget"
)

func TestSessionReadsMaxEvents(t *testing.T) {
	t.Parallel()
	srv := loadtarget.StartSSE(t)
	d, err := New(Options{URL: srv.URL + "/events", MaxEvents: 3, Headers: map[string]string{"X-Test": "yes"}})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var s load.Sample
	if err := d.DoSample(context.Background(), &s); err != nil {
		t.Fatal(err)
	}
	if s.Status != 200 || s.BytesIn == 0 {
		t.Errorf("status %d bytes %d", s.Status, s.BytesIn)
	}
	ps := d.ProtocolStats()
	if ps.Counters["events"] != 3 {
		t.Errorf("events = %d, want 3", ps.Counters["events"])
	}
	if ps.Timings["first_event"].Count() != 1 || ps.Timings["event_gap"].Count() != 2 {
		t.Errorf("first_event %d, event_gap %d, want 1 and 2", ps.Timings["first_event"].Count(), ps.Timings["event_gap"].Count())
	}
	if h := srv.Headers()[0]; h.Get("Accept") != "text/event-stream" || h.Get("X-Test") != "yes" {
		t.Errorf("server saw headers %v", h)
	}
}

func TestSessionEnds(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, path string
		opts       Options
		events     int64
		class      load.ErrorClass
	}{
		{name: "stream ends after events", path: "/short", opts: Options{MaxEvents: 5}, events: 2},
		{name: "read timeout is not an error", path: "/one", opts: Options{ReadTimeout: 200 * time.Millisecond}, events: 1},
		{name: "stream ends before an event", path: "/empty", class: load.ClassProtocol},
		{name: "status 503", path: "/fail", class: load.ClassHTTP5xx},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o := tt.opts
			o.URL = loadtarget.StartSSE(t).URL + tt.path
			d, err := New(o)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			var s load.Sample
			err = d.DoSample(context.Background(), &s)
			if (err != nil) != (tt.class != load.ClassNone) || s.Class != tt.class {
				t.Fatalf("err %v class %s, want class %s", err, s.Class, tt.class)
			}
			if got := d.ProtocolStats().Counters["events"]; got != tt.events {
				t.Errorf("events = %d, want %d", got, tt.events)
			}
		})
	}
}

func TestDialControlRefuses(t *testing.T) {
	t.Parallel()
	srv := loadtarget.StartSSE(t)
	refused := errors.New("refused by policy")
	d, err := New(Options{URL: srv.URL, DialControl: func(string, string, syscall.RawConn) error { return refused }})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var s load.Sample
	if err := d.DoSample(context.Background(), &s); !errors.Is(err, refused) {
		t.Fatalf("err = %v, want the refusal", err)
	}
	if srv.Requests() != 0 {
		t.Error("the server saw a request the dial control refused")
	}
}

func TestRunUnderSchedule(t *testing.T) {
	t.Parallel()
	srv := loadtarget.StartSSE(t)
	d, err := New(Options{URL: srv.URL + "/short", Connections: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	res, err := load.Run(context.Background(), load.Options{Requester: d, Rate: 200, Total: 30, Concurrency: 4, Endpoints: d.Names(), Grace: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != 30 || res.Errors != 0 {
		t.Fatalf("requests %d errors %d (%v)", res.Requests, res.Errors, res.Classes)
	}
	if n := srv.Requests(); n != 30 {
		t.Errorf("server saw %d streams, want 30", n)
	}
	if n := d.ProtocolStats().Counters["events"]; n != 60 {
		t.Errorf("events = %d, want 60", n)
	}
}

func TestReaderEvents(t *testing.T) {
	t.Parallel()
	in := "data: a\n\n: only a comment\n\nretry: 5\n\nevent: x\r\ndata: b\r\n\r\ndata\n\n"
	r := &reader{br: bufio.NewReader(strings.NewReader(in))}
	n := 0
	for r.next() == nil {
		n++
	}
	if n != 3 {
		t.Errorf("events = %d, want 3 (a comment and a retry alone are not events)", n)
	}
	if r.n != int64(len(in)) {
		t.Errorf("bytes counted %d, want %d", r.n, len(in))
	}
}

func FuzzReader(f *testing.F) {
	f.Add([]byte("data: a\n\nid: 1\nevent: e\ndata: b\n\n"))
	f.Add([]byte(": c\r\n\r\ndata\n\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r := &reader{br: bufio.NewReaderSize(strings.NewReader(string(b)), 16)}
		for i := 0; ; i++ {
			if err := r.next(); err != nil {
				break
			}
			if i > len(b) {
				t.Fatal("more events than bytes")
			}
		}
		if r.n > int64(len(b)) {
			t.Fatalf("counted %d bytes of %d", r.n, len(b))
		}
	})
}

// TestStreamKeptBetweenSessions: as in Crankfire, a session that ends on
// max_events leaves its stream open and the next session reads on from
// there; the server sees one stream for both. Close ends the kept stream.
func TestStreamKeptBetweenSessions(t *testing.T) {
	t.Parallel()
	srv := loadtarget.StartSSE(t)
	d, err := New(Options{URL: srv.URL + "/events", MaxEvents: 3})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		var s load.Sample
		if err := d.DoSample(context.Background(), &s); err != nil || s.Status != 200 {
			t.Fatalf("session %d: status %d, err %v", i, s.Status, err)
		}
	}
	if n := srv.Requests(); n != 1 {
		t.Errorf("server saw %d streams for two sessions, want 1", n)
	}
	ps := d.ProtocolStats()
	if ps.Counters["events"] != 6 || ps.Counters["streams_opened"] != 1 {
		t.Errorf("counters %v, want 6 events on 1 stream", ps.Counters)
	}
	if ps.Timings["first_event"].Count() != 1 || ps.Timings["event_gap"].Count() != 4 {
		t.Errorf("first_event %d, event_gap %d; want 1 (one stream) and 4 (two within each session)",
			ps.Timings["first_event"].Count(), ps.Timings["event_gap"].Count())
	}
	d.Close()
	deadline := time.Now().Add(10 * time.Second)
	for srv.Open() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the server still serves %d streams after Close", srv.Open())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestStreamReplaced: a kept stream the server ended meanwhile is replaced
// once, without failing the session; a session that ended on its read
// window or on an error does not leave its stream for the next.
func TestStreamReplaced(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		path    string
		opts    Options
		streams int64
	}{
		// /short sends two events and ends the stream.
		{name: "server ended the kept stream", path: "/short", opts: Options{MaxEvents: 2}, streams: 2},
		// /one sends one event and waits: the read window ends each session.
		{name: "read window closes the stream", path: "/one", opts: Options{ReadTimeout: 100 * time.Millisecond}, streams: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := loadtarget.StartSSE(t)
			o := tt.opts
			o.URL = srv.URL + tt.path
			d, err := New(o)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			for i := range 2 {
				var s load.Sample
				if err := d.DoSample(context.Background(), &s); err != nil {
					t.Fatalf("session %d: %v", i, err)
				}
			}
			if n := srv.Requests(); n != tt.streams {
				t.Errorf("server saw %d streams, want %d", n, tt.streams)
			}
		})
	}
}

// TestStreamsNotSharedAcrossRequests: sessions whose rendered requests
// differ never read each other's streams.
func TestStreamsNotSharedAcrossRequests(t *testing.T) {
	t.Parallel()
	a, _ := http.NewRequest(http.MethodGet, "http://h/events?u=1", nil)
	b, _ := http.NewRequest(http.MethodGet, "http://h/events?u=1", nil)
	a.Header.Set("X-User", "alice")
	b.Header.Set("X-User", "bob")
	if streamKey(a) == streamKey(b) {
		t.Errorf("requests with different headers share the stream key %q", streamKey(a))
	}
	b.Header.Set("X-User", "alice")
	if streamKey(a) != streamKey(b) {
		t.Errorf("equal requests have different stream keys")
	}
}
