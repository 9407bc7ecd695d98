package sseload

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/forgeload/forgeload/internal/pkg/load"
	"github.com/forgeload/forgeload/internal/pkg/load/check"
	"github.com/forgeload/forgeload/internal/pkg/load/vars"
)

// Defaults used where an [Options] field is zero.
const (
	// DefaultTimeout bounds connecting and receiving the response headers.
	DefaultTimeout = 30 * time.Second
	// DefaultMaxEvents is how many events a session reads when MaxEvents
	// is 0, as in Crankfire (which reads 100 so a session ends).
	DefaultMaxEvents = 100
	// MaxLine is the longest line of the stream the driver accepts.
	MaxLine     = 1 << 20
	dialTimeout = 10 * time.Second
)

// Options configures a [Driver]. Only URL is required.
type Options struct {
	// URL is the http:// or https:// URL of the stream. Required.
	URL string
	// Headers are sent with the GET; Accept: text/event-stream is added
	// unless given.
	Headers map[string]string
	// MaxEvents ends a session after this many events. Default
	// DefaultMaxEvents.
	MaxEvents int
	// ReadTimeout ends a session that has read for this long; reaching it
	// is not an error (Crankfire's read_timeout). Zero leaves the session
	// to Timeout, MaxEvents or the end of the stream.
	ReadTimeout time.Duration
	// Timeout bounds a session until its response headers, and the whole
	// session when ReadTimeout is zero. Default DefaultTimeout.
	Timeout time.Duration
	// InsecureSkipVerify disables certificate verification for https://.
	InsecureSkipVerify bool
	// Connections is how many open streams (and idle keep-alive
	// connections) are kept between sessions. Default 100.
	Connections int
	// DialControl is called with the resolved address of every connection
	// before it is made; an error refuses it (the runner's target policy).
	DialControl func(network, address string, c syscall.RawConn) error
	// Resolver resolves host names at dial time; nil is the system one.
	Resolver *net.Resolver
	// Vars fills {{placeholders}} in URL and header values with the
	// session's feeder row and the user's variables; nil renders defaults
	// only.
	Vars *vars.Source
	// Checks run on each session: status and header checks on the stream's
	// response, body_contains, body_not_contains and json checks on the
	// data of every event read (its data lines joined by newlines). A
	// session with a failed check fails with class check once it has
	// ended as it would have.
	Checks check.List
}

// Driver runs SSE sessions for the load engine. It is safe for concurrent
// use; create it with [New] and release its connections with Close.
type Driver struct {
	o      Options
	tmpl   *http.Request
	client *http.Client
	tr     *http.Transport
	rec    *load.ProtocolRecorder
	// url and headers are the templated request when perUser is set.
	url     *vars.Template
	headers map[string]*vars.Template
	perUser bool
	dynamic bool
	streams streamPool
	// session and event are Options.Checks split by what they read.
	session, event check.List
}

var (
	_ load.Requester     = (*Driver)(nil)
	_ load.ProtocolMeter = (*Driver)(nil)
)

// New checks o and returns a Driver.
func New(o Options) (*Driver, error) {
	u, err := url.Parse(o.URL)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("sse driver: target %q is not an http:// or https:// URL (want e.g. http://127.0.0.1:8080/events)", o.URL)
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxEvents <= 0 {
		o.MaxEvents = DefaultMaxEvents
	}
	if o.Connections <= 0 {
		o.Connections = 100
	}
	req, err := http.NewRequest(http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("sse driver: %w", err)
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Cache-Control", "no-cache")
	for k, v := range o.Headers {
		if http.CanonicalHeaderKey(k) == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	dialer := &net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second, Control: o.DialControl, Resolver: o.Resolver}
	tr := &http.Transport{
		Proxy:               nil,
		DialContext:         dialer.DialContext,
		TLSClientConfig:     &tls.Config{InsecureSkipVerify: o.InsecureSkipVerify}, //nolint:gosec // opt-in for self-signed targets
		MaxIdleConnsPerHost: o.Connections,
		DisableCompression:  true,
	}
	d := &Driver{o: o, tmpl: req, tr: tr, client: &http.Client{Transport: tr,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
		rec: load.NewProtocolRecorder("sse"), url: vars.Parse(o.URL), headers: map[string]*vars.Template{},
		streams: streamPool{max: o.Connections, idle: map[string][]*stream{}}}
	d.dynamic = !d.url.Static() || o.Vars.Headers()
	for k, v := range o.Headers {
		d.headers[k] = vars.Parse(v)
		d.dynamic = d.dynamic || !d.headers[k].Static()
	}
	d.perUser = d.dynamic || o.Vars.PerRequest()
	d.session, d.event = o.Checks.Of(check.KindStatus, check.KindHeader), o.Checks.Of(check.BodyKinds...)
	return d, nil
}

// request returns the session's request, the prebuilt one or one rendered
// from the templates, and the key of the streams it may reuse: streams
// are shared only between sessions that would send the same request.
func (d *Driver) request(ctx context.Context, s *load.Sample) (*http.Request, string, error) {
	if !d.perUser {
		return d.tmpl, "", nil
	}
	u, err := d.o.Vars.Begin(ctx, s)
	if err != nil {
		return nil, "", err
	}
	if !d.dynamic {
		return d.tmpl, "", nil
	}
	req, err := http.NewRequest(http.MethodGet, d.url.Render(u), nil)
	if err != nil {
		s.Class = load.ClassOther
		return nil, "", fmt.Errorf("sse: the target rendered from its placeholders is not a valid URL: %w", err)
	}
	req.Header = d.tmpl.Header.Clone()
	req.Host = d.tmpl.Host
	for k, t := range d.headers {
		if http.CanonicalHeaderKey(k) != "Host" {
			req.Header.Set(k, t.Render(u))
		}
	}
	if u.Auth != "" {
		req.Header.Set("Authorization", u.Auth)
	}
	if u.TraceParent != "" {
		req.Header.Set("Traceparent", u.TraceParent)
	}
	return req, streamKey(req), nil
}

// streamKey identifies a rendered request: its URL and headers.
func streamKey(req *http.Request) string {
	var b strings.Builder
	b.WriteString(req.URL.String())
	keys := make([]string, 0, len(req.Header))
	for k := range req.Header {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		b.WriteByte('\n')
		b.WriteString(k)
		b.WriteByte(':')
		b.WriteString(strings.Join(req.Header[k], ","))
	}
	return b.String()
}

// Names returns the one endpoint name, for load.Options.Endpoints.
func (d *Driver) Names() []string { return []string{"sse " + d.o.URL} }

// ProtocolStats returns the SSE measurements so far.
func (d *Driver) ProtocolStats() *load.ProtocolStats { return d.rec.Stats() }

// Close closes the streams kept between sessions and idle connections.
func (d *Driver) Close() {
	d.streams.closeAll()
	d.tr.CloseIdleConnections()
}

// Do runs one session.
func (d *Driver) Do(ctx context.Context) error {
	var s load.Sample
	return d.DoSample(ctx, &s)
}

var errReadWindow = errors.New("sse read timeout reached")

// stream is one open event stream. A session that ends on MaxEvents leaves
// it at an event boundary, so the next session with the same request reads
// on from there, as Crankfire does; any other end closes it.
type stream struct {
	key    string
	resp   *http.Response
	r      *reader
	ctx    context.Context // the stream's request; canceled to end it
	cancel context.CancelCauseFunc
	events int64 // read on this stream so far
	opened time.Time
}

func (st *stream) close() {
	st.cancel(nil)
	_ = st.resp.Body.Close()
}

// streamPool keeps streams between sessions, at most max of them.
type streamPool struct {
	mu     sync.Mutex
	idle   map[string][]*stream
	n, max int
	closed bool
}

func (p *streamPool) get(key string) *stream {
	p.mu.Lock()
	defer p.mu.Unlock()
	l := p.idle[key]
	if len(l) == 0 {
		return nil
	}
	st := l[len(l)-1]
	if len(l) == 1 {
		delete(p.idle, key)
	} else {
		p.idle[key] = l[:len(l)-1]
	}
	p.n--
	return st
}

// put keeps st for a later session, or closes it when the pool is full or
// closed.
func (p *streamPool) put(st *stream) {
	p.mu.Lock()
	if p.closed || p.n >= p.max {
		p.mu.Unlock()
		st.close()
		return
	}
	p.idle[st.key] = append(p.idle[st.key], st)
	p.n++
	p.mu.Unlock()
}

func (p *streamPool) closeAll() {
	p.mu.Lock()
	idle := p.idle
	p.idle, p.n, p.closed = map[string][]*stream{}, 0, true
	p.mu.Unlock()
	for _, l := range idle {
		for _, st := range l {
			st.close()
		}
	}
}

// open sends req and returns the stream once its headers are in. The
// stream's request lives on a context of its own, so that it can outlive
// the session; the session ends it through cancel when it must.
func (d *Driver) open(ctx context.Context, req *http.Request, key string, s *load.Sample) (*stream, error) {
	sctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	stopWatch := context.AfterFunc(ctx, func() { cancel(context.Cause(ctx)) })
	defer stopWatch()
	opened := time.Now()
	// Whether the request got as far as a connection: a stream the run
	// cancelled before that never left (see load.Sample.Unsent).
	got := new(atomic.Bool)
	tctx := httptrace.WithClientTrace(sctx, &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { got.Store(true) }})
	resp, err := d.client.Do(req.Clone(tctx))
	if err != nil {
		cancel(nil)
		s.Class = load.Classify(err)
		if !got.Load() && errors.Is(ctx.Err(), context.Canceled) {
			s.Unsent = load.DropCanceled
		}
		return nil, fmt.Errorf("sse connect to %s: %w", d.o.URL, err)
	}
	d.rec.Add("streams_opened", 1)
	s.Status = resp.StatusCode
	if resp.StatusCode != http.StatusOK {
		_ = resp.Body.Close()
		cancel(nil)
		s.Class = load.StatusClass(resp.StatusCode)
		if s.Class == load.ClassNone {
			s.Class = load.ClassProtocol
		}
		return nil, load.StatusError{Code: resp.StatusCode}
	}
	return &stream{key: key, resp: resp, r: &reader{br: bufio.NewReaderSize(resp.Body, 4096), keepData: len(d.event) > 0}, ctx: sctx, cancel: cancel, opened: opened}, nil
}

// watch ends st's request, which interrupts a blocked read, when the
// session's deadline (ctx) passes or, with a ReadTimeout, when the read
// window closes or the run (parent) is canceled: the window ends the
// session quietly, and the rest of Timeout is not applied to the stream.
// The returned func stops watching and reports whether nothing fired.
func (d *Driver) watch(ctx, parent context.Context, st *stream) func() bool {
	if d.o.ReadTimeout <= 0 {
		return context.AfterFunc(ctx, func() { st.cancel(context.Cause(ctx)) })
	}
	stop := context.AfterFunc(parent, func() { st.cancel(context.Cause(parent)) })
	window := time.AfterFunc(d.o.ReadTimeout, func() { st.cancel(errReadWindow) })
	return func() bool {
		a, b := stop(), window.Stop()
		return a && b
	}
}

// DoSample runs one session and reports its status, bytes and error class
// in s. A status other than 200 fails the session. The session reads on the
// stream a previous session with the same request left open, if there is
// one (a stream found closed before its first event is replaced once), or
// opens one.
func (d *Driver) DoSample(ctx context.Context, s *load.Sample) error {
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, d.o.Timeout)
	defer cancel()
	req, key, err := d.request(ctx, s)
	if err != nil {
		return err
	}
	st := d.streams.get(key)
	reused := st != nil
	if st == nil {
		if st, err = d.open(ctx, req, key, s); err != nil {
			return err
		}
	}
	s.Status = st.resp.StatusCode
	checkErr := d.checkSession(st)
	keep := false
	defer func() {
		if !keep {
			st.close()
		}
	}()
	watching := d.watch(ctx, parent, st)
	var last time.Time
	events := 0
	for events < d.o.MaxEvents {
		err := st.r.next()
		s.BytesIn += st.r.n
		d.rec.Add("bytes_received", st.r.n)
		st.r.n = 0
		if err != nil {
			switch {
			case context.Cause(st.ctx) == errReadWindow && parent.Err() == nil:
				d.end(events)
				return checked(s, checkErr)
			case reused && events == 0 && parent.Err() == nil && ctx.Err() == nil:
				// The kept stream was closed meanwhile (the server ended
				// it, or a proxy timed it out): open a new one, once.
				watching()
				st.close()
				reused = false
				if st, err = d.open(ctx, req, key, s); err != nil {
					keep = true // nothing left to close
					return err
				}
				watching = d.watch(ctx, parent, st)
				continue
			case errors.Is(err, io.EOF) && events > 0:
				d.end(events) // the server ended the stream after sending events
				return checked(s, checkErr)
			case errors.Is(err, io.EOF):
				s.Class = load.ClassProtocol
				return fmt.Errorf("sse stream %s ended before its first event", d.o.URL)
			case errors.Is(err, errLineTooLong):
				s.Class = load.ClassProtocol
				return err
			}
			s.Class = load.Classify(err)
			if parent.Err() == nil && ctx.Err() != nil {
				s.Class = load.ClassTimeout
			}
			return fmt.Errorf("sse read from %s after %d events: %w", d.o.URL, events, err)
		}
		if err := d.counted(st, events, &last); err != nil && checkErr == nil {
			checkErr = err
		}
		events++
	}
	d.end(events)
	if watching() && parent.Err() == nil {
		keep = true
		d.streams.put(st)
	}
	return checked(s, checkErr)
}

// checkSession runs the status and header checks on st's response.
func (d *Driver) checkSession(st *stream) error {
	if len(d.session) == 0 {
		return nil
	}
	return d.session.Run(&check.Response{Status: st.resp.StatusCode, Header: st.resp.Header})
}

// counted records an event just read on st, the session's events-th:
// its timing (from the stream's opening, or from the session's last
// event) and its count, and returns its failed check, if any.
func (d *Driver) counted(st *stream, events int, last *time.Time) error {
	now := time.Now()
	switch {
	case st.events == 0:
		d.rec.Time("first_event", now.Sub(st.opened))
	case events > 0:
		d.rec.Time("event_gap", now.Sub(*last))
	}
	*last = now
	st.events++
	d.rec.Add("events", 1)
	if len(d.event) == 0 {
		return nil
	}
	return d.event.Run(&check.Response{Status: st.resp.StatusCode, Body: st.r.data})
}

// checked returns a session's error when it ended well: nil, or the first
// failed check's, with class check.
func checked(s *load.Sample, checkErr error) error {
	if checkErr != nil {
		s.Class = load.ClassCheck
	}
	return checkErr
}

func (d *Driver) end(events int) {
	if events == 0 {
		d.rec.Add("sessions_without_events", 1)
	}
}

var errLineTooLong = fmt.Errorf("sse line longer than %d bytes", MaxLine)

// reader splits an event stream into events.
type reader struct {
	br   *bufio.Reader
	line []byte
	n    int64 // bytes read since the last reset
	// keepData makes next collect the event's data into data: its data
	// fields' values joined by newlines.
	keepData bool
	data     []byte
}

// next reads up to the end of the next event: a blank line after at least
// one data, event or id field. Comments and unknown fields are skipped.
func (r *reader) next() error {
	seen := false
	r.data = r.data[:0]
	lines := 0
	for {
		line, err := r.readLine()
		if err != nil {
			return err
		}
		if len(line) == 0 {
			if seen {
				return nil
			}
			continue
		}
		if line[0] == ':' {
			continue
		}
		field := line
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field = line[:i]
		}
		switch string(field) {
		case "data":
			seen = true
			if r.keepData {
				r.addData(line[len(field):], lines)
				lines++
			}
		case "event", "id":
			seen = true
		}
	}
}

// addData adds the value of a data field (rest is the line after the
// field name) to r.data, after a newline unless it is the event's first.
func (r *reader) addData(rest []byte, lines int) {
	if lines > 0 {
		r.data = append(r.data, '\n')
	}
	rest = bytes.TrimPrefix(rest, []byte(":"))
	rest = bytes.TrimPrefix(rest, []byte(" "))
	r.data = append(r.data, rest...)
}

// readLine returns the next line without its CR, LF or CRLF ending.
func (r *reader) readLine() ([]byte, error) {
	r.line = r.line[:0]
	for {
		chunk, err := r.br.ReadSlice('\n')
		r.n += int64(len(chunk))
		r.line = append(r.line, chunk...)
		if len(r.line) > MaxLine {
			return nil, errLineTooLong
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			return nil, err
		}
		return bytes.TrimRight(r.line, "\r\n"), nil
	}
}
