package resultview

import (
	"testing"
	"time"

	"github.com/forgeload/forgeload/internal/pkg/load"
)

// TestEndpointBucketsComeFromMergedHistograms: on a run drawn in buckets
// of two seconds, an endpoint's p50 and p99 are read from the merge of
// its seconds' histograms (98 fast requests and 2 slow ones: p50 fast, p99
// slow; averaging the seconds' percentiles would give neither), its rate
// is the mean over the bucket, and an endpoint missing from a second
// counts as none there; its buckets' histograms are not changed.
func TestEndpointBucketsComeFromMergedHistograms(t *testing.T) {
	t.Parallel()
	row := func(name string, d time.Duration, n int) load.SecondEndpoint {
		h := load.NewHistogram()
		for range n {
			h.Record(d)
		}
		p := h.Pack()
		return load.SecondEndpoint{Name: name, Requests: int64(n), Hist: p, P50: d, P99: d}
	}
	var secs []load.Second
	for i := range 4 {
		secs = append(secs,
			load.Second{Second: 2 * i, Endpoints: []load.SecondEndpoint{row("a", time.Millisecond, 98)}},
			load.Second{Second: 2*i + 1, Endpoints: []load.SecondEndpoint{row("a", time.Second, 2), row("b", time.Millisecond, 10)}})
	}
	names := endpointNames(secs)
	if len(names) != 2 || names[0] != "a" || names[1] != "b" {
		t.Fatalf("endpoint names = %q, want a then b", names)
	}
	pts := endpointBuckets(secs, names, 2)
	if len(pts) != 4 {
		t.Fatalf("%d buckets, want 4", len(pts))
	}
	a, b := pts[0][0], pts[0][1]
	if a.p50 != 1 || a.p99 < 999 || a.requests != 50 {
		t.Errorf("endpoint a's bucket = %+v, want p50 1 ms, p99 1 s from the merged histogram and 50 req/s", a)
	}
	if b.p50 != 1 || b.requests != 5 {
		t.Errorf("endpoint b's bucket = %+v, want p50 1 ms and 5 req/s (10 in one of its two seconds)", b)
	}
	if n := secs[0].Endpoints[0].Hist.Count(); n != 98 {
		t.Errorf("the first second's histogram holds %d after drawing, want its 98", n)
	}
}
