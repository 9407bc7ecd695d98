package summary

import (
	"strconv"
	"time"

	"github.com/forgeload/forgeload/internal/pkg/load"
)

// The summaries format numbers as the engine's progress lines do.
func fmtMS(v float64) string              { return load.FormatMS(v) }
func fmtPct(f float64) string             { return load.FormatPercent(f) }
func fmtBytes(n int64) string             { return load.FormatBytes(n) }
func fmtCounts(m map[string]int64) string { return load.FormatCounts(m) }
func fmtCores(v float64) string           { return strconv.FormatFloat(v, 'f', 2, 64) }
func ms(d time.Duration) float64          { return float64(d.Microseconds()) / 1000 }
