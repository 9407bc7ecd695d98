package tracing

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// TestSamplerIsOpenTelemetrysRatioRule: the decision carried in the
// traceparent's flags is the one the SDK's TraceIDRatioBased sampler
// makes for the same trace id, so collectors that resample agree.
func TestSamplerIsOpenTelemetrysRatioRule(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	for _, rate := range []float64{0, 0.001, 0.1, 0.5, 0.9, 1} {
		ours := Sampler(rate)
		sdk := sdktrace.TraceIDRatioBased(rate)
		sampled := 0
		for range 5000 {
			var id [16]byte
			for i := range id {
				id[i] = byte(r.Uint32())
			}
			want := sdk.ShouldSample(sdktrace.SamplingParameters{ParentContext: context.Background(), TraceID: trace.TraceID(id)}).Decision == sdktrace.RecordAndSample
			got := ours == nil || ours(&id)
			if got != want {
				t.Fatalf("rate %g, trace id %x: sampled %v, the SDK says %v", rate, id, got, want)
			}
			if got {
				sampled++
			}
		}
		if rate == 0.5 && (sampled < 2000 || sampled > 3000) {
			t.Errorf("rate 0.5 sampled %d of 5000", sampled)
		}
	}
}

func TestSpanNames(t *testing.T) {
	t.Parallel()
	for proto, want := range map[string]string{"": "http.request", "http": "http.request", "grpc": "grpc.invoke", "websocket": "ws.session", "sse": "sse.session"} {
		if got := spanName(proto); got != want {
			t.Errorf("spanName(%q) = %q, want %q", proto, got, want)
		}
	}
}

func TestParseHeaders(t *testing.T) {
	t.Parallel()
	h, err := ParseHeaders("V", " api-key = a%2Cb ,, team=x=y")
	if err != nil || len(h) != 2 || h["api-key"] != "a,b" || h["team"] != "x=y" {
		t.Errorf("ParseHeaders = %v, %v", h, err)
	}
	for _, bad := range []string{"novalue", "=x", "k=%zzsecret"} {
		_, err := ParseHeaders("OTEL_EXPORTER_OTLP_HEADERS", bad)
		if err == nil || !strings.HasPrefix(err.Error(), "OTEL_EXPORTER_OTLP_HEADERS: ") || strings.Contains(err.Error(), "secret") {
			t.Errorf("ParseHeaders(%q) = %v, want an error naming the variable, never the value", bad, err)
		}
	}
}
