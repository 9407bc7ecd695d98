package summary

// CrankfireFields are the top-level fields of Crankfire's JSON output,
// embedded in [Summary] so that scripts written for Crankfire (`jq
// .p99_latency_ms`) read the same numbers from forgeload's JSON. Only
// Crankfire's "endpoints" (a map there, a list here) differs.
type CrankfireFields struct {
	Total          int64   `json:"total"`
	Successes      int64   `json:"successes"`
	Failures       int64   `json:"failures"`
	RequestsPerSec float64 `json:"requests_per_sec"`
	MinLatencyMs   float64 `json:"min_latency_ms"`
	MaxLatencyMs   float64 `json:"max_latency_ms"`
	MeanLatencyMs  float64 `json:"mean_latency_ms"`
	P50LatencyMs   float64 `json:"p50_latency_ms"`
	P90LatencyMs   float64 `json:"p90_latency_ms"`
	P95LatencyMs   float64 `json:"p95_latency_ms"`
	P99LatencyMs   float64 `json:"p99_latency_ms"`
	DurationMs     float64 `json:"duration_ms"`
}

func crankfireOf(s *Summary) CrankfireFields {
	l := s.Latency
	return CrankfireFields{
		Total: s.Requests, Successes: s.Requests - s.Errors, Failures: s.Errors, RequestsPerSec: s.RPS,
		MinLatencyMs: l.Min, MaxLatencyMs: l.Max, MeanLatencyMs: l.Mean,
		P50LatencyMs: l.P50, P90LatencyMs: l.P90, P95LatencyMs: l.P95, P99LatencyMs: l.P99,
		DurationMs: s.ElapsedSeconds * 1000,
	}
}
