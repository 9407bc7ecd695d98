package sseload

import (
	"bufio"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/forgeload/forgeload/internal/pkg/load"
	"github.com/forgeload/forgeload/internal/pkg/load/check"
	"github.com/forgeload/forgeload/internal/pkg/load/loadtarget"
)

func str(s string) *string { return &s }

// TestChecksOnEvents: body checks read each event's data (its data lines
// joined by a newline), status and header checks the stream's response; a
// failed one fails the session with class check.
func TestChecksOnEvents(t *testing.T) {
	t.Parallel()
	srv := loadtarget.StartSSE(t)
	for _, tc := range []struct {
		spec check.Spec
		fail bool
	}{
		{check.Spec{BodyContains: str("line one\nline two")}, false},
		{check.Spec{BodyNotContains: str("two 2")}, true}, // the third event's data
		{check.Spec{BodyContains: str("tick")}, true},     // the event name is not data
		{check.Spec{Status: []int{200}}, false},
		{check.Spec{Header: str("Content-Type"), Matches: str("^text/event-stream")}, false},
		{check.Spec{Header: str("X-Missing")}, true},
	} {
		s, err := check.New([]check.Spec{tc.spec}, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		d, err := New(Options{URL: srv.URL + "/events", MaxEvents: 3, Checks: s.Endpoint(0)})
		if err != nil {
			t.Fatal(err)
		}
		var smp load.Sample
		err = d.DoSample(context.Background(), &smp)
		d.Close()
		name := s.All()[0].Name()
		var ce *check.Error
		if tc.fail != (err != nil) || (tc.fail && (!errors.As(err, &ce) || smp.Class != load.ClassCheck)) {
			t.Errorf("%s: err %v, class %v; want failed %v with class check", name, err, smp.Class, tc.fail)
		}
		if st := s.Stats()[0]; st.Passed+st.Failed == 0 {
			t.Errorf("%s: counted nothing", name)
		}
	}
}

func TestReaderKeepsData(t *testing.T) {
	t.Parallel()
	r := &reader{br: bufio.NewReader(strings.NewReader("data: a\ndata:b\ndata\nid: 1\n\n"))}
	r.keepData = true
	if err := r.next(); err != nil || string(r.data) != "a\nb\n" {
		t.Errorf("next = %v, data %q; want \"a\\nb\\n\"", err, r.data)
	}
}

// TestChecksOnAReplacedStream: a session whose kept stream had ended reads
// a new one, whose events the body checks see too.
func TestChecksOnAReplacedStream(t *testing.T) {
	t.Parallel()
	srv := loadtarget.StartSSE(t)
	s, err := check.New([]check.Spec{{BodyContains: str("line one")}}, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	d, err := New(Options{URL: srv.URL + "/short", MaxEvents: 2, Checks: s.Endpoint(0)})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for i := range 2 {
		var smp load.Sample
		if err := d.DoSample(context.Background(), &smp); err != nil {
			t.Fatalf("session %d: %v", i, err)
		}
	}
	if st := s.Stats()[0]; st.Passed != 4 || st.Failed != 0 || srv.Requests() != 2 {
		t.Errorf("check %+v over %d streams, want 4 events passed over 2", st, srv.Requests())
	}
}
