package wsload

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/coder/websocket"

	"github.com/forgeload/forgeload/internal/pkg/load"
	"github.com/forgeload/forgeload/internal/pkg/load/check"
	"github.com/forgeload/forgeload/internal/pkg/load/vars"
)

// Defaults used where an [Options] field is zero.
const (
	// DefaultTimeout bounds one session, handshake included.
	DefaultTimeout = 30 * time.Second
	// DefaultHandshakeTimeout bounds the opening handshake, as in Crankfire.
	DefaultHandshakeTimeout = 30 * time.Second
	// DefaultConnections is the pool size.
	DefaultConnections = 100
	// MaxMessageSize is the largest message the driver reads (1 MiB).
	MaxMessageSize = 1 << 20
	dialTimeout    = 10 * time.Second
)

// Options configures a [Driver]. Only URL is required.
type Options struct {
	// URL is the ws:// or wss:// URL. Required.
	URL string
	// Headers are sent with the opening handshake.
	Headers map[string]string
	// Messages are sent in order, as text messages, in every session. With
	// none, a session is a connect (and a receive when ReceiveTimeout is
	// set).
	Messages []string
	// MessageInterval is the pause between two messages of a session.
	MessageInterval time.Duration
	// ExpectReplies makes every message wait for one reply, within
	// ReceiveTimeout (or the session's Timeout when it is zero); a missing
	// reply fails the session as a timeout. The wait is the message's round
	// trip.
	ExpectReplies bool
	// ReceiveTimeout, without ExpectReplies, is how long a session reads
	// whatever the server sends after the last message (Crankfire's
	// receive_timeout); reaching it is not an error, and the session's
	// connection is closed afterwards because an interrupted read leaves a
	// WebSocket unusable. Zero reads nothing.
	ReceiveTimeout time.Duration
	// HandshakeTimeout bounds the opening handshake. Default
	// DefaultHandshakeTimeout.
	HandshakeTimeout time.Duration
	// Timeout bounds a whole session. Default DefaultTimeout.
	Timeout time.Duration
	// Connections is how many idle connections the pool keeps. Default
	// DefaultConnections; set it to the run's concurrency.
	Connections int
	// InsecureSkipVerify disables certificate verification for wss://.
	InsecureSkipVerify bool
	// DialControl is called with the resolved address of every connection
	// before it is made; an error refuses it (the runner's target policy).
	DialControl func(network, address string, c syscall.RawConn) error
	// Resolver resolves host names at dial time; nil is the system one.
	Resolver *net.Resolver
	// CheckRedirect is called before the handshake follows a redirect (the
	// runner's target policy on the new URL; its scheme is already http or
	// https); an error fails the session. nil follows up to 10.
	CheckRedirect func(req *http.Request, via []*http.Request) error
	// Vars fills {{placeholders}} in URL, header values and messages with
	// the session's feeder row and the user's variables; nil renders
	// defaults only. A session whose URL or headers have placeholders
	// opens its own connection and closes it afterwards.
	Vars *vars.Source
	// Checks run on every message received (replies, and what the receive
	// window reads): body_contains, body_not_contains and json checks only
	// (New refuses the others). A session with a message that failed one
	// fails with class check, once it has ended as it would have.
	Checks check.List
}

// Driver runs WebSocket sessions for the load engine. It is safe for
// concurrent use; create it with [New] and release its connections with
// Close.
type Driver struct {
	o      Options
	msgs   [][]byte
	client *http.Client
	header http.Header
	pool   chan *websocket.Conn
	rec    *load.ProtocolRecorder
	// Templated parts; perUser is set when a session needs Vars, private
	// when its connection cannot be shared.
	url     *vars.Template
	headers map[string]*vars.Template
	tmsgs   []*vars.Template
	perUser bool
	private bool
}

var (
	_ load.Requester     = (*Driver)(nil)
	_ load.ProtocolMeter = (*Driver)(nil)
)

// New checks o and returns a Driver.
func New(o Options) (*Driver, error) {
	u, err := url.Parse(o.URL)
	if err != nil || u.Host == "" || (u.Scheme != "ws" && u.Scheme != "wss") {
		return nil, fmt.Errorf("websocket driver: target %q is not a ws:// or wss:// URL (want e.g. ws://127.0.0.1:8080/ws)", o.URL)
	}
	if err := o.Checks.Only("protocol websocket", check.BodyKinds...); err != nil {
		return nil, fmt.Errorf("websocket driver: %w", err)
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.HandshakeTimeout <= 0 {
		o.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if o.Connections <= 0 {
		o.Connections = DefaultConnections
	}
	d := &Driver{o: o, pool: make(chan *websocket.Conn, o.Connections), rec: load.NewProtocolRecorder("websocket"), header: http.Header{}}
	d.perUser = o.Vars.PerRequest()
	for _, m := range o.Messages {
		d.msgs = append(d.msgs, []byte(m))
		t := vars.Parse(m)
		d.tmsgs = append(d.tmsgs, t)
		d.perUser = d.perUser || !t.Static()
	}
	d.url = vars.Parse(o.URL)
	d.private = !d.url.Static()
	d.headers = map[string]*vars.Template{}
	for k, v := range o.Headers {
		d.header.Set(k, v)
		d.headers[k] = vars.Parse(v)
		d.private = d.private || !d.headers[k].Static()
	}
	d.perUser = d.perUser || d.private
	dialer := &net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second, Control: o.DialControl, Resolver: o.Resolver}
	d.client = &http.Client{Transport: &http.Transport{
		Proxy:             nil, // load goes straight to the target
		DialContext:       dialer.DialContext,
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: o.InsecureSkipVerify}, //nolint:gosec // opt-in for self-signed targets
		DisableKeepAlives: true,
	}, CheckRedirect: o.CheckRedirect}
	return d, nil
}

// Names returns the one endpoint name, for load.Options.Endpoints.
func (d *Driver) Names() []string { return []string{"websocket " + d.o.URL} }

// ProtocolStats returns the WebSocket measurements so far.
func (d *Driver) ProtocolStats() *load.ProtocolStats { return d.rec.Stats() }

// Close closes the pooled connections.
func (d *Driver) Close() {
	for {
		select {
		case c := <-d.pool:
			_ = c.CloseNow()
		default:
			return
		}
	}
}

// Do runs one session.
func (d *Driver) Do(ctx context.Context) error {
	var s load.Sample
	return d.DoSample(ctx, &s)
}

// errNoReply is the error of a session whose expected reply did not come.
var errNoReply = errors.New("no reply within the receive timeout")

// DoSample runs one session and reports its bytes, handshake status and
// error class in s.
func (d *Driver) DoSample(ctx context.Context, s *load.Sample) error {
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, d.o.Timeout)
	defer cancel()
	msgs, url, header, err := d.parts(ctx, s)
	if err != nil {
		return err
	}
	c, err := d.conn(ctx, s, url, header)
	if err != nil {
		return err
	}
	ss := session{d: d, c: c, parent: parent, ctx: ctx, keep: !d.private}
	defer d.record(&ss.tl)
	ss.watch()
	defer ss.end()
	for i, m := range msgs {
		sent, err := ss.send(s, i, m)
		if err != nil {
			return err
		}
		if d.o.ExpectReplies {
			if err := ss.awaitReply(s, i, sent); err != nil {
				return err
			}
		}
	}
	if !d.o.ExpectReplies && d.o.ReceiveTimeout > 0 {
		if err := ss.receive(s); err != nil {
			return err
		}
	}
	if ss.checkErr != nil {
		s.Class = load.ClassCheck
		return ss.checkErr
	}
	return nil
}

// parts returns a session's messages, URL and handshake header: the
// driver's own, or rendered with the session's variables.
func (d *Driver) parts(ctx context.Context, s *load.Sample) ([][]byte, string, http.Header, error) {
	msgs, url, header := d.msgs, d.o.URL, d.header
	if !d.perUser {
		return msgs, url, header, nil
	}
	u, err := d.o.Vars.Begin(ctx, s)
	if err != nil {
		return nil, "", nil, err
	}
	msgs = make([][]byte, len(d.tmsgs))
	for i, t := range d.tmsgs {
		msgs[i] = t.Append(nil, u)
	}
	if d.private {
		url = d.url.Render(u)
		header = http.Header{}
		for k, t := range d.headers {
			header.Set(k, t.Render(u))
		}
	}
	if u.Auth != "" || u.TraceParent != "" {
		// Used when this session dials; a pooled connection was
		// authenticated when it was opened.
		header = header.Clone()
		if u.Auth != "" {
			header.Set("Authorization", u.Auth)
		}
		if u.TraceParent != "" {
			header.Set("Traceparent", u.TraceParent)
		}
	}
	return msgs, url, header, nil
}

// session is one session's state, shared by the phases of DoSample; it
// lives on DoSample's stack. The sample is passed to each phase rather
// than kept here, so that it stays off the heap (the connection and
// contexts held here escape).
type session struct {
	d *Driver
	c *websocket.Conn
	// parent is the caller's context (its end is a cancel, not a timeout);
	// ctx is the session's, bounded by Options.Timeout; wctx is the
	// never-done context of writes (see watch).
	parent, ctx, wctx context.Context
	stopWatcher       func() bool
	watcherDone       chan struct{}
	// keep is whether the connection goes back to the pool at the end.
	keep bool
	tl   tally
	// checkErr is the first failed check of a message of the session.
	checkErr error
}

// check runs the driver's checks on a received message.
func (ss *session) check(b []byte) {
	if len(ss.d.o.Checks) == 0 {
		return
	}
	if err := ss.d.o.Checks.Run(&check.Response{Body: b}); err != nil && ss.checkErr == nil {
		ss.checkErr = err
	}
}

// watch starts the session's watcher and sets its write context.
//
// Writes get a context that is never done, so the WebSocket library
// arms no context watcher of its own for every frame (a measurable share
// of a short message's cost). Instead one watcher per session closes the
// connection when the session's context ends, which ends a write blocked
// on a peer that does not read; the write then fails and fail() reports
// the context's error, not the closed connection.
func (ss *session) watch() {
	ss.wctx = context.WithoutCancel(ss.ctx)
	c, done := ss.c, make(chan struct{})
	ss.watcherDone = done
	ss.stopWatcher = context.AfterFunc(ss.ctx, func() {
		defer close(done)
		_ = c.CloseNow()
	})
}

// end stops the watcher and pools the connection if the session left it
// usable, or closes it.
func (ss *session) end() {
	// Stop the watcher before the connection can go back to the pool
	// (and before DoSample's cancel, deferred first, ends ctx). If it has
	// already run, the connection is closed or closing: wait for it and
	// never pool it.
	if !ss.stopWatcher() {
		ss.keep = false
		<-ss.watcherDone
	}
	if ss.keep {
		select {
		case ss.d.pool <- ss.c:
			return
		default:
		}
	}
	_ = ss.c.CloseNow()
}

// fail classifies the error of the session's step what in s, counts a
// close by the server, and returns the session's error.
func (ss *session) fail(s *load.Sample, what string, err error) error {
	ss.keep = false
	if code := websocket.CloseStatus(err); code != -1 {
		ss.d.rec.Add("close_"+strconv.Itoa(int(code)), 1)
		s.Class = load.ClassNetwork // the server closed the session early
	} else {
		s.Class = load.Classify(err)
		if ss.parent.Err() == nil && ss.ctx.Err() != nil {
			s.Class = load.ClassTimeout
		}
	}
	return fmt.Errorf("websocket %s: %w", what, err)
}

// send waits out the message interval (before every message but the
// first), writes message i, and returns when it started writing.
func (ss *session) send(s *load.Sample, i int, m []byte) (time.Time, error) {
	if i > 0 && ss.d.o.MessageInterval > 0 {
		t := time.NewTimer(ss.d.o.MessageInterval)
		select {
		case <-ss.ctx.Done():
			t.Stop()
			return time.Time{}, ss.fail(s, "message interval", ss.ctx.Err())
		case <-t.C:
		}
	}
	sent := time.Now()
	if err := ss.c.Write(ss.wctx, websocket.MessageText, m); err != nil {
		if ss.ctx.Err() != nil {
			// The session's watcher closed the connection to end the write.
			err = fmt.Errorf("%w (the connection was closed to stop the write)", ss.ctx.Err())
		}
		return time.Time{}, ss.fail(s, "send message "+strconv.Itoa(i+1), err)
	}
	s.BytesOut += int64(len(m))
	ss.tl.sent++
	ss.tl.sentBytes += int64(len(m))
	return sent, nil
}

// awaitReply reads the reply to message i, sent at sent, within the
// receive timeout; a missing reply fails the session as a timeout.
func (ss *session) awaitReply(s *load.Sample, i int, sent time.Time) error {
	rctx := ss.ctx
	if ss.d.o.ReceiveTimeout > 0 {
		var rcancel context.CancelFunc
		rctx, rcancel = context.WithTimeout(ss.ctx, ss.d.o.ReceiveTimeout)
		defer rcancel()
	}
	_, b, err := ss.c.Read(rctx)
	if err != nil {
		if rctx.Err() != nil && ss.parent.Err() == nil {
			ss.keep = false
			s.Class = load.ClassTimeout
			ss.d.rec.Add("replies_missing", 1)
			return fmt.Errorf("websocket reply to message %d: %w", i+1, errNoReply)
		}
		return ss.fail(s, "read reply", err)
	}
	ss.d.rec.Time("message_rtt", time.Since(sent))
	ss.tl.received(s, len(b))
	ss.check(b)
	return nil
}

// receive reads whatever the server sends until the receive window ends,
// which is not an error, as in Crankfire.
func (ss *session) receive(s *load.Sample) error {
	ss.keep = false // a read stopped by its deadline leaves the connection unusable
	rctx, rcancel := context.WithTimeout(ss.ctx, ss.d.o.ReceiveTimeout)
	defer rcancel()
	for {
		_, b, err := ss.c.Read(rctx)
		if err != nil {
			if rctx.Err() != nil && ss.parent.Err() == nil {
				return nil // the receive window is over
			}
			return ss.fail(s, "receive", err)
		}
		ss.tl.received(s, len(b))
		ss.check(b)
	}
}

// tally counts a session's messages and bytes; the session records them
// once, at its end.
type tally struct{ sent, sentBytes, recv, recvBytes int64 }

func (tl *tally) received(s *load.Sample, n int) {
	s.BytesIn += int64(n)
	tl.recv++
	tl.recvBytes += int64(n)
}

func (d *Driver) record(tl *tally) {
	d.rec.AddCounts(load.Count{Name: "messages_sent", N: tl.sent}, load.Count{Name: "bytes_sent", N: tl.sentBytes},
		load.Count{Name: "messages_received", N: tl.recv}, load.Count{Name: "bytes_received", N: tl.recvBytes})
}

// conn returns a pooled connection or dials a new one.
func (d *Driver) conn(ctx context.Context, s *load.Sample, url string, header http.Header) (*websocket.Conn, error) {
	if !d.private {
		select {
		case c := <-d.pool:
			return c, nil
		default:
		}
	}
	hctx, cancel := context.WithTimeout(ctx, d.o.HandshakeTimeout)
	defer cancel()
	// Whether the handshake got as far as a connection: a session the run
	// cancelled before that never left (see load.Sample.Unsent).
	got := new(atomic.Bool)
	hctx = httptrace.WithClientTrace(hctx, &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { got.Store(true) }})
	start := time.Now()
	c, resp, err := websocket.Dial(hctx, url, &websocket.DialOptions{HTTPClient: d.client, HTTPHeader: header})
	if err != nil && !got.Load() && errors.Is(ctx.Err(), context.Canceled) {
		s.Unsent, s.Class = load.DropCanceled, load.ClassCanceled
		return nil, fmt.Errorf("websocket connect to %s: %w", d.o.URL, err)
	}
	if err != nil {
		d.rec.Add("connect_errors", 1)
		if resp != nil && resp.StatusCode != http.StatusSwitchingProtocols {
			s.Status = resp.StatusCode
			s.Class = load.StatusClass(resp.StatusCode)
			if s.Class == load.ClassNone {
				s.Class = load.ClassProtocol
			}
			return nil, fmt.Errorf("websocket handshake with %s: status %d: %w", d.o.URL, resp.StatusCode, err)
		}
		s.Class = load.Classify(err)
		if hctx.Err() != nil && ctx.Err() == nil {
			s.Class = load.ClassTimeout
		}
		return nil, fmt.Errorf("websocket connect to %s: %w", d.o.URL, err)
	}
	d.rec.Time("connect", time.Since(start))
	d.rec.Add("connections", 1)
	c.SetReadLimit(MaxMessageSize)
	return c, nil
}
