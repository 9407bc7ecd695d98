package loadtarget

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// Request is one request an HTTP server received.
type Request struct {
	Method, URI string
	Header      http.Header
	Body        string
}

// HTTP is a real HTTP server that answers 200 with a small JSON body and
// records every request. /status/404 and /status/500 answer with that
// status.
type HTTP struct {
	// URL is the http:// base URL, without a path.
	URL  string
	mu   sync.Mutex
	reqs []Request
}

// StartHTTP starts an HTTP server for the test.
func StartHTTP(t testing.TB) *HTTP {
	t.Helper()
	s := &HTTP{}
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	s.URL = hs.URL
	return s
}

// ServeHTTP records and answers one request.
func (s *HTTP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	s.mu.Lock()
	s.reqs = append(s.reqs, Request{Method: r.Method, URI: r.RequestURI, Header: r.Header.Clone(), Body: string(b)})
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch r.URL.Path {
	case "/status/404":
		w.WriteHeader(http.StatusNotFound)
	case "/status/500":
		w.WriteHeader(http.StatusInternalServerError)
	}
	_, _ = io.WriteString(w, `{"ok": true, "id": "abc-123", "user": {"token": "t0k3n"}}`)
}

// Requests returns the requests received, in order.
func (s *HTTP) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}
