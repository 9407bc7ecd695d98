package loadtarget

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
)

// SSE is a real Server-Sent Events server. Every event has a comment line,
// an id, an event name and two data lines. The path selects the stream:
// /events sends events until the client goes away, /short sends two and
// ends, /one sends one and holds the stream open, /empty ends at once, and
// /fail answers 503.
type SSE struct {
	// URL is the http:// base URL, without a path.
	URL      string
	requests atomic.Int64
	open     atomic.Int64
	sent     atomic.Int64
	mu       sync.Mutex
	headers  []http.Header
}

// StartSSE starts an SSE server for the test.
func StartSSE(t testing.TB) *SSE {
	t.Helper()
	s := &SSE{}
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	s.URL = hs.URL
	return s
}

// ServeHTTP serves one stream.
func (s *SSE) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	s.open.Add(1)
	defer s.open.Add(-1)
	s.mu.Lock()
	s.headers = append(s.headers, r.Header.Clone())
	s.mu.Unlock()
	if r.URL.Path == "/fail" {
		http.Error(w, "down", http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	f, _ := w.(http.Flusher)
	send := func(i int) bool {
		_, err := fmt.Fprintf(w, ": comment\nid: %d\nevent: tick\ndata: line one\ndata: line two %d\n\n", i, i)
		if f != nil {
			f.Flush()
		}
		if err == nil {
			s.sent.Add(1)
		}
		return err == nil
	}
	switch r.URL.Path {
	case "/short":
		send(1)
		send(2)
	case "/one":
		send(1)
		<-r.Context().Done()
	case "/empty":
	default:
		for i := 0; r.Context().Err() == nil && send(i); i++ {
		}
	}
}

// Open returns how many streams the server is serving now.
func (s *SSE) Open() int64 { return s.open.Load() }

// Requests returns how many streams were opened.
func (s *SSE) Requests() int64 { return s.requests.Load() }

// Headers returns the request headers of every stream, in order.
func (s *SSE) Headers() []http.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]http.Header(nil), s.headers...)
}
