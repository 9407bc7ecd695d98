package grpctarget

import (
	"context"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
)

// OTLP is a real OpenTelemetry trace receiver: OTLP/HTTP protobuf on
// POST /v1/traces and the OTLP gRPC trace service, both plaintext on
// 127.0.0.1. It decodes every export and keeps the spans.
type OTLP struct {
	coltracepb.UnimplementedTraceServiceServer
	// HTTPAddr and GRPCAddr are host:port of the two listeners.
	HTTPAddr, GRPCAddr string
	mu                 sync.Mutex
	spans              []*tracepb.Span
	services           []string
	headers            []http.Header
}

// StartOTLP starts both receivers for the test.
func StartOTLP(t testing.TB) *OTLP {
	t.Helper()
	o := &OTLP{}
	hs := httptest.NewServer(http.HandlerFunc(o.serveHTTP))
	t.Cleanup(hs.Close)
	o.HTTPAddr = strings.TrimPrefix(hs.URL, "http://")
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(gs, o)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = gs.Serve(lis)
	}()
	t.Cleanup(func() {
		gs.Stop()
		<-done
	})
	o.GRPCAddr = lis.Addr().String()
	return o
}

func (o *OTLP) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "want a protobuf POST to /v1/traces", http.StatusBadRequest)
		return
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	var req coltracepb.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(b, &req)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	o.mu.Lock()
	o.headers = append(o.headers, r.Header.Clone())
	o.mu.Unlock()
	o.add(&req)
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

// Export implements the gRPC trace service.
func (o *OTLP) Export(ctx context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	h := http.Header{}
	for k, vs := range md {
		for _, v := range vs {
			h.Add(k, v)
		}
	}
	o.mu.Lock()
	o.headers = append(o.headers, h)
	o.mu.Unlock()
	o.add(req)
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

func (o *OTLP) add(req *coltracepb.ExportTraceServiceRequest) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, rs := range req.GetResourceSpans() {
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.GetKey() == "service.name" {
				o.services = append(o.services, kv.GetValue().GetStringValue())
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			o.spans = append(o.spans, ss.GetSpans()...)
		}
	}
}

// Spans returns the spans received so far.
func (o *OTLP) Spans() []*tracepb.Span {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]*tracepb.Span(nil), o.spans...)
}

// Headers returns the headers (gRPC: metadata) of every export received.
func (o *OTLP) Headers() []http.Header {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]http.Header(nil), o.headers...)
}

// Services returns the service.name of every resource received.
func (o *OTLP) Services() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.services...)
}

// SpanKey is "<trace id>-<span id>" in hex, as in a W3C traceparent.
func SpanKey(sp *tracepb.Span) string {
	return hex.EncodeToString(sp.GetTraceId()) + "-" + hex.EncodeToString(sp.GetSpanId())
}
