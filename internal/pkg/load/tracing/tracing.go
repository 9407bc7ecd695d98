package tracing

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/forgeload/forgeload/internal/pkg/load"
	"github.com/forgeload/forgeload/internal/pkg/load/vars"
	"github.com/forgeload/forgeload/internal/pkg/redact"
)

// DefaultServiceName is the service.name of the spans when the config
// sets none.
const DefaultServiceName = "forgeload"

// FlushTimeout bounds the export of the spans still queued when a run
// ends.
const FlushTimeout = 5 * time.Second

// queueSize is how many ended spans wait for export; more are dropped
// (and counted) rather than slowing requests down.
const queueSize = 1 << 16

// Config is what the load config's tracing block asks for.
type Config struct {
	// URL is the OTLP receiver (spec.Tracing.ExportURL): its scheme (http,
	// https) decides TLS, and for HTTP its path, if any, replaces
	// /v1/traces.
	URL *url.URL
	// Protocol is grpc (the default) or http (OTLP/HTTP protobuf).
	Protocol string
	// ServiceName is the spans' service.name; empty is DefaultServiceName.
	ServiceName string
	// Headers are sent with every export (e.g. a backend's API key); they
	// are secrets and appear in no message.
	Headers map[string]string
	// DialControl and Resolver apply the target policy to the exporter's
	// connections, as to the load's.
	DialControl func(network, address string, c syscall.RawConn) error
	Resolver    *net.Resolver
	// CheckRedirect applies the target policy to a redirect of an
	// OTLP/HTTP export before it is followed; nil follows up to 10.
	CheckRedirect func(req *http.Request, via []*http.Request) error
	// LoadProtocol is the load's protocol (http, websocket, sse or grpc),
	// for the span name.
	LoadProtocol string
	// EndpointProtocols are, for a mixed-protocol run, the protocol of
	// each endpoint by Sample.Endpoint: an endpoint's spans are named
	// after its own protocol. nil names every span after LoadProtocol.
	EndpointProtocols []string
}

// Exporter sends one span per sampled request to an OTLP receiver. Create
// it with [New], wrap the run's Requester with [Exporter.Wrap], and call
// [Exporter.Shutdown] when the run ends.
type Exporter struct {
	tp      *sdktrace.TracerProvider
	tracer  trace.Tracer
	closeFn func() error // closes the gRPC connection, if any
	name    string       // span name
	names   []string     // span names by endpoint, for a mixed-protocol run
	url     string       // for messages

	ended    atomic.Int64
	exported atomic.Int64
	failed   atomic.Int64
	errMu    sync.Mutex
	firstErr error
	shutOnce sync.Once
	shutErr  error
}

// New builds an exporter for c. Nothing is dialled until the first batch
// is sent. The exporter reads no OTEL_* environment variable: a job must
// not pick up the daemon's headers, certificates or proxies.
func New(c Config) (*Exporter, error) {
	u := c.URL
	if u == nil {
		return nil, errors.New("tracing: no endpoint")
	}
	var err error
	e := &Exporter{name: spanName(c.LoadProtocol), url: redact.URL(u.String())}
	for _, p := range c.EndpointProtocols {
		e.names = append(e.names, spanName(p))
	}
	dialer := &net.Dialer{Timeout: 10 * time.Second, Control: c.DialControl, Resolver: c.Resolver}
	var exp sdktrace.SpanExporter
	switch strings.ToLower(c.Protocol) {
	case "", "grpc":
		creds := credentials.NewTLS(&tls.Config{MinVersion: tls.VersionTLS12})
		if u.Scheme == "http" {
			creds = insecure.NewCredentials()
		}
		conn, err := grpc.NewClient("passthrough:///"+u.Host,
			grpc.WithTransportCredentials(creds),
			grpc.WithNoProxy(),
			grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
				return dialer.DialContext(ctx, "tcp", addr)
			}))
		if err != nil {
			return nil, fmt.Errorf("tracing.endpoint %s: %w", e.url, err)
		}
		e.closeFn = conn.Close
		exp, err = otlptracegrpc.New(context.Background(), otlptracegrpc.WithGRPCConn(conn),
			otlptracegrpc.WithHeaders(headers(c.Headers)), otlptracegrpc.WithTimeout(10*time.Second),
			otlptracegrpc.WithRetry(otlptracegrpc.RetryConfig{Enabled: false}))
		if err != nil {
			_ = conn.Close()
			return nil, fmt.Errorf("tracing.endpoint %s: %w", e.url, err)
		}
	case "http":
		path := u.Path
		if path == "" || path == "/" {
			path = "/v1/traces"
		}
		client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
			Proxy: nil, DialContext: dialer.DialContext, ForceAttemptHTTP2: true,
			TLSClientConfig: &tls.Config{MinVersion: tls.VersionTLS12}, MaxIdleConns: 2,
		}, CheckRedirect: c.CheckRedirect}
		// The URL sets TLS both ways, whatever OTEL_* says.
		full := url.URL{Scheme: u.Scheme, Host: u.Host, Path: path}
		exp, err = otlptracehttp.New(context.Background(), otlptracehttp.WithEndpointURL(full.String()),
			otlptracehttp.WithHTTPClient(client), otlptracehttp.WithHeaders(headers(c.Headers)),
			otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: false}))
		if err != nil {
			return nil, fmt.Errorf("tracing.endpoint %s: %w", e.url, err)
		}
	default:
		return nil, fmt.Errorf("tracing.protocol %q is not an OTLP protocol (want grpc or http)", c.Protocol)
	}
	svc := c.ServiceName
	if svc == "" {
		svc = DefaultServiceName
	}
	e.tp = sdktrace.NewTracerProvider(
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", svc))),
		sdktrace.WithSampler(sdktrace.AlwaysSample()), // the traceparent's flag decided already
		sdktrace.WithIDGenerator(idsFromContext{}),
		sdktrace.WithSpanProcessor(sdktrace.NewBatchSpanProcessor(&counting{SpanExporter: exp, e: e},
			sdktrace.WithMaxQueueSize(queueSize), sdktrace.WithMaxExportBatchSize(2048),
			sdktrace.WithBatchTimeout(time.Second), sdktrace.WithExportTimeout(10*time.Second))),
	)
	e.tracer = e.tp.Tracer("forgeload")
	return e, nil
}

// headers returns h, or an empty map: never nil, so that no OTEL_*
// variable adds headers.
func headers(h map[string]string) map[string]string {
	if h == nil {
		return map[string]string{}
	}
	return h
}

// ParseHeaders reads OTEL_EXPORTER_OTLP_HEADERS' format: comma-separated
// key=value pairs, values URL-encoded. name labels errors; a value never
// appears in them.
func ParseHeaders(name, v string) (map[string]string, error) {
	h := map[string]string{}
	for i, pair := range strings.Split(v, ",") {
		if strings.TrimSpace(pair) == "" {
			continue
		}
		k, val, ok := strings.Cut(pair, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("%s: entry %d is not key=value", name, i+1)
		}
		dec, err := url.PathUnescape(strings.TrimSpace(val))
		if err != nil {
			return nil, fmt.Errorf("%s: the value of %s is not URL-encoded", name, k)
		}
		h[k] = dec
	}
	return h, nil
}

// spanName is Crankfire's span name for a load protocol.
func spanName(protocol string) string {
	switch protocol {
	case "grpc":
		return "grpc.invoke"
	case "websocket":
		return "ws.session"
	case "sse":
		return "sse.session"
	}
	return "http.request"
}

// Sampler returns the decision of OpenTelemetry's TraceIDRatioBased
// sampler for rate, for vars.Source.Sample: a trace is sampled when the
// big-endian number in bytes 8–15 of its id, shifted right once, is below
// rate·2⁶³.
func Sampler(rate float64) func(*[16]byte) bool {
	if rate >= 1 {
		return nil
	}
	bound := uint64(max(rate, 0) * (1 << 63))
	return func(id *[16]byte) bool { return binary.BigEndian.Uint64(id[8:16])>>1 < bound }
}

// Wrap returns r with one span per request whose traceparent is sampled:
// the span has the traceparent's trace and span id, starts when the
// request (attempt) starts and ends when it returns, and carries the
// endpoint's name, the status code and the error class. endpoints names
// the endpoints by Sample.Endpoint.
func (e *Exporter) Wrap(r load.Requester, endpoints []string) load.Requester {
	return &traced{r: r, e: e, endpoints: endpoints}
}

type traced struct {
	r         load.Requester
	e         *Exporter
	endpoints []string
}

func (t *traced) Do(ctx context.Context) error {
	var s load.Sample
	return t.DoSample(ctx, &s)
}

func (t *traced) DoSample(ctx context.Context, s *load.Sample) error {
	start := time.Now()
	err := t.r.DoSample(ctx, s)
	u, _ := s.User.(*vars.User)
	if u == nil || !u.Traced || !u.Sampled {
		return err
	}
	end := time.Now()
	attrs := make([]attribute.KeyValue, 0, 4)
	if s.Endpoint >= 0 && s.Endpoint < len(t.endpoints) {
		attrs = append(attrs, attribute.String("forgeload.endpoint", t.endpoints[s.Endpoint]))
	}
	if s.Status != 0 {
		attrs = append(attrs, attribute.Int("http.response.status_code", s.Status))
	}
	if s.Attempts > 1 {
		attrs = append(attrs, attribute.Int("forgeload.attempt", s.Attempts))
	}
	class := s.Class
	if class == load.ClassNone && err != nil {
		class = load.Classify(err)
	}
	name := t.e.name
	if s.Endpoint >= 0 && s.Endpoint < len(t.e.names) {
		name = t.e.names[s.Endpoint]
	}
	ids := &spanIDs{trace: trace.TraceID(u.TraceID), span: trace.SpanID(u.SpanID)}
	_, span := t.e.tracer.Start(context.WithValue(context.Background(), idsKey{}, ids), name,
		trace.WithTimestamp(start), trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	if class != load.ClassNone {
		span.SetAttributes(attribute.String("error.type", class.String()))
		span.SetStatus(codes.Error, class.String())
	}
	span.End(trace.WithTimestamp(end))
	t.e.ended.Add(1)
	return err
}

var _ load.Requester = (*traced)(nil)

type idsKey struct{}

type spanIDs struct {
	trace trace.TraceID
	span  trace.SpanID
}

// idsFromContext gives a span the ids of the traceparent its request
// carried, which DoSample puts in the context.
type idsFromContext struct{}

func (idsFromContext) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	if ids, ok := ctx.Value(idsKey{}).(*spanIDs); ok {
		return ids.trace, ids.span
	}
	return trace.TraceID{1}, trace.SpanID{1} // not reached: every span comes from DoSample
}

func (idsFromContext) NewSpanID(ctx context.Context, _ trace.TraceID) trace.SpanID {
	if ids, ok := ctx.Value(idsKey{}).(*spanIDs); ok {
		return ids.span
	}
	return trace.SpanID{1}
}

// counting counts what its exporter sent and keeps the first error, so
// the run can say how many spans arrived, instead of the SDK logging to
// the process's stderr.
type counting struct {
	sdktrace.SpanExporter
	e *Exporter
}

func (c *counting) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if err := c.SpanExporter.ExportSpans(ctx, spans); err != nil {
		c.e.failed.Add(int64(len(spans)))
		c.e.errMu.Lock()
		if c.e.firstErr == nil {
			c.e.firstErr = err
		}
		c.e.errMu.Unlock()
		return nil
	}
	c.e.exported.Add(int64(len(spans)))
	return nil
}

// Stats are what an exporter did: spans ended by sampled requests, sent
// to the receiver, refused or not sent (export errors), and dropped
// (the queue was full, or the flush ran out of time).
type Stats struct {
	Ended, Exported, Failed, Dropped int64
	// Err is the first export error, nil if none.
	Err error
}

// Shutdown flushes the queued spans within ctx (bound it, e.g. with
// [FlushTimeout]), closes the connection and returns what was exported.
// Later calls return the same.
func (e *Exporter) Shutdown(ctx context.Context) Stats {
	e.shutOnce.Do(func() {
		err := e.tp.Shutdown(ctx)
		if e.closeFn != nil {
			_ = e.closeFn()
		}
		e.shutErr = err
	})
	e.errMu.Lock()
	first := e.firstErr
	e.errMu.Unlock()
	st := Stats{Ended: e.ended.Load(), Exported: e.exported.Load(), Failed: e.failed.Load(), Err: first}
	st.Dropped = max(st.Ended-st.Exported-st.Failed, 0)
	if st.Err == nil && e.shutErr != nil && !errors.Is(e.shutErr, context.Canceled) {
		st.Err = e.shutErr
	}
	return st
}

// Summary is one line on what the exporter sent, for the run's log.
func (st Stats) Summary(endpoint string) string {
	msg := fmt.Sprintf("tracing: exported %d of %d spans to %s", st.Exported, st.Ended, endpoint)
	if st.Failed > 0 || st.Dropped > 0 {
		msg += fmt.Sprintf(" (%d refused or unsent, %d dropped: queue full or flush past %s)", st.Failed, st.Dropped, FlushTimeout)
	}
	if st.Err != nil {
		msg += ": " + st.Err.Error()
	}
	return msg
}

// OK reports whether every ended span was exported.
func (st Stats) OK() bool { return st.Exported == st.Ended && st.Err == nil }

// URL is the receiver's address, without credentials, for messages.
func (e *Exporter) URL() string { return e.url }
