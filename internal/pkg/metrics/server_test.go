package metrics

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// readiness is a settable fake Readiness.
type readiness struct {
	mu  sync.Mutex
	err error
}

func (r *readiness) Ready() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

func (r *readiness) set(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.err = err
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

func TestServer(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	m := New(reg, "v9", "r1")
	m.Capacity.Set(3)
	ready := &readiness{}
	s := NewServer("127.0.0.1:0", reg, ready)
	if err := s.Listen(); err != nil {
		t.Fatal(err)
	}
	if strings.HasSuffix(s.Addr(), ":0") {
		t.Fatalf("Addr() = %q, want the bound port", s.Addr())
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	base := "http://" + s.Addr()

	code, body := get(t, base+"/metrics")
	if code != 200 || !strings.Contains(body, "forgeload_capacity 3\n") || !strings.Contains(body, `forgeload_info{name="r1",version="v9"} 1`) {
		t.Errorf("/metrics = %d\n%s\nwant 200 with forgeload_capacity 3 and forgeload_info", code, body)
	}
	if code, body := get(t, base+"/healthz"); code != 200 || body != "ok\n" {
		t.Errorf("/healthz = %d %q, want 200 \"ok\\n\"", code, body)
	}
	if code, body := get(t, base+"/readyz"); code != 200 || body != "ok\n" {
		t.Errorf("/readyz (ready) = %d %q, want 200 \"ok\\n\"", code, body)
	}
	ready.set(errors.New("not registered"))
	if code, body := get(t, base+"/readyz"); code != 503 || body != "not ready: not registered\n" {
		t.Errorf("/readyz (not ready) = %d %q, want 503 \"not ready: not registered\\n\"", code, body)
	}
	if code, _ := get(t, base+"/nope"); code != 404 {
		t.Errorf("/nope = %d, want 404", code)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve after cancel = %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return within 10s of cancel")
	}
	if _, err := net.Dial("tcp", s.Addr()); err == nil {
		t.Error("the port still accepts connections after Serve returned")
	}
}

func TestServerNilReadiness(t *testing.T) {
	t.Parallel()
	s := NewServer("127.0.0.1:0", prometheus.NewRegistry(), nil)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	if err := s.Listen(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	if code, body := get(t, "http://"+s.Addr()+"/readyz"); code != 200 || body != "ok\n" {
		t.Errorf("/readyz with nil Readiness = %d %q, want 200 ok", code, body)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Serve = %v, want nil", err)
	}
}

func TestServerBindFailure(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	s := NewServer(ln.Addr().String(), prometheus.NewRegistry(), nil)
	err = s.Listen()
	if err == nil {
		t.Fatal("Listen on a taken port = nil, want an error")
	}
	for _, want := range []string{ln.Addr().String(), "metrics.addr", "address already in use"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Listen error %q does not mention %q", err, want)
		}
	}
	// Serve reports the same failure instead of serving.
	if err := s.Serve(t.Context()); err == nil || !strings.Contains(err.Error(), "metrics.addr") {
		t.Errorf("Serve on a taken port = %v, want the bind error", err)
	}
}
