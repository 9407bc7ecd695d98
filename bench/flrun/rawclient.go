package main

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
	"time"

	"github.com/forgeload/forgeload/internal/pkg/load"
)

// rawClient is a minimal HTTP/1.1 keep-alive client for one GET target: a
// preformatted request, a pool of connections, and a response parser that
// reads the status line, Content-Length or chunked framing and discards the
// body. It is safe for concurrent use. It is a measuring stick, not a
// product driver: no TLS, no redirects, no HTTP/2.
type rawClient struct {
	addr    string
	req     []byte
	timeout time.Duration
	pool    chan *rawConn
	dialer  net.Dialer
}

type rawConn struct {
	c  net.Conn
	br *bufio.Reader
}

var _ load.Requester = (*rawClient)(nil)

// newRawClient returns a client for target (http:// only) keeping up to
// conns idle connections.
func newRawClient(target string, conns int, timeout time.Duration) (*rawClient, error) {
	u, err := url.Parse(target)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return nil, fmt.Errorf("raw client: target %q is not an http:// URL: the raw client speaks cleartext HTTP/1.1 only", target)
	}
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), "80")
	}
	req := "GET " + u.RequestURI() + " HTTP/1.1\r\nHost: " + u.Host + "\r\nUser-Agent: forgeload-bench\r\n\r\n"
	return &rawClient{addr: host, req: []byte(req), timeout: timeout, pool: make(chan *rawConn, conns)}, nil
}

// Do sends one request.
func (c *rawClient) Do(ctx context.Context) error {
	var s load.Sample
	return c.DoSample(ctx, &s)
}

// DoSample sends one request on a pooled connection and reports it in s.
func (c *rawClient) DoSample(ctx context.Context, s *load.Sample) error {
	var rc *rawConn
	select {
	case rc = <-c.pool:
	default:
		conn, err := c.dialer.DialContext(ctx, "tcp", c.addr)
		if err != nil {
			s.Class = load.Classify(err)
			return err
		}
		rc = &rawConn{c: conn, br: bufio.NewReaderSize(conn, 4096)}
	}
	deadline := time.Now().Add(c.timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	_ = rc.c.SetDeadline(deadline)
	s.BytesOut = int64(len(c.req))
	if _, err := rc.c.Write(c.req); err != nil {
		_ = rc.c.Close()
		s.Class = load.Classify(err)
		return err
	}
	status, n, keep, err := readResponse(rc.br)
	s.Status, s.BytesIn = status, n
	if err != nil {
		_ = rc.c.Close()
		s.Class = load.Classify(err)
		if s.Class == load.ClassOther {
			s.Class = load.ClassProtocol
		}
		return err
	}
	if keep {
		select {
		case c.pool <- rc:
		default:
			_ = rc.c.Close()
		}
	} else {
		_ = rc.c.Close()
	}
	if status >= 400 {
		s.Class = load.StatusClass(status)
		return load.StatusError{Code: status}
	}
	return nil
}

// close closes the idle connections.
func (c *rawClient) close() {
	for {
		select {
		case rc := <-c.pool:
			_ = rc.c.Close()
		default:
			return
		}
	}
}

var errMalformed = errors.New("malformed HTTP/1.1 response")

// readResponse reads one response from br and discards its body. It returns
// the status, the body length and whether the connection may be reused.
func readResponse(br *bufio.Reader) (status int, n int64, keep bool, err error) {
	line, err := br.ReadSlice('\n')
	if err != nil {
		return 0, 0, false, fmt.Errorf("read status line: %w", err)
	}
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) {
		return 0, 0, false, fmt.Errorf("%w: status line %q", errMalformed, line)
	}
	keep = line[7] == '1'
	status = int(line[9]-'0')*100 + int(line[10]-'0')*10 + int(line[11]-'0')
	if status < 100 || status > 999 {
		return 0, 0, false, fmt.Errorf("%w: status line %q", errMalformed, line)
	}
	length, chunked := int64(-1), false
	for {
		h, err := br.ReadSlice('\n')
		if err != nil {
			return status, 0, false, fmt.Errorf("read header: %w", err)
		}
		h = bytes.TrimRight(h, "\r\n")
		if len(h) == 0 {
			break
		}
		colon := bytes.IndexByte(h, ':')
		if colon <= 0 {
			return status, 0, false, fmt.Errorf("%w: header %q", errMalformed, h)
		}
		name, value := h[:colon], bytes.TrimSpace(h[colon+1:])
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			length, err = strconv.ParseInt(string(value), 10, 64)
			if err != nil || length < 0 {
				return status, 0, false, fmt.Errorf("%w: Content-Length %q", errMalformed, value)
			}
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			chunked = bytes.EqualFold(value, []byte("chunked"))
		case bytes.EqualFold(name, []byte("Connection")):
			if bytes.EqualFold(value, []byte("close")) {
				keep = false
			} else if bytes.EqualFold(value, []byte("keep-alive")) {
				keep = true
			}
		}
	}
	switch {
	case status == 204 || status == 304 || status < 200:
		return status, 0, keep, nil
	case chunked:
		n, err = discardChunked(br)
		return status, n, keep && err == nil, err
	case length >= 0:
		d, err := br.Discard(int(length))
		return status, int64(d), keep && err == nil, err
	}
	// No framing: the body runs to the end of the connection.
	n, err = io.Copy(io.Discard, br)
	return status, n, false, err
}

func discardChunked(br *bufio.Reader) (int64, error) {
	var n int64
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return n, fmt.Errorf("read chunk size: %w", err)
		}
		line = bytes.TrimRight(line, "\r\n")
		if i := bytes.IndexByte(line, ';'); i >= 0 {
			line = line[:i]
		}
		size, err := strconv.ParseInt(string(bytes.TrimSpace(line)), 16, 64)
		if err != nil || size < 0 {
			return n, fmt.Errorf("%w: chunk size %q", errMalformed, line)
		}
		if size == 0 { // trailers, then an empty line
			for {
				t, err := br.ReadSlice('\n')
				if err != nil {
					return n, fmt.Errorf("read trailer: %w", err)
				}
				if len(bytes.TrimRight(t, "\r\n")) == 0 {
					return n, nil
				}
			}
		}
		d, err := br.Discard(int(size))
		n += int64(d)
		if err != nil {
			return n, fmt.Errorf("read chunk: %w", err)
		}
		if _, err := br.Discard(2); err != nil {
			return n, fmt.Errorf("read chunk end: %w", err)
		}
	}
}
