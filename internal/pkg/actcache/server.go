package actcache

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Options configure a [Server]. The zero value of each field but Dir
// picks the documented default.
type Options struct {
	// Dir holds the entries and their index (cache.dir). Required.
	Dir string
	// MaxBytes bounds the sum of the entries (cache.max_mb). Default
	// DefaultMaxBytes.
	MaxBytes int64
	// MaxRepoBytes bounds the entries of one repository
	// (cache.max_repo_mb): past it, that repository's entries used least
	// recently go first, so that it cannot push out more than
	// MaxBytes-MaxRepoBytes of the others'. An upload larger is refused.
	// Default half of MaxBytes; at most MaxBytes.
	MaxRepoBytes int64
	// MaxEntries bounds their number. Default DefaultMaxEntries.
	MaxEntries int
	// Host is the address the server listens on and jobs are given
	// (cache.host). Default "": [OutboundHost], an address that job
	// containers reach too.
	Host string
	// Port is the port it listens on (cache.port). Default 0: a free
	// port.
	Port int
}

// Server is the cache server. Make it with [Listen], run it with
// [Server.Serve], lend each job a URL with [Server.Grant]. Its methods
// are safe for concurrent use.
type Server struct {
	store *store
	ln    net.Listener
	base  string // http://host:port/
	now   func() time.Time

	mu     sync.Mutex
	grants map[string]string // token → repository
}

// Listen opens the store in o.Dir and listens on o.Host:o.Port; the
// caller then runs [Server.Serve].
func Listen(o Options) (*Server, error) {
	if o.Dir == "" {
		return nil, errors.New("cache.dir is empty; set it to a directory for the cache's entries")
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.MaxRepoBytes <= 0 || o.MaxRepoBytes > o.MaxBytes {
		o.MaxRepoBytes = o.MaxBytes / 2
	}
	if o.MaxEntries <= 0 {
		o.MaxEntries = DefaultMaxEntries
	}
	if o.Host == "" {
		o.Host = OutboundHost()
	}
	st, err := openStore(o.Dir, o.MaxBytes, o.MaxRepoBytes, o.MaxEntries)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(o.Host, strconv.Itoa(o.Port)))
	if err != nil {
		return nil, fmt.Errorf("cache server: listen on %s: %w; set cache.host to an address of this host and cache.port to a free port (0 picks one)", net.JoinHostPort(o.Host, strconv.Itoa(o.Port)), err)
	}
	return &Server{store: st, ln: ln, base: "http://" + ln.Addr().String() + "/", now: time.Now, grants: map[string]string{}}, nil
}

// IdleTimeout is how long the server keeps a connection open with no
// request on it. It is short because the toolkit's cache client (of
// actions/cache@v3, under Node.js 20 and later) leaves some responses
// unread on keep-alive connections, and Node.js does not exit while such
// a connection is open: the action's process waits for the server to
// close it. With a minute, each actions/cache@v3 save ended a minute
// after "Cache saved successfully". The toolkit sends its requests back
// to back, so they still share connections.
const IdleTimeout = 2 * time.Second

// Addr is the address the server listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Serve serves until ctx ends, then closes the listener and waits up to
// 5 s for requests in flight. It returns nil after ctx ends.
func (s *Server) Serve(ctx context.Context) error {
	srv := &http.Server{
		Handler:           s.handler(),
		ReadHeaderTimeout: 10 * time.Second,
		// A chunk (32 MiB from the toolkit) has 10 minutes to arrive.
		ReadTimeout:    10 * time.Minute,
		IdleTimeout:    IdleTimeout,
		MaxHeaderBytes: 64 << 10,
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(s.ln) }()
	select {
	case err := <-done:
		return fmt.Errorf("cache server on %s: %w", s.ln.Addr(), err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		_ = srv.Close()
	}
	<-done
	return nil
}

// Grant lends a job of repository (owner/name) a cache URL, ending in a
// slash as ACTIONS_CACHE_URL must, and returns the token in it (to mask
// in the job's log). The URL serves that repository's entries only,
// until revoke is called; revoke also drops the uploads the job did not
// commit.
func (s *Server) Grant(repository string) (url, token string, revoke func()) {
	var b [24]byte
	_, _ = rand.Read(b[:])
	token = hex.EncodeToString(b[:])
	s.mu.Lock()
	s.grants[token] = repository
	s.mu.Unlock()
	var once sync.Once
	return s.base + token + "/", token, func() {
		once.Do(func() {
			s.mu.Lock()
			delete(s.grants, token)
			s.mu.Unlock()
			s.store.abandon(token)
		})
	}
}

// repository is the repository token was granted for, if it is live.
func (s *Server) repository(token string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.grants[token]
	return r, ok
}

// OutboundHost is an address of this host that job containers reach: the
// first IPv4 address of an interface that is up, not loopback and not a
// Docker bridge; 127.0.0.1 when there is none (then only host jobs reach
// the cache).
func OutboundHost() string {
	ifs, err := net.Interfaces()
	if err != nil {
		return "127.0.0.1"
	}
	for _, i := range ifs {
		if i.Flags&net.FlagUp == 0 || i.Flags&net.FlagLoopback != 0 || isBridge(i.Name) {
			continue
		}
		addrs, _ := i.Addrs()
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLinkLocalUnicast() {
				return n.IP.String()
			}
		}
	}
	return "127.0.0.1"
}

func isBridge(name string) bool {
	for _, p := range []string{"docker", "br-", "veth", "virbr", "cni", "flannel"} {
		if len(name) >= len(p) && name[:len(p)] == p {
			return true
		}
	}
	return false
}
