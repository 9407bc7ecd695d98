package build

import (
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/forgeload/forgeload/internal/pkg/load/loadtarget/grpctarget"
	"github.com/forgeload/forgeload/internal/pkg/load/tracing"
)

// traceTarget records the traceparent header of every request.
type traceTarget struct {
	*httptest.Server
	mu      sync.Mutex
	parents []string
}

func newTraceTarget(t *testing.T) *traceTarget {
	t.Helper()
	tg := &traceTarget{}
	tg.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tg.mu.Lock()
		tg.parents = append(tg.parents, r.Header.Get("Traceparent"))
		tg.mu.Unlock()
	}))
	t.Cleanup(tg.Close)
	return tg
}

type report struct {
	mu       sync.Mutex
	lines    []string
	complete bool
}

func (r *report) add(line string, complete bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines, r.complete = append(r.lines, line), complete
}

// runTraced runs cfg and returns the target's traceparents and the spans
// the receiver decoded.
func runTraced(t *testing.T, yaml string, s Settings) (*report, error) {
	t.Helper()
	rep := &report{}
	s.TraceSummary = rep.add
	p, err := New(parse(t, yaml), s)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	_, err = p.Run(t.Context())
	return rep, err
}

// TestTracingExportsOneSpanPerRequest: with a tracing endpoint, every
// request's traceparent has a span with its trace and span id at a real
// OTLP receiver (HTTP, then gRPC with sampling), flushed by the end of
// Run; sampled-out requests carry flags 00 and have no span.
func TestTracingExportsOneSpanPerRequest(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, protocol string
		rate           float64
	}{
		{"http", "http", 1},
		{"grpc sampled", "grpc", 0.5},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tg := newTraceTarget(t)
			rc := grpctarget.StartOTLP(t)
			addr := rc.HTTPAddr
			if tt.protocol == "grpc" {
				addr = rc.GRPCAddr
			}
			rep, err := runTraced(t, fmt.Sprintf("target: %s/x\ntotal: 200\nconcurrency: 4\ntracing:\n  endpoint: %s\n  protocol: %s\n  insecure: true\n  service_name: checkout-load\n  sample_rate: %g\n",
				tg.URL, addr, tt.protocol, tt.rate), Settings{})
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]bool{}
			sampler := tracing.Sampler(tt.rate)
			for _, tp := range tg.parents {
				parts := strings.Split(tp, "-")
				if len(parts) != 4 || parts[0] != "00" || len(parts[1]) != 32 || len(parts[2]) != 16 {
					t.Fatalf("traceparent %q is not W3C version 00", tp)
				}
				var id [16]byte
				_, _ = hex.Decode(id[:], []byte(parts[1]))
				sampled := sampler == nil || sampler(&id)
				if (parts[3] == "01") != sampled {
					t.Errorf("traceparent %q: flags %s, but the %g ratio rule says sampled=%v", tp, parts[3], tt.rate, sampled)
				}
				if sampled {
					want[parts[1]+"-"+parts[2]] = true
				}
			}
			if len(tg.parents) != 200 {
				t.Fatalf("target saw %d requests, want 200", len(tg.parents))
			}
			got := map[string]bool{}
			for _, sp := range rc.Spans() {
				k := grpctarget.SpanKey(sp)
				if got[k] {
					t.Errorf("span %s exported twice", k)
				}
				got[k] = true
				if !want[k] {
					t.Errorf("span %s matches no sampled traceparent the target received", k)
				}
				if sp.GetKind() != tracepb.Span_SPAN_KIND_CLIENT || sp.GetName() != "http.request" || sp.GetEndTimeUnixNano() < sp.GetStartTimeUnixNano() {
					t.Errorf("span %s: kind %v name %q start %d end %d, want a client http.request span", k, sp.GetKind(), sp.GetName(), sp.GetStartTimeUnixNano(), sp.GetEndTimeUnixNano())
				}
			}
			if len(got) != len(want) {
				t.Errorf("receiver has %d spans, want one per sampled request: %d", len(got), len(want))
			}
			if tt.rate < 1 && (len(want) < 40 || len(want) > 160) {
				t.Errorf("%d of 200 requests sampled at rate %g", len(want), tt.rate)
			}
			for _, s := range rc.Services() {
				if s != "checkout-load" {
					t.Errorf("service.name %q, want checkout-load", s)
				}
			}
			wantLine := fmt.Sprintf("tracing: exported %d of %d spans to http://%s", len(want), len(want), addr)
			if len(rep.lines) != 1 || !rep.complete || !strings.HasPrefix(rep.lines[0], wantLine) {
				t.Errorf("trace report %q (complete %v), want one line starting %q", rep.lines, rep.complete, wantLine)
			}
		})
	}
}

// TestTracingQuietAndRefused: propagate: false exports spans but sends no
// traceparent; an exporter endpoint the dial control refuses gets nothing,
// and the report says the spans were not exported and why.
func TestTracingQuietAndRefused(t *testing.T) {
	t.Parallel()
	tg := newTraceTarget(t)
	rc := grpctarget.StartOTLP(t)
	addr := rc.HTTPAddr
	rep, err := runTraced(t, fmt.Sprintf("target: %s/\ntotal: 20\nconcurrency: 2\ntracing: {endpoint: 'http://%s', protocol: http, propagate: false}\n", tg.URL, addr), Settings{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tp := range tg.parents {
		if tp != "" {
			t.Fatalf("propagate: false, but a request carried traceparent %q", tp)
		}
	}
	n := len(rc.Spans())
	if n != 20 || !rep.complete {
		t.Errorf("propagate: false: receiver has %d spans (report %q), want 20", n, rep.lines)
	}

	_, port, _ := net.SplitHostPort(addr)
	deny := func(_, address string, _ syscall.RawConn) error {
		if strings.HasSuffix(address, ":"+port) {
			return errors.New("denied by the test policy")
		}
		return nil
	}
	rep, err = runTraced(t, fmt.Sprintf("target: %s/\ntotal: 20\nconcurrency: 2\ntracing: {endpoint: '%s', protocol: http, insecure: true}\n", tg.URL, addr), Settings{DialControl: deny})
	if err != nil {
		t.Fatal(err)
	}
	after := len(rc.Spans())
	if after != n {
		t.Errorf("the receiver got %d spans through a refused dial", after-n)
	}
	if len(rep.lines) != 1 || rep.complete || !strings.Contains(rep.lines[0], "exported 0 of 20 spans") || !strings.Contains(rep.lines[0], "denied by the test policy") {
		t.Errorf("refused exporter: report %q (complete %v), want 0 of 20 and the policy's reason", rep.lines, rep.complete)
	}
}
