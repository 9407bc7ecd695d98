package wsload

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/forgeload/forgeload/internal/pkg/load"
	"github.com/forgeload/forgeload/internal/pkg/load/check"
	"github.com/forgeload/forgeload/internal/pkg/load/loadtarget"
)

func str(s string) *string { return &s }

// TestChecksOnMessages: checks read every message received, replies and
// the receive window's; a failed one fails the session with class check.
func TestChecksOnMessages(t *testing.T) {
	t.Parallel()
	srv := loadtarget.StartWebSocket(t)
	for _, tc := range []struct {
		spec    check.Spec
		replies bool
		fail    bool
	}{
		{check.Spec{BodyNotContains: str("error")}, true, false},
		{check.Spec{BodyNotContains: str("error")}, false, true}, // the window reads the second reply
		{check.Spec{JSON: str("$.ok"), Equals: str("true")}, true, false},
		{check.Spec{JSON: str("$.missing")}, false, true},
	} {
		s, err := check.New([]check.Spec{tc.spec}, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		d, err := New(Options{URL: srv.URL + "/echo", Messages: []string{`{"ok": true}`, `{"ok": true, "error": "x"}`}[:map[bool]int{true: 1, false: 2}[tc.replies]],
			ExpectReplies: tc.replies, ReceiveTimeout: 200 * time.Millisecond, Checks: s.Endpoint(0)})
		if err != nil {
			t.Fatal(err)
		}
		var smp load.Sample
		err = d.DoSample(context.Background(), &smp)
		d.Close()
		name := s.All()[0].Name()
		var ce *check.Error
		if tc.fail != (err != nil) || (tc.fail && (!errors.As(err, &ce) || smp.Class != load.ClassCheck)) {
			t.Errorf("%s (replies %v): err %v, class %v; want failed %v with class check", name, tc.replies, err, smp.Class, tc.fail)
		}
		if st := s.Stats()[0]; st.Passed+st.Failed == 0 {
			t.Errorf("%s: counted nothing", name)
		}
	}
}

func TestNewRefusesChecksOfNoMessage(t *testing.T) {
	t.Parallel()
	s, err := check.New([]check.Spec{{Status: []int{101}}}, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = New(Options{URL: "ws://127.0.0.1:1/x", Checks: s.Endpoint(0)})
	if err == nil || !strings.Contains(err.Error(), "protocol websocket has no status to check") {
		t.Errorf("New with a status check = %v, want it refused", err)
	}
}
