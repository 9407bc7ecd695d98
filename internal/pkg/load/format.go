package load

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
