package duet

import (
	"sync"
	"time"

	"github.com/forgeload/forgeload/internal/pkg/load"
)

// Point is what one side completed in one second.
type Point struct {
	// Requests and Errors count the second's completions and failures.
	Requests, Errors int64
	// P50, P95 and P99 are the second's latency percentiles.
	P50, P95, P99 time.Duration
}

// Second is one second of a paired run.
type Second struct {
	Second              int
	Candidate, Baseline Point
}

// Collector gathers the seconds of a paired run from the engine's
// snapshots ([load.Options.OnSecond]). It is safe for concurrent use.
type Collector struct {
	n       int
	mu      sync.Mutex
	seconds []Second
	totals  [2]load.Stats
}

// NewCollector returns a collector for a paired run of n endpoints per
// side.
func NewCollector(n int) *Collector { return &Collector{n: n} }

// Add reads one second's snapshot; it keeps none of its histograms.
func (c *Collector) Add(s *load.Snapshot) {
	var sides [2]load.Stats
	for i := range s.Endpoints {
		side := 0
		if i >= c.n {
			side = 1
		}
		sides[side].Merge(&s.Endpoints[i].Stats)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seconds = append(c.seconds, Second{Second: s.Second, Candidate: point(&sides[0]), Baseline: point(&sides[1])})
	c.totals[0].Merge(&sides[0])
	c.totals[1].Merge(&sides[1])
}

func point(s *load.Stats) Point {
	return Point{Requests: s.Requests, Errors: s.Errors, P50: s.Quantile(0.50), P95: s.Quantile(0.95), P99: s.Quantile(0.99)}
}

// Seconds returns the seconds added so far, in order.
func (c *Collector) Seconds() []Second {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Second(nil), c.seconds...)
}

// Totals returns each side's whole-run stats (candidate, baseline).
func (c *Collector) Totals() (cand, base Point) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return point(&c.totals[0]), point(&c.totals[1])
}

// Watch makes the collector read every second that *hook receives,
// before the hook already there (if any).
func (c *Collector) Watch(hook *func(*load.Snapshot)) {
	prev := *hook
	*hook = func(s *load.Snapshot) {
		c.Add(s)
		if prev != nil {
			prev(s)
		}
	}
}
