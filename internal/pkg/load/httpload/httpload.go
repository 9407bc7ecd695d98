package httpload

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/forgeload/forgeload/internal/pkg/load"
	"github.com/forgeload/forgeload/internal/pkg/load/check"
	"github.com/forgeload/forgeload/internal/pkg/load/extract"
	"github.com/forgeload/forgeload/internal/pkg/load/vars"
	"github.com/forgeload/forgeload/internal/pkg/redact"
)

// Defaults used where an [Options] field is zero.
const (
	// DefaultTimeout is the per-request timeout.
	DefaultTimeout = 30 * time.Second
	// DefaultConnections is the number of keep-alive connections kept per
	// host; set it to the run's concurrency.
	DefaultConnections = 100
	// DefaultDialTimeout bounds connection set-up (TCP and TLS).
	DefaultDialTimeout = 10 * time.Second
)

// Protocol selects the HTTP versions the driver may use. The zero value is
// Auto.
type Protocol uint8

// The protocol choices.
const (
	// Auto uses HTTP/1.1 for http:// targets and negotiates HTTP/2 by ALPN
	// for https:// targets.
	Auto Protocol = iota
	// HTTP1 uses HTTP/1.1 only.
	HTTP1
	// H2C uses cleartext HTTP/2 with prior knowledge for http:// targets
	// (and HTTP/2 over TLS for https://).
	H2C
)

// Endpoint is one request the driver can send.
type Endpoint struct {
	// Name labels the endpoint in results; default "METHOD path".
	Name string
	// URL is the absolute http:// or https:// URL. Required.
	URL string
	// Method is the HTTP method; default GET, or POST when Body is set.
	Method string
	// Headers are sent with every request; a "Host" entry sets the Host.
	Headers map[string]string
	// Body is the request body (the caller reads body_file into it).
	Body []byte
	// Weight is the endpoint's share of requests relative to the others;
	// 0 means 1.
	Weight int
	// Extractors take values from this endpoint's responses into the
	// virtual user's variables (Options.Vars). Such an endpoint is sent
	// through net/http, which keeps the body for them.
	Extractors []*extract.Extractor
	// Checks run on every response of this endpoint (package check); a
	// response that fails one is a failed request of class check. Checks
	// of the status alone keep the allocation-free HTTP/1.1 path; an
	// endpoint whose checks read the body or a header is sent through
	// net/http, which keeps them.
	Checks check.List
}

// Options configures a [Driver]. Only Endpoints is required.
type Options struct {
	// Endpoints are the requests to send, chosen at random by weight.
	Endpoints []Endpoint
	// Timeout bounds each request, body included. Default DefaultTimeout.
	Timeout time.Duration
	// Connections is the number of keep-alive connections kept per host.
	// Default DefaultConnections.
	Connections int
	// Protocol selects HTTP/1.1, HTTP/2 or h2c. Default Auto.
	Protocol Protocol
	// InsecureSkipVerify disables TLS certificate verification.
	InsecureSkipVerify bool
	// TLSConfig, if set, is used for https targets (cloned).
	TLSConfig *tls.Config
	// DialControl is called with the resolved address of every connection
	// before it is made (net.Dialer.Control); an error refuses the
	// connection. The runner enforces its target policy here.
	DialControl func(network, address string, c syscall.RawConn) error
	// Resolver resolves target host names at dial time; nil uses the
	// system resolver. Tests use it to change a DNS answer between the
	// runner's pre-flight policy check and the dial.
	Resolver *net.Resolver
	// DisableKeepAlives opens a new connection for every request.
	DisableKeepAlives bool
	// Vars gives each request its feeder row and the virtual user's
	// variables, which fill the endpoints' {{placeholders}}. Nil renders
	// placeholders with their defaults only. With a feed, every request
	// takes a row, templated or not.
	Vars *vars.Source
	// NetHTTP sends http:// requests through net/http too. By default
	// plain-HTTP/1.1 targets use the driver's own allocation-free client,
	// which generates several times the load per core; https://, h2c and
	// DisableKeepAlives always use net/http.
	NetHTTP bool
	// CheckMaxBody bounds how much of a body the endpoints' checks read;
	// the rest is read and counted, not kept. 0 means
	// check.DefaultMaxBody.
	CheckMaxBody int64
}

// Driver sends HTTP requests for the load engine. It is safe for concurrent
// use; create it with [New] and release its connections with Close.
type Driver struct {
	client    *http.Client
	transport *http.Transport
	eps       []endpoint
	cum       []int // cumulative weights
	total     int
	timeout   time.Duration
	h1        *h1Client // nil: every request goes through net/http
	vars      *vars.Source
	perUser   bool // some request needs Vars
	checkMax  int64
}

type endpoint struct {
	name   string
	tmpl   *http.Request
	body   []byte
	reqLen int64 // approximate bytes on the wire per request
	h1     h1Request
	fast   bool     // sent by the HTTP/1.1 fast path
	dyn    *dynamic // non-nil when the request has placeholders
	// hostHeader is the Host the fast path sends.
	hostHeader string
	extractors []*extract.Extractor
	checks     check.List
	// keepBody: the response body is read into a buffer for extractors
	// or checks.
	keepBody bool
}

var _ load.Requester = (*Driver)(nil)

// New validates o and returns a Driver. Errors name the endpoint and field.
func New(o Options) (*Driver, error) {
	if len(o.Endpoints) == 0 {
		return nil, errors.New("http driver: no endpoints: set target (or endpoints) in the load config")
	}
	d := &Driver{timeout: o.Timeout, vars: o.Vars, perUser: o.Vars.PerRequest(), checkMax: o.CheckMaxBody}
	if d.timeout <= 0 {
		d.timeout = DefaultTimeout
	}
	if d.checkMax <= 0 {
		d.checkMax = check.DefaultMaxBody
	}
	for i, e := range o.Endpoints {
		ep, err := newEndpoint(i, e, o.Vars.Headers(), o.Vars != nil && o.Vars.Auth != nil)
		if err != nil {
			return nil, err
		}
		if e.Weight < 0 {
			return nil, fmt.Errorf("http driver: endpoint %d (%s): weight %d is negative: use a weight >= 1", i+1, ep.name, e.Weight)
		}
		d.perUser = d.perUser || ep.dyn != nil || len(ep.extractors) > 0
		d.total += max(e.Weight, 1)
		d.cum = append(d.cum, d.total)
		d.eps = append(d.eps, ep)
	}
	conns := o.Connections
	if conns <= 0 {
		conns = DefaultConnections
	}
	dialer := &net.Dialer{Timeout: DefaultDialTimeout, KeepAlive: 30 * time.Second, Control: o.DialControl, Resolver: o.Resolver}
	tlsConf := &tls.Config{InsecureSkipVerify: o.InsecureSkipVerify} //nolint:gosec // opt-in for self-signed targets
	if o.TLSConfig != nil {
		tlsConf = o.TLSConfig.Clone()
		tlsConf.InsecureSkipVerify = tlsConf.InsecureSkipVerify || o.InsecureSkipVerify
	}
	tr := &http.Transport{
		Proxy:               nil, // load goes straight to the target
		DialContext:         dialer.DialContext,
		TLSClientConfig:     tlsConf,
		TLSHandshakeTimeout: DefaultDialTimeout,
		MaxIdleConns:        0, // no global cap
		MaxIdleConnsPerHost: conns,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true, // measure the bytes the target sends
		DisableKeepAlives:   o.DisableKeepAlives,
		ForceAttemptHTTP2:   o.Protocol != HTTP1,
	}
	var p http.Protocols
	switch o.Protocol {
	case HTTP1:
		p.SetHTTP1(true)
		tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	case H2C:
		p.SetUnencryptedHTTP2(true)
		p.SetHTTP2(true)
	default:
		p.SetHTTP1(true)
		p.SetHTTP2(true)
	}
	tr.Protocols = &p
	d.transport = tr
	if !o.NetHTTP && !o.DisableKeepAlives && o.Protocol != H2C {
		d.h1 = &h1Client{dial: dialer.DialContext, pools: map[string]chan *h1Conn{}}
		for i := range d.eps {
			ep := &d.eps[i]
			if ep.tmpl.URL.Scheme != "http" || len(ep.extractors) > 0 || ep.checks.NeedsBody() || ep.checks.NeedsHeader() {
				continue
			}
			ep.fast = true
			ep.reqLen = int64(len(ep.h1.wire))
			if d.h1.pools[ep.h1.addr] == nil {
				d.h1.pools[ep.h1.addr] = make(chan *h1Conn, conns)
			}
		}
	}
	d.client = &http.Client{
		Transport: tr,
		// Redirects are reported as their 3xx status, not followed.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return d, nil
}

// newEndpoint builds endpoint i; perRequest is set when every request
// gets headers of its own (Authorization, traceparent), authed when the
// Authorization comes from Options.Vars.
func newEndpoint(i int, e Endpoint, perRequest, authed bool) (endpoint, error) {
	u, err := url.Parse(e.URL)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return endpoint{}, fmt.Errorf("http driver: endpoint %d: url %q is not an absolute http:// or https:// URL", i+1, redact.URL(e.URL))
	}
	if u.User != nil {
		// user:pass@ in the URL is Basic auth, as browsers and curl send
		// it; the credentials leave the URL so they appear nowhere else.
		pw, _ := u.User.Password()
		cred := base64.StdEncoding.EncodeToString([]byte(u.User.Username() + ":" + pw))
		u.User = nil
		e.URL = stripUserinfo(e.URL)
		e.Headers = maps.Clone(e.Headers)
		if e.Headers == nil {
			e.Headers = map[string]string{}
		}
		if !hasHeader(e.Headers, "Authorization") {
			e.Headers["Authorization"] = "Basic " + cred
		}
	}
	if authed {
		// The Authorization header comes from Options.Auth per request.
		e.Headers = maps.Clone(e.Headers)
		for k := range e.Headers {
			if strings.EqualFold(k, "Authorization") {
				delete(e.Headers, k)
			}
		}
	}
	method := strings.ToUpper(e.Method)
	if method == "" {
		method = http.MethodGet
		if len(e.Body) > 0 {
			method = http.MethodPost
		}
	}
	name := e.Name
	if name == "" {
		name = method + " " + u.EscapedPath()
		if u.EscapedPath() == "" {
			name += "/"
		}
	}
	req, err := http.NewRequest(method, u.String(), nil)
	if err != nil {
		return endpoint{}, fmt.Errorf("http driver: endpoint %d (%s): method %q: %w", i+1, name, method, err)
	}
	n := int64(len(method) + len(u.RequestURI()) + len(" HTTP/1.1\r\nHost: \r\n\r\n") + len(u.Host))
	for k, v := range e.Headers {
		if strings.EqualFold(k, "Host") {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
		n += int64(len(k) + len(v) + 4)
	}
	if len(e.Body) > 0 {
		req.ContentLength = int64(len(e.Body))
	}
	hostHeader := req.Host
	if hostHeader == "" {
		hostHeader = u.Host
	}
	return endpoint{name: name, tmpl: req, body: e.Body, reqLen: n + int64(len(e.Body)),
		h1: newH1Request(u, method, req.Host, e.Headers, e.Body), dyn: newDynamic(e, method, req.Host, perRequest), hostHeader: hostHeader,
		extractors: e.Extractors, checks: e.Checks, keepBody: len(e.Extractors) > 0 || e.Checks.NeedsBody()}, nil
}

// hasHeader reports whether h has the header name, in any case.
func hasHeader(h map[string]string, name string) bool {
	for k := range h {
		if strings.EqualFold(k, name) {
			return true
		}
	}
	return false
}

// stripUserinfo removes user:pass@ from raw, leaving the rest (and any
// placeholders) as written.
func stripUserinfo(raw string) string {
	scheme, rest, _ := strings.Cut(raw, "://")
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	if at := strings.LastIndex(rest[:end], "@"); at >= 0 {
		rest = rest[at+1:]
	}
	return scheme + "://" + rest
}

// Names returns the endpoint names in order, for load.Options.Endpoints.
func (d *Driver) Names() []string {
	names := make([]string, len(d.eps))
	for i, e := range d.eps {
		names[i] = e.name
	}
	return names
}

// Close closes idle connections.
func (d *Driver) Close() {
	d.transport.CloseIdleConnections()
	if d.h1 != nil {
		d.h1.closeIdle()
	}
}

// Warm opens up to n keep-alive connections to each plain-HTTP host before
// a run, so the first arrivals do not each pay for a TCP handshake and the
// schedule starts without a catch-up burst. It is best effort: the error
// (the first failed dial, e.g. a target that is down or refused by
// DialControl) is for the caller to log or ignore; the run then dials as
// it goes. It does nothing for https and h2c targets.
func (d *Driver) Warm(ctx context.Context, n int) error {
	if d.h1 == nil {
		return nil
	}
	return d.h1.warm(ctx, n)
}

// Do sends one request and returns its error.
func (d *Driver) Do(ctx context.Context) error {
	var s load.Sample
	return d.DoSample(ctx, &s)
}

// isDialError reports whether err happened before any connection existed,
// so no byte of the request was sent.
func isDialError(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// DoSample sends one request to an endpoint chosen by weight and reports it
// in s: BytesIn counts the response body, BytesOut the request as written
// (estimated for requests sent through net/http). A status >= 400 is
// returned as a load.StatusError.
func (d *Driver) DoSample(ctx context.Context, s *load.Sample) error {
	i := 0
	if s.Attempts > 1 && s.Endpoint >= 0 && s.Endpoint < len(d.eps) {
		i = s.Endpoint // a retry repeats the same endpoint
	} else if len(d.eps) > 1 {
		n := rand.IntN(d.total)
		for d.cum[i] <= n {
			i++
		}
	}
	return d.DoEndpoint(ctx, s, i)
}

// DoEndpoint sends one request to endpoint i (an index into [Driver.Names])
// and reports it in s, as [Driver.DoSample] does; it is for a caller that
// picks the endpoint itself (a mixed-protocol run, which picks among the
// endpoints of every protocol). i must be in range.
func (d *Driver) DoEndpoint(ctx context.Context, s *load.Sample, i int) error {
	ep := &d.eps[i]
	s.Endpoint = i
	var u *vars.User
	if d.perUser {
		var err error
		if u, err = d.vars.Begin(ctx, s); err != nil {
			return err
		}
		if ep.dyn != nil {
			return d.doDynamic(ctx, ep, u, s)
		}
	}
	if ep.fast {
		s.BytesOut = 0 // the fast client counts what it writes
		return statusChecks(ep.checks, s, d.h1.do(ctx, &ep.h1, d.timeout, s))
	}
	ctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	req := ep.tmpl.WithContext(ctx)
	if len(ep.body) > 0 {
		req.Body = io.NopCloser(bytes.NewReader(ep.body))
	}
	return d.send(req, ep, ep.reqLen, s, u)
}

// statusChecks runs checks, which read the status alone, on a response of
// the fast path that returned err, and returns the request's error: err,
// or when only a check failed, the check's error with class check.
func statusChecks(checks check.List, s *load.Sample, err error) error {
	if len(checks) == 0 || s.Status == 0 {
		return err // no checks, or no response to check; inlined, so free
	}
	return runStatusChecks(checks, s, err)
}

func runStatusChecks(checks check.List, s *load.Sample, err error) error {
	if err != nil && s.Class != load.ClassHTTP4xx && s.Class != load.ClassHTTP5xx {
		return err // the response did not arrive whole, as on the net/http path
	}
	cerr := checks.Run(&check.Response{Status: s.Status})
	if err == nil && cerr != nil {
		s.Class = load.ClassCheck
		return cerr
	}
	return err
}

// bodyBuf holds a response body for extractors and checks, with the
// limited reader that fills it (pooled too, so reading allocates nothing).
type bodyBuf struct {
	buf bytes.Buffer
	lr  io.LimitedReader
}

// bodyBufs hold bodyBufs.
var bodyBufs = sync.Pool{New: func() any { return new(bodyBuf) }}

// send sends req through net/http and reads the response; reqLen is the
// request's approximate size on the wire. The endpoint's extractors store
// what they find in u.
func (d *Driver) send(req *http.Request, ep *endpoint, reqLen int64, s *load.Sample, u *vars.User) error {
	// net/http does not say whether a failed request got as far as a
	// connection: a trace does (GotConn runs before the request is
	// written, and before Do returns), so that a request cancelled while
	// it waited for a connection is not counted as sent. This path
	// allocates per request anyway; the fast path needs no trace.
	wrote := new(atomic.Bool)
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
		GotConn: func(httptrace.GotConnInfo) { wrote.Store(true) },
	}))
	resp, err := d.client.Do(req)
	if err != nil {
		s.Class = load.Classify(err)
		if !wrote.Load() && req.Context().Err() != nil && !errors.Is(req.Context().Err(), context.DeadlineExceeded) {
			s.Unsent = load.DropCanceled // the run stopped before a byte left
			return err
		}
		if !isDialError(err) {
			s.BytesOut = reqLen // written, or at least attempted on a connection
		}
		return err
	}
	s.BytesOut = reqLen
	var (
		n    int64
		cerr error
	)
	if ep.keepBody {
		n, cerr, err = d.readBody(resp, ep, u)
	} else {
		n, err = io.Copy(io.Discard, resp.Body)
		if err == nil && len(ep.checks) > 0 {
			cerr = ep.checks.Run(&check.Response{Status: resp.StatusCode, Header: resp.Header})
		}
	}
	_ = resp.Body.Close()
	s.Status = resp.StatusCode
	s.BytesIn = n
	if err != nil {
		s.Class = load.Classify(err)
		if s.Class == load.ClassOther {
			s.Class = load.ClassProtocol
		}
		return fmt.Errorf("read response body of %s: %w", ep.name, err)
	}
	if resp.StatusCode >= 400 {
		s.Class = load.StatusClass(resp.StatusCode)
		return load.StatusError{Code: resp.StatusCode}
	}
	if cerr != nil {
		s.Class = load.ClassCheck
		return cerr
	}
	return nil
}

// readBody reads resp's body into a pooled buffer, up to what the
// endpoint's extractors (extract.MaxBody) and checks (d.checkMax) read,
// discarding the rest, and runs them. It returns the body's length, the
// first failed check's error, and the read error (after which neither
// runs).
func (d *Driver) readBody(resp *http.Response, ep *endpoint, u *vars.User) (n int64, cerr, err error) {
	limit := int64(extract.MaxBody)
	if ep.checks.NeedsBody() {
		limit = d.checkMax
	}
	bb := bodyBufs.Get().(*bodyBuf)
	defer func() {
		bb.lr.R = nil // do not keep the response alive in the pool
		bodyBufs.Put(bb)
	}()
	bb.buf.Reset()
	bb.lr = io.LimitedReader{R: resp.Body, N: limit}
	n, err = bb.buf.ReadFrom(&bb.lr)
	if err != nil {
		return n, nil, err
	}
	rest, err := io.Copy(io.Discard, resp.Body)
	n += rest
	if err != nil {
		return n, nil, err
	}
	body := bb.buf.Bytes()
	if len(ep.extractors) > 0 && u != nil {
		extract.Apply(ep.extractors, resp.StatusCode, body[:min(len(body), extract.MaxBody)], u)
	}
	if len(ep.checks) > 0 {
		cerr = ep.checks.Run(&check.Response{Status: resp.StatusCode, Header: resp.Header, Body: body})
	}
	return n, cerr, nil
}
