package loadtarget

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/coder/websocket"
)

// WebSocket is a real WebSocket server. The path selects its behaviour:
// /echo replies once to each message, /twice replies twice, /close closes
// with status 4001 after the first message, /forbidden refuses the
// handshake with 403, and any other path never replies.
type WebSocket struct {
	// URL is the ws:// base URL, without a path.
	URL      string
	mu       sync.Mutex
	msgs     []string
	headers  []http.Header
	sessions atomic.Int64
}

// StartWebSocket starts a WebSocket server for the test.
func StartWebSocket(t testing.TB) *WebSocket {
	t.Helper()
	s := &WebSocket{}
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	s.URL = "ws" + strings.TrimPrefix(hs.URL, "http")
	return s
}

// ServeHTTP serves one WebSocket session.
func (s *WebSocket) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/forbidden" {
		http.Error(w, "no", http.StatusForbidden)
		return
	}
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	defer func() { _ = c.CloseNow() }()
	s.sessions.Add(1)
	s.mu.Lock()
	s.headers = append(s.headers, r.Header.Clone())
	s.mu.Unlock()
	if r.URL.Path == "/deaf" {
		<-r.Context().Done() // never reads: the client's writes back up
		return
	}
	for {
		_, b, err := c.Read(r.Context())
		if err != nil {
			return
		}
		s.mu.Lock()
		s.msgs = append(s.msgs, string(b))
		s.mu.Unlock()
		switch r.URL.Path {
		case "/echo":
			_ = c.Write(r.Context(), websocket.MessageText, b)
		case "/twice":
			_ = c.Write(r.Context(), websocket.MessageText, b)
			_ = c.Write(r.Context(), websocket.MessageText, b)
		case "/close":
			_ = c.Close(4001, "go away")
			return
		}
	}
}

// Messages returns the messages received, in order.
func (s *WebSocket) Messages() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.msgs...)
}

// Headers returns the handshake headers of every session, in order.
func (s *WebSocket) Headers() []http.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]http.Header(nil), s.headers...)
}

// Sessions returns how many WebSocket connections were accepted.
func (s *WebSocket) Sessions() int64 { return s.sessions.Load() }
