package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

const (
	// bucketWidth is the width of one arrival-count bucket.
	bucketWidth = 10 * time.Millisecond
	// nBuckets covers 120 s of arrivals from the first one; later arrivals
	// are counted in total but not bucketed.
	nBuckets = 12000
	// maxBody is the largest request body the raw server accepts.
	maxBody = 1 << 20
	// body is the answer to every counted request.
	body = "forgeload bench target\n"
)

// Request kinds, told apart by path.
const (
	kindLoad  = iota // counted load request
	kindReset        // GET /__bench/reset
	kindStats        // GET /__bench/stats
)

// server holds the stall plan and the arrival counters shared by both
// implementations. It is safe for concurrent use.
type server struct {
	every, stall time.Duration // stall == 0: fast mode
	now          func() time.Time

	origin atomic.Int64 // unix ns at which stall windows start
	first  atomic.Int64 // unix ns of the first counted arrival; 0 none yet
	last   atomic.Int64 // unix ns of the latest counted arrival
	total  atomic.Int64
	bucket [nBuckets]atomic.Int64

	done chan struct{} // closed by close: stalls end at once
	once sync.Once
}

// newServer returns a server whose stall windows start now. stall == 0
// selects fast mode.
func newServer(every, stall time.Duration, now func() time.Time) *server {
	s := &server{every: every, stall: stall, now: now, done: make(chan struct{})}
	s.origin.Store(now().UnixNano())
	return s
}

// stallDelay is how long a request arriving at now must wait: until the end
// of the stall if now falls in the first stall of an every-long window that
// starts at origin, else 0.
func stallDelay(now, origin time.Time, every, stall time.Duration) time.Duration {
	if stall <= 0 || every <= 0 {
		return 0
	}
	phase := now.Sub(origin) % every
	if phase < 0 {
		phase += every
	}
	if phase < stall {
		return stall - phase
	}
	return 0
}

// arrive counts one load request and returns how long to hold it.
func (s *server) arrive() time.Duration {
	now := s.now()
	ns := now.UnixNano()
	if s.first.Load() == 0 {
		s.first.CompareAndSwap(0, ns)
	}
	first := s.first.Load()
	if i := (ns - first) / int64(bucketWidth); i >= 0 && i < nBuckets {
		s.bucket[i].Add(1)
	}
	s.last.Store(ns)
	s.total.Add(1)
	return stallDelay(now, time.Unix(0, s.origin.Load()), s.every, s.stall)
}

// hold waits d, or less if the server is closing.
func (s *server) hold(d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-s.done:
	}
}

// reset clears the counters and starts the stall windows now. It is meant to
// be called between runs, while no load is arriving.
func (s *server) reset() {
	s.first.Store(0)
	s.last.Store(0)
	s.total.Store(0)
	for i := range s.bucket {
		s.bucket[i].Store(0)
	}
	s.origin.Store(s.now().UnixNano())
}

// Stats is the JSON answer of GET /__bench/stats.
type Stats struct {
	// Total is the number of load requests since the last reset.
	Total int64 `json:"total"`
	// SpanSeconds is the time from the first to the last of them.
	SpanSeconds float64 `json:"span_s"`
	// First100ms is how many arrived within 100 ms of the first one.
	First100ms int64 `json:"first_100ms"`
	// First100msBy10ms splits First100ms into 10 ms buckets, to show where
	// in the first 100 ms a burst or a gap lies.
	First100msBy10ms []int64 `json:"first_100ms_by_10ms"`
	// Max100msAfter1s is the largest count in any aligned 100 ms window
	// after the first second: the steady-state reference for First100ms.
	Max100msAfter1s int64 `json:"max_100ms_after_1s"`
	// PerSecond counts arrivals in each second from the first one.
	PerSecond []int64 `json:"per_second"`
}

// stats summarises the counters.
func (s *server) stats() Stats {
	st := Stats{Total: s.total.Load()}
	if f, l := s.first.Load(), s.last.Load(); f != 0 && l >= f {
		st.SpanSeconds = time.Duration(l - f).Seconds()
	}
	per100 := int(100 * time.Millisecond / bucketWidth)
	perSec := int(time.Second / bucketWidth)
	var win int64
	for i := range s.bucket {
		n := s.bucket[i].Load()
		if i < per100 {
			st.First100ms += n
			st.First100msBy10ms = append(st.First100msBy10ms, n)
		}
		if n > 0 {
			for len(st.PerSecond) <= i/perSec {
				st.PerSecond = append(st.PerSecond, 0)
			}
			st.PerSecond[i/perSec] += n
		}
		win += n
		if (i+1)%per100 == 0 {
			if i >= perSec && win > st.Max100msAfter1s {
				st.Max100msAfter1s = win
			}
			win = 0
		}
	}
	return st
}

// close ends every stall at once.
func (s *server) close() { s.once.Do(func() { close(s.done) }) }

// request is what the raw server needs of one parsed request.
type request struct {
	kind      int
	keepAlive bool
}

// errTooLarge is returned for a header line or body over the limits.
var errTooLarge = errors.New("request too large")

// readRequest reads one HTTP/1.x request from br: the request line, the
// headers and, with Content-Length, the body (discarded). A chunked body is
// refused. It returns io.EOF when the connection closed cleanly before a
// request began.
func readRequest(br *bufio.Reader) (request, error) {
	var r request
	line, err := br.ReadSlice('\n')
	if err != nil {
		if err == io.EOF && len(line) == 0 {
			return r, io.EOF
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			return r, errTooLarge
		}
		return r, fmt.Errorf("read request line: %w", err)
	}
	line = trimEOL(line)
	sp1 := bytes.IndexByte(line, ' ')
	if sp1 <= 0 {
		return r, fmt.Errorf("malformed request line %q: want METHOD SP TARGET SP VERSION", line)
	}
	rest := line[sp1+1:]
	sp2 := bytes.IndexByte(rest, ' ')
	if sp2 <= 0 {
		return r, fmt.Errorf("malformed request line %q: want METHOD SP TARGET SP VERSION", line)
	}
	path, version := rest[:sp2], rest[sp2+1:]
	switch string(version) {
	case "HTTP/1.1":
		r.keepAlive = true
	case "HTTP/1.0":
	default:
		return r, fmt.Errorf("unsupported protocol version %q: send HTTP/1.0 or HTTP/1.1", version)
	}
	switch {
	case bytes.Equal(path, []byte("/__bench/reset")):
		r.kind = kindReset
	case bytes.Equal(path, []byte("/__bench/stats")):
		r.kind = kindStats
	}
	var length int64
	for {
		h, err := br.ReadSlice('\n')
		if err != nil {
			if errors.Is(err, bufio.ErrBufferFull) {
				return r, errTooLarge
			}
			return r, fmt.Errorf("read header: %w", err)
		}
		h = trimEOL(h)
		if len(h) == 0 {
			break
		}
		colon := bytes.IndexByte(h, ':')
		if colon <= 0 {
			return r, fmt.Errorf("malformed header line %q: want NAME: VALUE", h)
		}
		name, value := h[:colon], bytes.TrimSpace(h[colon+1:])
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			n, err := strconv.ParseInt(string(value), 10, 64)
			if err != nil || n < 0 {
				return r, fmt.Errorf("bad Content-Length %q: want a byte count >= 0", value)
			}
			if n > maxBody {
				return r, errTooLarge
			}
			length = n
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			return r, fmt.Errorf("transfer-encoding %q is not supported: send a Content-Length body", value)
		case bytes.EqualFold(name, []byte("Connection")):
			if containsFold(value, "close") {
				r.keepAlive = false
			} else if containsFold(value, "keep-alive") {
				r.keepAlive = true
			}
		}
	}
	if length > 0 {
		if _, err := br.Discard(int(length)); err != nil {
			return r, fmt.Errorf("read body: %w", err)
		}
	}
	return r, nil
}

func trimEOL(b []byte) []byte {
	b = bytes.TrimSuffix(b, []byte("\n"))
	return bytes.TrimSuffix(b, []byte("\r"))
}

func containsFold(b []byte, s string) bool {
	return bytes.Contains(bytes.ToLower(b), []byte(s))
}

// Canned responses of the raw server.
var (
	respOK        = []byte("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body)
	respOKClose   = []byte("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body)
	respBad       = []byte("HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n")
	respTooLarge  = []byte("HTTP/1.1 413 Content Too Large\r\nConnection: close\r\nContent-Length: 0\r\n\r\n")
	respJSONStart = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
)

// rawServer serves the target with a purpose-built HTTP/1.1 responder: one
// goroutine per connection, each owned by serve.
type rawServer struct {
	s     *server
	ln    net.Listener
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns map[net.Conn]struct{}
}

// serve accepts connections until ln is closed, then closes every
// connection and waits for their goroutines.
func (rs *rawServer) serve() error {
	defer rs.wg.Wait()
	defer rs.closeConns()
	for {
		c, err := rs.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return fmt.Errorf("accept on %s: %w", rs.ln.Addr(), err)
		}
		rs.mu.Lock()
		rs.conns[c] = struct{}{}
		rs.mu.Unlock()
		rs.wg.Add(1)
		go func() {
			defer rs.wg.Done()
			rs.serveConn(c)
			rs.mu.Lock()
			delete(rs.conns, c)
			rs.mu.Unlock()
		}()
	}
}

func (rs *rawServer) closeConns() {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for c := range rs.conns {
		_ = c.Close()
	}
}

func (rs *rawServer) serveConn(c net.Conn) {
	defer func() { _ = c.Close() }()
	br := bufio.NewReaderSize(c, 8192)
	bw := bufio.NewWriterSize(c, 8192)
	for {
		r, err := readRequest(br)
		if err != nil {
			switch {
			case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed), errors.Is(err, io.ErrUnexpectedEOF):
			case errors.Is(err, errTooLarge):
				_, _ = bw.Write(respTooLarge)
			default:
				_, _ = bw.Write(respBad)
			}
			_ = bw.Flush()
			return
		}
		switch r.kind {
		case kindLoad:
			rs.s.hold(rs.s.arrive())
			if r.keepAlive {
				_, _ = bw.Write(respOK)
			} else {
				_, _ = bw.Write(respOKClose)
			}
		case kindReset:
			rs.s.reset()
			writeJSON(bw, []byte("{}\n"))
		case kindStats:
			b, _ := json.Marshal(rs.s.stats())
			writeJSON(bw, append(b, '\n'))
		}
		// Flush only when no pipelined request is waiting.
		if br.Buffered() == 0 || !r.keepAlive {
			if err := bw.Flush(); err != nil {
				return
			}
		}
		if !r.keepAlive {
			return
		}
	}
}

func writeJSON(bw *bufio.Writer, b []byte) {
	_, _ = bw.WriteString(respJSONStart + strconv.Itoa(len(b)) + "\r\n\r\n")
	_, _ = bw.Write(b)
}

// handler serves the same answers through net/http.
func (s *server) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /__bench/reset", func(w http.ResponseWriter, _ *http.Request) {
		s.reset()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, "{}\n")
	})
	mux.HandleFunc("GET /__bench/stats", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(s.stats())
	})
	ok := []byte(body)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		s.hold(s.arrive())
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write(ok)
	})
	return mux
}
