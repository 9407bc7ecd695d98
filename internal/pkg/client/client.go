package client

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"connectrpc.com/connect"
	pingv1 "gitea.dev/actions-proto-go/ping/v1"
	"gitea.dev/actions-proto-go/ping/v1/pingv1connect"
	runnerv1 "gitea.dev/actions-proto-go/runner/v1"
	"gitea.dev/actions-proto-go/runner/v1/runnerv1connect"

	"github.com/forgeload/forgeload/internal/pkg/redact"
)

// DefaultTimeout is the per-RPC timeout used when Options.Timeout is 0.
const DefaultTimeout = 60 * time.Second

// DefaultMaxResponseBytes bounds every forge answer the client reads
// (64 MiB), compressed or not, unless Options.MaxResponseBytes says
// otherwise. A FetchTask answer carries one job's workflow, its
// event payload, secrets and variables: Gitea's are kilobytes to a few
// megabytes. A larger answer fails its call with an error saying so
// (code resource_exhausted), so a misconfigured or hostile endpoint cannot
// make the daemon hold gigabytes.
const DefaultMaxResponseBytes = 64 << 20

// DefaultPingInterval is the wait between attempts of [Client.PingUntil]
// when its interval is 0 or less.
const DefaultPingInterval = 2 * time.Second

// Header names of the runner protocol.
const (
	// HeaderRunnerUUID carries the runner's uuid on authenticated calls.
	HeaderRunnerUUID = "x-runner-uuid"
	// HeaderRunnerToken carries the runner's secret token on authenticated calls.
	HeaderRunnerToken = "x-runner-token"
	// HeaderCapabilities is the Declare response header listing the forge's
	// capabilities, comma-separated (e.g. "job-summary").
	HeaderCapabilities = "X-Gitea-Actions-Capabilities"
)

// apiPath is where the forge mounts the Connect services.
const apiPath = "/api/actions"

// Options configures [New]. Only Address is required.
type Options struct {
	// Address is the forge instance URL, e.g. https://gitea.example.com.
	// A trailing "/" is removed and "/api/actions" appended.
	Address string
	// UUID and Token are the runner credentials from Register, sent on
	// every call except Ping and Register. Leave both empty to register.
	UUID, Token string
	// Insecure skips TLS certificate verification (runner.insecure).
	Insecure bool
	// Timeout bounds each RPC unless the caller's context has an earlier
	// deadline. 0 means DefaultTimeout.
	Timeout time.Duration
	// Version is sent as User-Agent: forgeload/<Version>; empty sends
	// "forgeload".
	Version string
	// MaxResponseBytes bounds each forge answer read. 0 means
	// DefaultMaxResponseBytes.
	MaxResponseBytes int
}

// Client talks to one forge. It is safe for concurrent use. Its RPC
// methods have exactly the signatures of the generated
// runnerv1connect.RunnerServiceClient and pingv1connect.PingServiceClient;
// errors are connect errors (use connect.CodeOf or [IsUnauthenticated])
// wrapped with the method and the forge address.
type Client struct {
	address   string // normalised, as given
	redacted  string // for error messages
	userAgent string
	timeout   time.Duration
	hc        *http.Client
	runner    runnerv1connect.RunnerServiceClient
	ping      pingv1connect.PingServiceClient
	single    *connect.Client[FetchSingleTaskRequest, FetchSingleTaskResponse]

	keyMu sync.Mutex // held for a whole FetchTask or FetchSingleTask call
	key   string     // x-runner-request-key of the next fetch; "" = make one
}

var (
	_ runnerv1connect.RunnerServiceClient = (*Client)(nil)
	_ pingv1connect.PingServiceClient     = (*Client)(nil)
)

// New validates o and builds a Client. It does not contact the forge.
func New(o Options) (*Client, error) {
	addr := strings.TrimRight(strings.TrimSpace(o.Address), "/")
	if addr == "" {
		return nil, errors.New("forge client: address is empty: set the forge instance URL, e.g. https://gitea.example.com")
	}
	u, err := url.Parse(addr)
	if err != nil {
		return nil, fmt.Errorf("forge client: parse address %q: %w: use a URL such as https://gitea.example.com", redact.URL(addr), redact.Error(err, addr))
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("forge client: address %q: scheme must be http or https, e.g. https://gitea.example.com", redact.URL(addr))
	}
	if u.Host == "" {
		return nil, fmt.Errorf("forge client: address %q has no host: use a URL such as https://gitea.example.com", redact.URL(addr))
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("forge client: address %q: remove the query or fragment", redact.URL(addr))
	}
	if o.Timeout < 0 {
		return nil, fmt.Errorf("forge client: timeout %s is negative: use 0 for the default %s or a positive duration", o.Timeout, DefaultTimeout)
	}
	if (o.UUID == "") != (o.Token == "") {
		return nil, errors.New("forge client: runner uuid and token must be set together: register the runner again to get both")
	}
	timeout := o.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	maxBytes := o.MaxResponseBytes
	if maxBytes <= 0 {
		maxBytes = DefaultMaxResponseBytes
	}
	ua := "forgeload"
	if o.Version != "" {
		ua += "/" + o.Version
	}

	tr := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          16,
		MaxIdleConnsPerHost:   16,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		TLSClientConfig: &tls.Config{
			MinVersion:         tls.VersionTLS12,
			InsecureSkipVerify: o.Insecure, //nolint:gosec // runner.insecure is an explicit admin choice
		},
	}
	c := &Client{address: addr, redacted: redact.URL(addr), hc: &http.Client{Transport: tr}, userAgent: ua, timeout: timeout}
	opts := connect.WithClientOptions(connect.WithInterceptors(interceptor(ua, o.UUID, o.Token, timeout, c.redacted, maxBytes)),
		connect.WithReadMaxBytes(maxBytes))
	c.runner = runnerv1connect.NewRunnerServiceClient(c.hc, addr+apiPath, opts)
	c.ping = pingv1connect.NewPingServiceClient(c.hc, addr+apiPath, opts)
	c.single = connect.NewClient[FetchSingleTaskRequest, FetchSingleTaskResponse](c.hc, addr+apiPath+FetchSingleTaskProcedure, opts, connect.WithCodec(singleCodec{}))
	return c, nil
}

// interceptor sets the headers and the per-RPC timeout, and wraps errors
// with the method and address. The token is never put in an error.
func interceptor(ua, uuid, token string, timeout time.Duration, addr string, maxBytes int) connect.UnaryInterceptorFunc {
	return func(next connect.UnaryFunc) connect.UnaryFunc {
		return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
			proc := req.Spec().Procedure
			req.Header().Set("User-Agent", ua)
			if proc != runnerv1connect.RunnerServiceRegisterProcedure && proc != pingv1connect.PingServicePingProcedure && uuid != "" {
				req.Header().Set(HeaderRunnerUUID, uuid)
				req.Header().Set(HeaderRunnerToken, token)
			}
			ctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			res, err := next(ctx, req)
			if err != nil {
				method := proc[strings.LastIndexByte(proc, '/')+1:]
				if tooLarge(err) {
					return nil, fmt.Errorf("forge %s at %s: the answer is larger than the %s this runner reads from a forge: check that the runner's address is the forge's own (not a proxy or another service); %w",
						method, addr, sizeText(maxBytes), err)
				}
				return nil, fmt.Errorf("forge %s at %s: %w", method, addr, err)
			}
			return res, nil
		}
	}
}

// sizeText is n bytes in MiB, or in bytes below 1 MiB.
func sizeText(n int) string {
	if n >= 1<<20 {
		return strconv.Itoa(n>>20) + " MiB"
	}
	return strconv.Itoa(n) + " bytes"
}

// tooLarge reports whether err is connect's refusal of an answer above
// the read limit (rather than a forge's own resource_exhausted).
func tooLarge(err error) bool {
	return connect.CodeOf(err) == connect.CodeResourceExhausted && strings.Contains(err.Error(), "larger than configured max")
}

// Address returns the forge instance URL without the trailing "/".
func (c *Client) Address() string { return c.address }

// CloseIdleConnections closes idle keep-alive connections, e.g. at
// shutdown. The Client stays usable.
func (c *Client) CloseIdleConnections() { c.hc.CloseIdleConnections() }

// Ping calls ping.v1.PingService/Ping; it needs no credentials.
func (c *Client) Ping(ctx context.Context, req *connect.Request[pingv1.PingRequest]) (*connect.Response[pingv1.PingResponse], error) {
	return c.ping.Ping(ctx, req)
}

// Register calls RunnerService/Register with a registration token in the
// request; it sends no runner credentials.
func (c *Client) Register(ctx context.Context, req *connect.Request[runnerv1.RegisterRequest]) (*connect.Response[runnerv1.RegisterResponse], error) {
	return c.runner.Register(ctx, req)
}

// Declare calls RunnerService/Declare. The forge's capabilities are in the
// response header [HeaderCapabilities].
func (c *Client) Declare(ctx context.Context, req *connect.Request[runnerv1.DeclareRequest]) (*connect.Response[runnerv1.DeclareResponse], error) {
	return c.runner.Declare(ctx, req)
}

// FetchTask calls RunnerService/FetchTask with the request key header
// ([HeaderRequestKey]).
func (c *Client) FetchTask(ctx context.Context, req *connect.Request[runnerv1.FetchTaskRequest]) (*connect.Response[runnerv1.FetchTaskResponse], error) {
	return withRequestKey(c, req.Header(), func() (*connect.Response[runnerv1.FetchTaskResponse], error) {
		return c.runner.FetchTask(ctx, req)
	})
}

// UpdateTask calls RunnerService/UpdateTask.
func (c *Client) UpdateTask(ctx context.Context, req *connect.Request[runnerv1.UpdateTaskRequest]) (*connect.Response[runnerv1.UpdateTaskResponse], error) {
	return c.runner.UpdateTask(ctx, req)
}

// UpdateLog calls RunnerService/UpdateLog.
func (c *Client) UpdateLog(ctx context.Context, req *connect.Request[runnerv1.UpdateLogRequest]) (*connect.Response[runnerv1.UpdateLogResponse], error) {
	return c.runner.UpdateLog(ctx, req)
}

// PingUntil pings the forge with data name until it answers, ctx ends, or
// an attempt fails in a way retrying cannot mend (see [Retryable]); it
// waits every between attempts (DefaultPingInterval when every <= 0). If
// retrying is not nil, it is called with the error of the first attempt
// that will be retried, so that the caller can say at once what it waits
// for. On failure the error names the address and the last failure, and
// wraps both it and, when ctx ended, ctx.Err().
func (c *Client) PingUntil(ctx context.Context, name string, every time.Duration, retrying func(error)) error {
	if every <= 0 {
		every = DefaultPingInterval
	}
	var last error
	for attempt := 1; ; attempt++ {
		_, err := c.Ping(ctx, connect.NewRequest(&pingv1.PingRequest{Data: name}))
		if err == nil {
			return nil
		}
		if last == nil || ctx.Err() == nil {
			last = err // keep the real cause rather than the final ctx expiry
		}
		if ctx.Err() == nil && !Retryable(err) {
			return fmt.Errorf("ping forge at %s: %w", c.redacted, err)
		}
		if attempt == 1 && retrying != nil && ctx.Err() == nil {
			retrying(err)
		}
		t := time.NewTimer(every)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("ping forge at %s: no answer after %d attempts: %w; last failure: %w", c.redacted, attempt, ctx.Err(), last)
		case <-t.C:
		}
	}
}

// Retryable reports whether a failed call may succeed if tried again: the
// forge did not answer (connection refused or reset, a timeout, a name
// server that did not answer) or answered that it is overloaded or not up
// yet (HTTP 429, 502, 503, 504). It is false when retrying cannot help: the
// host name does not exist, the TLS handshake or certificate was refused,
// or the server answered, but not as a forge does (for instance HTTP 404 for
// a mistyped URL, or a Gitea with Actions disabled).
func Retryable(err error) bool {
	if err == nil {
		return false
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return !dnsErr.IsNotFound
	}
	var certErr *tls.CertificateVerificationError
	var recErr tls.RecordHeaderError
	var alert tls.AlertError
	if errors.As(err, &certErr) || errors.As(err, &recErr) || errors.As(err, &alert) {
		return false
	}
	// A connection the forge (or a proxy in front of it) reset, as when it
	// restarts: connect calls a reset "canceled" though nobody cancelled,
	// so this is decided before the code. (Socket errors only: a kept
	// report's damaged file must not pass for an outage.)
	if errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNABORTED) || errors.Is(err, syscall.EPIPE) {
		return true
	}
	switch connect.CodeOf(err) {
	case connect.CodeUnavailable, connect.CodeDeadlineExceeded, connect.CodeResourceExhausted, connect.CodeAborted:
		return true
	}
	return false
}

// grpcUnauthenticated starts the message of the error Gitea answers an
// unknown or deleted runner with: its interceptor returns a gRPC status
// error, which connect does not recognise and sends as HTTP 500 with code
// unknown and the status's text ("rpc error: code = Unauthenticated desc =
// unregistered runner").
const grpcUnauthenticated = "rpc error: code = Unauthenticated desc = "

// IsUnauthenticated reports whether err (or an error it wraps) says that
// the forge does not know the runner's uuid/token, so that the runner must
// register again. Forges say it in one of two forms: a connect
// Unauthenticated error (Forgejo, a proper connect server), or Gitea's code
// unknown (HTTP 500) whose message starts with "rpc error: code =
// Unauthenticated desc = ".
func IsUnauthenticated(err error) bool {
	if err == nil {
		return false
	}
	switch connect.CodeOf(err) {
	case connect.CodeUnauthenticated:
		return true
	case connect.CodeUnknown:
		var ce *connect.Error
		return errors.As(err, &ce) && strings.HasPrefix(ce.Message(), grpcUnauthenticated)
	}
	return false
}
