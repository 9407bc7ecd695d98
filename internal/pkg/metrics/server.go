package metrics

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Readiness says whether the daemon is ready for work. The poller implements
// it. Ready returns nil when ready, else an error whose text is shown by
// /readyz (e.g. "not registered" or "forge errors for 45s (grace 30s)"); it
// must be safe for concurrent use and must not block.
type Readiness interface {
	Ready() error
}

// ShutdownTimeout bounds how long [Server.Serve] waits for in-flight scrapes
// once its context ends.
const ShutdownTimeout = 5 * time.Second

// Server serves /metrics, /healthz and /readyz. Build it with [NewServer],
// bind with [Server.Listen] (so a taken port fails start-up), then run
// [Server.Serve]. Its methods are safe for concurrent use.
type Server struct {
	addr string
	srv  *http.Server
	mux  *http.ServeMux

	mu sync.Mutex
	ln net.Listener
}

// NewServer returns a Server for addr (host:port; port 0 picks a free
// port) that exposes the metrics gathered from g. r decides /readyz; nil
// means always ready.
func NewServer(addr string, g prometheus.Gatherer, r Readiness) *Server {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		if r != nil {
			if err := r.Ready(); err != nil {
				w.WriteHeader(http.StatusServiceUnavailable)
				_, _ = fmt.Fprintln(w, "not ready:", err)
				return
			}
		}
		_, _ = fmt.Fprintln(w, "ok")
	})
	return &Server{
		addr: addr,
		mux:  mux,
		srv: &http.Server{
			Handler:           mux,
			ReadHeaderTimeout: 10 * time.Second,
			ReadTimeout:       30 * time.Second,
			WriteTimeout:      60 * time.Second,
			IdleTimeout:       2 * time.Minute,
		},
	}
}

// Handle serves h for pattern (as [http.ServeMux.Handle]) next to the
// metrics, such as the daemon's jobs page. Call it before [Server.Serve].
func (s *Server) Handle(pattern string, h http.Handler) { s.mux.Handle(pattern, h) }

// Listen binds the address now, so that a port in use fails start-up with
// an error naming the address and the metrics.addr config key. Calling it
// again after success does nothing.
func (s *Server) Listen() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln != nil {
		return nil
	}
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		return fmt.Errorf("listen for metrics on %q: %w (free that port, or set metrics.addr / FORGELOAD_METRICS_ADDR to another host:port, or metrics.enabled: false)", s.addr, err)
	}
	s.ln = ln
	return nil
}

// Addr returns the bound address (with the real port when the configured
// port was 0), or the configured address before Listen.
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln != nil {
		return s.ln.Addr().String()
	}
	return s.addr
}

// Serve serves until ctx ends, then shuts down gracefully, waiting up to
// [ShutdownTimeout] for in-flight requests. It calls Listen first if that has
// not been done. It returns nil on a clean stop and the error otherwise. Call
// it once.
func (s *Server) Serve(ctx context.Context) error {
	if err := s.Listen(); err != nil {
		return err
	}
	s.mu.Lock()
	ln := s.ln
	s.mu.Unlock()

	errc := make(chan error, 1)
	go func() { errc <- s.srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve metrics on %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ShutdownTimeout)
	defer cancel()
	serr := s.srv.Shutdown(sctx)
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve metrics on %s: %w", ln.Addr(), err)
	}
	if serr != nil {
		return fmt.Errorf("shut down metrics server on %s: %w", ln.Addr(), serr)
	}
	return nil
}
