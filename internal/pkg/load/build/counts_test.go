package build

import (
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/forgeload/forgeload/internal/pkg/load"
)

// TestFeederRunOutCountsWhatTheTargetSaw is issue 28's case: a run whose
// 3-row feeder ran out reported thousands of requests (the arrivals that
// found no row, counted as sent with an error) while the target saw 3.
// Now requests are what the target received, and the rest are dropped
// arrivals with their reason.
func TestFeederRunOutCountsWhatTheTargetSaw(t *testing.T) {
	t.Parallel()
	var saw atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { saw.Add(1) }))
	defer srv.Close()
	rows := filepath.Join(t.TempDir(), "users.csv")
	if err := os.WriteFile(rows, []byte("id\n1\n2\n3\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := parse(t, `
target: `+srv.URL+`/users/{{id}}
rate: 200
duration: 2s
concurrency: 4
feeder: {path: `+rows+`, recycle: false}
`)
	p, err := New(cfg, Settings{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	res, err := p.Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != saw.Load() || saw.Load() != 3 || res.Errors != 0 {
		t.Errorf("requests = %d (errors %d), the target saw %d; want 3 and 3 without errors", res.Requests, res.Errors, saw.Load())
	}
	if res.DroppedBy["feeder_exhausted"] < 1 || res.Dropped < res.DroppedBy["feeder_exhausted"] {
		t.Errorf("dropped = %d by %v, want the arrivals that found no row counted as feeder_exhausted", res.Dropped, res.DroppedBy)
	}
}

// TestCancelCountsOnlyWhatLeft: when the grace period ends, requests in
// flight are cancelled. One already written counts as a request (the
// target saw it); one still waiting for its connection (here a TLS
// handshake the target never answers) never left, and is a dropped
// arrival, canceled_before_send, not a request.
func TestCancelCountsOnlyWhatLeft(t *testing.T) {
	t.Parallel()
	t.Run("written", func(t *testing.T) {
		t.Parallel()
		var saw atomic.Int64
		release := make(chan struct{})
		srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
			saw.Add(1)
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}))
		defer srv.Close()
		defer close(release)
		res := runConfig(t, "target: "+srv.URL+"/\nrate: 20\nduration: 1s\ngraceful_shutdown: 100ms\n")
		if res.Requests != saw.Load() || res.Requests < 15 || res.Classes["canceled"] != res.Requests {
			t.Errorf("requests = %d (classes %v), the target saw %d; want every one counted, cancelled", res.Requests, res.Classes, saw.Load())
		}
		if res.Dropped != 0 {
			t.Errorf("dropped = %d by %v, want none: every request was written", res.Dropped, res.DroppedBy)
		}
	})
	t.Run("never written", func(t *testing.T) {
		t.Parallel()
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		var mu sync.Mutex
		var conns []net.Conn
		go func() {
			for {
				c, err := ln.Accept() // and never answer the TLS handshake
				if err != nil {
					return
				}
				mu.Lock()
				conns = append(conns, c)
				mu.Unlock()
			}
		}()
		defer func() {
			mu.Lock()
			defer mu.Unlock()
			for _, c := range conns {
				_ = c.Close()
			}
		}()
		start := time.Now()
		res := runConfig(t, "target: https://"+ln.Addr().String()+"/\nrate: 20\nduration: 1s\ngraceful_shutdown: 100ms\n")
		if res.Requests != 0 || res.DroppedBy["canceled_before_send"] < 15 {
			t.Errorf("requests = %d, dropped by %v; want none sent, every arrival canceled_before_send", res.Requests, res.DroppedBy)
		}
		if len(res.Invalid) == 0 || res.Invalid[0].Reason != "achieved_rate" {
			t.Errorf("invalid = %+v, want the run invalid: none of its arrivals was sent", res.Invalid)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("the run took %s: the cancel did not end the handshakes", d)
		}
	})
}

// runConfig builds and runs the config text.
func runConfig(t *testing.T, text string) *load.Result {
	t.Helper()
	p, err := New(parse(t, text), Settings{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	res, err := p.Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return res
}
