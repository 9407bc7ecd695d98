package httpload

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/forgeload/forgeload/internal/pkg/load"
)

// The HTTP/1.1 fast path: for http:// targets the driver writes a prebuilt
// request in one write and parses the response itself on pooled keep-alive
// connections. It allocates nothing per request in the steady state, which
// is what lets one core generate several times the load net/http can.

// errProtocol marks a malformed response.
var errProtocol = errors.New("malformed HTTP/1.1 response")

// h1Conn is one keep-alive connection with its read buffer.
type h1Conn struct {
	conn net.Conn
	r    *bufio.Reader
	n    int64 // bytes read for the current response
	body int64 // body bytes of the current response
	// wrote is set once a byte of the current request was written.
	wrote bool
	// ctx is the context whose cancellation stop is registered for; the
	// engine passes one context per run, so this is registered once.
	ctx  context.Context
	stop func() bool
}

func (c *h1Conn) close() {
	if c.stop != nil {
		c.stop()
	}
	_ = c.conn.Close()
}

// h1Client is a pool of HTTP/1.1 connections to one or more http:// hosts.
type h1Client struct {
	dial  func(ctx context.Context, network, addr string) (net.Conn, error)
	pools map[string]chan *h1Conn // by host:port
}

// h1Request is an endpoint's prebuilt request.
type h1Request struct {
	addr string // host:port to dial
	wire []byte // request line, headers and body
	head bool
}

func newH1Request(u *url.URL, method, host string, headers map[string]string, body []byte) h1Request {
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "80")
	}
	if host == "" {
		host = u.Host
	}
	var b bytes.Buffer
	b.WriteString(method + " " + u.RequestURI() + " HTTP/1.1\r\nHost: " + host + "\r\n")
	hasUA := false
	for k, v := range headers {
		if strings.EqualFold(k, "Host") || strings.EqualFold(k, "Content-Length") {
			continue
		}
		if strings.EqualFold(k, "User-Agent") {
			hasUA = true
		}
		b.WriteString(k + ": " + v + "\r\n")
	}
	if !hasUA {
		b.WriteString("User-Agent: forgeload\r\n")
	}
	if len(body) > 0 || method == "POST" || method == "PUT" || method == "PATCH" {
		b.WriteString("Content-Length: " + strconv.Itoa(len(body)) + "\r\n")
	}
	b.WriteString("\r\n")
	b.Write(body)
	return h1Request{addr: addr, wire: b.Bytes(), head: method == "HEAD"}
}

func (h *h1Client) get(ctx context.Context, addr string) (*h1Conn, bool, error) {
	select {
	case c := <-h.pools[addr]:
		return c, true, nil
	default:
	}
	c, err := h.dialConn(ctx, addr)
	return c, false, err
}

// dialConn opens a new connection to addr.
func (h *h1Client) dialConn(ctx context.Context, addr string) (*h1Conn, error) {
	conn, err := h.dial(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	return &h1Conn{conn: conn, r: bufio.NewReaderSize(conn, 8<<10)}, nil
}

// warm fills each host's pool with up to n new connections, dialling up to
// warmParallel at once and for at most warmBudget in all, so warming a
// thousand connections to a distant host cannot hold a run back. It
// returns the first dial error, and dials no more after it.
func (h *h1Client) warm(ctx context.Context, n int) error {
	ctx, cancel := context.WithTimeout(ctx, warmBudget)
	defer cancel()
	sem := make(chan struct{}, warmParallel)
	var wg sync.WaitGroup
	var first error
	var mu sync.Mutex
	failed := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return first != nil || ctx.Err() != nil
	}
	for addr, pool := range h.pools {
		for range min(n, cap(pool)-len(pool)) {
			sem <- struct{}{}
			if failed() {
				<-sem
				break
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				c, err := h.dialConn(ctx, addr)
				if err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					return
				}
				h.put(addr, c)
			}()
		}
	}
	wg.Wait()
	return first
}

// Warm-up bounds: connections dialled at once, and the whole warm-up.
const (
	warmParallel = 32
	warmBudget   = 5 * time.Second
)

func (h *h1Client) put(addr string, c *h1Conn) {
	select {
	case h.pools[addr] <- c:
	default:
		c.close()
	}
}

func (h *h1Client) closeIdle() {
	for _, p := range h.pools {
		for {
			select {
			case c := <-p:
				c.close()
				continue
			default:
			}
			break
		}
	}
}

// do sends req and reads the response, reporting into s. A request on a
// reused connection that the server had already closed is retried once on
// a new connection.
func (h *h1Client) do(ctx context.Context, req *h1Request, timeout time.Duration, s *load.Sample) error {
	for try := 0; ; try++ {
		c, reused, err := h.get(ctx, req.addr)
		if err != nil {
			s.Class = load.Classify(err)
			if ctx.Err() != nil {
				s.Unsent = load.DropCanceled // cancelled while dialling: nothing left
			}
			return err
		}
		s.BytesOut = int64(len(req.wire)) // a connection exists: the request goes out
		status, keep, err := h.roundTrip(ctx, c, req, timeout)
		if err != nil {
			c.close()
			if reused && try == 0 && c.n == 0 && ctx.Err() == nil && (errors.Is(err, io.EOF) || isReset(err)) {
				continue // a stale keep-alive connection
			}
			s.BytesIn, s.Status = c.body, status
			if ctx.Err() != nil {
				err = fmt.Errorf("http request: %w", ctx.Err())
				if !c.wrote {
					s.Unsent, s.BytesOut = load.DropCanceled, 0 // cancelled before a byte left
				}
			}
			s.Class = load.Classify(err)
			if s.Class == load.ClassOther {
				s.Class = load.ClassProtocol
			}
			return err
		}
		s.BytesIn, s.Status = c.body, status
		if keep {
			h.put(req.addr, c)
		} else {
			c.close()
		}
		if status >= 400 {
			s.Class = load.StatusClass(status)
			return load.StatusError{Code: status}
		}
		return nil
	}
}

func isReset(err error) bool {
	var ne *net.OpError
	return errors.As(err, &ne) && !ne.Timeout()
}

func (h *h1Client) roundTrip(ctx context.Context, c *h1Conn, req *h1Request, timeout time.Duration) (status int, keep bool, err error) {
	c.wrote = false
	if c.ctx != ctx {
		if c.stop != nil {
			c.stop()
		}
		conn := c.conn
		c.ctx = ctx
		c.stop = context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	}
	if err := ctx.Err(); err != nil {
		return 0, false, err
	}
	deadline := time.Now().Add(timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if err := c.conn.SetDeadline(deadline); err != nil {
		return 0, false, err
	}
	if err := ctx.Err(); err != nil { // cancelled while the deadline was set
		return 0, false, err
	}
	c.n, c.body = 0, 0
	n, err := c.conn.Write(req.wire)
	c.wrote = n > 0
	if err != nil {
		return 0, false, err
	}
	for {
		status, keep, err = c.readResponse(req.head)
		if err != nil || status >= 200 || status == 101 {
			return status, keep, err
		}
		// 1xx informational: the real response follows.
	}
}

// line reads one header line without its CRLF.
func (c *h1Conn) line() ([]byte, error) {
	b, err := c.r.ReadSlice('\n')
	c.n += int64(len(b))
	if err != nil {
		if errors.Is(err, bufio.ErrBufferFull) {
			return nil, fmt.Errorf("%w: header line longer than 8 KiB", errProtocol)
		}
		if errors.Is(err, io.EOF) && len(b) > 0 {
			return nil, io.ErrUnexpectedEOF
		}
		return nil, err
	}
	b = b[:len(b)-1]
	if n := len(b); n > 0 && b[n-1] == '\r' {
		b = b[:n-1]
	}
	return b, nil
}

var (
	hdrContentLength = []byte("Content-Length")
	hdrTransferEnc   = []byte("Transfer-Encoding")
	hdrConnection    = []byte("Connection")
	valChunked       = []byte("chunked")
	valClose         = []byte("close")
)

func (c *h1Conn) readResponse(head bool) (status int, keep bool, err error) {
	l, err := c.line()
	if err != nil {
		return 0, false, err
	}
	// HTTP/1.x SP 3DIGIT [SP reason]
	if len(l) < 12 || !bytes.HasPrefix(l, []byte("HTTP/1.")) || l[8] != ' ' {
		return 0, false, fmt.Errorf("%w: bad status line", errProtocol)
	}
	for _, d := range l[9:12] {
		if d < '0' || d > '9' {
			return 0, false, fmt.Errorf("%w: bad status code", errProtocol)
		}
		status = status*10 + int(d-'0')
	}
	if status < 100 {
		return 0, false, fmt.Errorf("%w: status code %d", errProtocol, status)
	}
	keep = l[7] == '1'
	length, chunked := int64(-1), false
	for {
		l, err = c.line()
		if err != nil {
			return status, false, err
		}
		if len(l) == 0 {
			break
		}
		i := bytes.IndexByte(l, ':')
		if i <= 0 {
			return status, false, fmt.Errorf("%w: bad header line", errProtocol)
		}
		name, val := l[:i], bytes.TrimSpace(l[i+1:])
		switch headerOf(name) {
		case hContentLength:
			n, ok := parseUint(val)
			if !ok {
				return status, false, fmt.Errorf("%w: bad Content-Length", errProtocol)
			}
			length = n
		case hTransferEncoding:
			chunked = containsFold(val, valChunked)
		case hConnection:
			if containsFold(val, valClose) {
				keep = false
			}
		}
	}
	if head || status == 204 || status == 304 || status < 200 {
		return status, keep, nil
	}
	switch {
	case chunked:
		return status, keep, c.discardChunked()
	case length >= 0:
		n, err := c.r.Discard(int(length))
		c.n += int64(n)
		c.body += int64(n)
		if err != nil {
			return status, false, io.ErrUnexpectedEOF
		}
		return status, keep, nil
	}
	// No length: the body runs to the end of the connection.
	n, err := c.r.WriteTo(io.Discard)
	c.n += n
	c.body += n
	return status, false, err
}

func (c *h1Conn) discardChunked() error {
	for {
		l, err := c.line()
		if err != nil {
			return err
		}
		if i := bytes.IndexByte(l, ';'); i >= 0 {
			l = l[:i]
		}
		size, ok := parseHex(bytes.TrimSpace(l))
		if !ok {
			return fmt.Errorf("%w: bad chunk size", errProtocol)
		}
		if size == 0 {
			for { // trailers, then an empty line
				l, err := c.line()
				if err != nil {
					return err
				}
				if len(l) == 0 {
					return nil
				}
			}
		}
		n, err := c.r.Discard(int(size))
		c.n += int64(n)
		c.body += int64(n)
		if err != nil {
			return io.ErrUnexpectedEOF
		}
		if l, err := c.line(); err != nil || len(l) != 0 {
			return fmt.Errorf("%w: chunk not followed by CRLF", errProtocol)
		}
	}
}

func parseUint(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var n int64
	for _, d := range b {
		if d < '0' || d > '9' {
			return 0, false
		}
		n = n*10 + int64(d-'0')
	}
	return n, true
}

func parseHex(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 15 {
		return 0, false
	}
	var n int64
	for _, d := range b {
		switch {
		case d >= '0' && d <= '9':
			n = n*16 + int64(d-'0')
		case d >= 'a' && d <= 'f':
			n = n*16 + int64(d-'a'+10)
		case d >= 'A' && d <= 'F':
			n = n*16 + int64(d-'A'+10)
		default:
			return 0, false
		}
	}
	return n, true
}

// The response headers the fast path reads.
const (
	hOther = iota
	hContentLength
	hTransferEncoding
	hConnection
)

// headerOf tells which of the headers the fast path reads name is. It
// compares lengths first: most headers (Date, Content-Type, Server) are
// none of them, and EqualFold compares a common prefix byte by byte
// before it finds out (some 200 instructions a response against
// bench/target's two headers).
func headerOf(name []byte) int {
	switch len(name) {
	case len(hdrContentLength):
		if bytes.EqualFold(name, hdrContentLength) {
			return hContentLength
		}
	case len(hdrTransferEnc):
		if bytes.EqualFold(name, hdrTransferEnc) {
			return hTransferEncoding
		}
	case len(hdrConnection):
		if bytes.EqualFold(name, hdrConnection) {
			return hConnection
		}
	}
	return hOther
}

// containsFold reports whether the comma-separated list v has token t.
func containsFold(v, t []byte) bool {
	for len(v) > 0 {
		i := bytes.IndexByte(v, ',')
		var tok []byte
		if i < 0 {
			tok, v = v, nil
		} else {
			tok, v = v[:i], v[i+1:]
		}
		if bytes.EqualFold(bytes.TrimSpace(tok), t) {
			return true
		}
	}
	return false
}
