package load

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Check is the outcome of one threshold, as shown in a summary: the
// threshold's text (for example "http_req_duration:p99 < 300ms"), the value
// it was compared with, formatted, and whether it passed.
type Check struct {
	Name   string `json:"name"`
	Actual string `json:"actual"`
	Passed bool   `json:"passed"`
	// Skipped marks a baseline threshold checked without a baseline; it
	// counts as passed.
	Skipped bool `json:"skipped,omitempty"`
}

// FormatMS formats a latency in milliseconds as the summaries do: "0",
// "850µs", "12.34ms" or "1.50s".
func FormatMS(v float64) string { return fmtMS(v) }

// FormatPercent formats a fraction as the summaries do: 0.0123 is "1.23%".
func FormatPercent(f float64) string { return fmtPct(f) }

// FormatBytes formats a byte count as the summaries do: "1.5 MiB".
func FormatBytes(n int64) string { return fmtBytes(n) }

// FormatCounts formats counts as the summaries do: "200: 97, 503: 3",
// sorted by key, or "none".
func FormatCounts(m map[string]int64) string { return fmtCounts(m) }

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// fmtMS formats milliseconds for a summary.
func fmtMS(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v < 1:
		return strconv.FormatFloat(v*1000, 'f', 0, 64) + "µs"
	case v < 1000:
		return strconv.FormatFloat(v, 'f', 2, 64) + "ms"
	}
	return strconv.FormatFloat(v/1000, 'f', 2, 64) + "s"
}

// fmtDur formats a duration with the same rules as fmtMS.
func fmtDur(d time.Duration) string { return fmtMS(ms(d)) }

func fmtBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return strconv.FormatInt(n, 10) + " B"
	}
	v, i := float64(n), -1
	for v >= unit && i < 3 {
		v /= unit
		i++
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + " " + "KMGT"[i:i+1] + "iB"
}

func fmtPct(f float64) string { return strconv.FormatFloat(f*100, 'f', 2, 64) + "%" }

func sortedKeys(m map[string]int64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func fmtCounts(m map[string]int64) string {
	if len(m) == 0 {
		return "none"
	}
	var b strings.Builder
	for i, k := range sortedKeys(m) {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s: %d", k, m[k])
	}
	return b.String()
}

func fmtCores(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }

// FormatProgress returns the one-line live view of p, for example
//
//	[  10s] 998.0/1000.0 req/s  p50 1.20ms  p95 3.40ms  p99 5.60ms  errors 0 (0.00%)  in-flight 3  dropped 0
//
// followed, for each measured system under test, by its latest CPU and
// memory, such as "  sut api cpu 0.42 cores (42.00%) mem 12.3 MiB".
func FormatProgress(p Progress) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[%4ds] ", int(p.Elapsed/time.Second))
	b.WriteString(strconv.FormatFloat(p.RPS, 'f', 1, 64))
	if p.TargetRPS > 0 {
		b.WriteString("/" + strconv.FormatFloat(p.TargetRPS, 'f', 1, 64))
	}
	b.WriteString(" req/s  p50 " + fmtDur(p.P50) + "  p95 " + fmtDur(p.P95) + "  p99 " + fmtDur(p.P99))
	rate := 0.0
	if p.Requests > 0 {
		rate = float64(p.Errors) / float64(p.Requests)
	}
	fmt.Fprintf(&b, "  errors %d (%s)  in-flight %d  dropped %d", p.Errors, fmtPct(rate), p.InFlight, p.Dropped)
	for _, s := range p.SUT {
		fmt.Fprintf(&b, "  sut %s cpu %s cores (%s) mem %s", s.Target, fmtCores(s.CPUCores), fmtPct(s.CPUShare()), fmtBytes(int64(s.MemBytes)))
	}
	return b.String()
}
