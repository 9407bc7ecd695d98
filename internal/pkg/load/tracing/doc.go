// Package tracing exports one OpenTelemetry span per sampled load request
// to an OTLP receiver (gRPC or HTTP), as Crankfire's tracing block asks.
// The span carries the trace and span id of the W3C traceparent the
// request sent (vars.User), so the target's server spans are its
// children; the sampling decision is OpenTelemetry's trace-id ratio rule
// ([Sampler]), made when the traceparent is built and carried in its
// flags. Spans are queued and sent in batches off the request path; a
// full queue drops spans rather than slowing requests. The exporter dials
// through the caller's DialControl and follows an OTLP/HTTP redirect only
// past its CheckRedirect (the target policy), and reads no OTEL_*
// environment variable.
package tracing
