package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Options shape the demo target. The zero value gives the defaults.
type Options struct {
	// Median is the median response latency. Default 5ms.
	Median time.Duration
	// Sigma is the log-normal shape: 0.5 puts p99 near 3.2× the median.
	// Default 0.5.
	Sigma float64
	// ErrorRate is the fraction of requests answered 503. Default 0.005.
	ErrorRate float64
	// Seed makes latencies and errors reproducible. Default 1.
	Seed uint64
	// Addr is where to listen; it must be a loopback address. Default
	// 127.0.0.1:0 (a free port).
	Addr string
}

// Server is a running demo target. Close stops it.
type Server struct {
	srv      *http.Server
	ln       net.Listener
	done     chan struct{}
	requests atomic.Int64
	errors   atomic.Int64

	mu  sync.Mutex
	rng *rand.Rand
	o   Options
}

// Start listens on loopback and serves until Close.
//
// Routes: GET / (a small HTML page), GET /api/items (JSON list),
// GET /api/items/{id}, POST /api/login (JSON body echoed), GET /healthz.
func Start(o Options) (*Server, error) {
	if o.Median <= 0 {
		o.Median = 5 * time.Millisecond
	}
	if o.Sigma <= 0 {
		o.Sigma = 0.5
	}
	if o.ErrorRate < 0 || o.ErrorRate > 1 {
		return nil, fmt.Errorf("demo: error rate %g is outside 0..1", o.ErrorRate)
	}
	if o.ErrorRate == 0 {
		o.ErrorRate = 0.005
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.Addr == "" {
		o.Addr = "127.0.0.1:0"
	}
	host, _, err := net.SplitHostPort(o.Addr)
	if err != nil {
		return nil, fmt.Errorf("demo: address %q: %w", o.Addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("demo: address %q is not loopback; the demo target only listens on 127.0.0.1 or ::1", o.Addr)
	}
	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return nil, fmt.Errorf("demo: listen on %s: %w", o.Addr, err)
	}
	s := &Server{ln: ln, done: make(chan struct{}), o: o, rng: newRand(o.Seed)}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") })
	mux.HandleFunc("GET /{$}", s.wrap(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, "<!doctype html><title>forgeload demo</title><h1>forgeload demo target</h1>\n")
	}))
	mux.HandleFunc("GET /api/items", s.wrap(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `[{"id":1,"name":"anvil"},{"id":2,"name":"hammer"},{"id":3,"name":"tongs"}]`+"\n")
	}))
	mux.HandleFunc("GET /api/items/{id}", s.wrap(func(w http.ResponseWriter, r *http.Request) {
		id, err := strconv.Atoi(r.PathValue("id"))
		if err != nil || id < 1 {
			http.Error(w, `{"error":"no such item"}`, http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":%d,"name":"item-%d"}`+"\n", id, id)
	}))
	mux.HandleFunc("POST /api/login", s.wrap(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<10))
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"ok":true,"received":%d}`+"\n", len(body))
	}))
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			_ = err // Serve only fails here when the listener breaks; Close reports nothing more useful.
		}
	}()
	return s, nil
}

// wrap adds the simulated latency and errors to a handler.
func (s *Server) wrap(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		delay, fail := s.draw()
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		}
		if fail {
			s.errors.Add(1)
			http.Error(w, `{"error":"temporarily unavailable"}`, http.StatusServiceUnavailable)
			return
		}
		h(w, r)
	}
}

// draw picks one request's latency and whether it fails.
func (s *Server) draw() (time.Duration, bool) {
	s.mu.Lock()
	z := s.rng.NormFloat64()
	u := s.rng.Float64()
	s.mu.Unlock()
	d := time.Duration(float64(s.o.Median) * math.Exp(s.o.Sigma*z))
	return min(d, 2*time.Second), u < s.o.ErrorRate
}

func newRand(seed uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}

// URL is the target's base URL, e.g. http://127.0.0.1:41234.
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() }

// Close stops the server and waits for it.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	<-s.done
	return err
}
