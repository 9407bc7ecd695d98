package load

import (
	"testing"
	"time"
)

func TestHistogramBucketsCoverEveryValue(t *testing.T) {
	t.Parallel()
	h := NewHistogram()
	vals := []time.Duration{time.Millisecond, time.Millisecond, 5 * time.Millisecond, time.Second}
	for _, v := range vals {
		h.Record(v)
	}
	var total int64
	var last time.Duration
	h.Buckets(func(upper time.Duration, n int64) {
		if upper < last {
			t.Fatalf("buckets out of order: %s after %s", upper, last)
		}
		last = upper
		total += n
	})
	if total != int64(len(vals)) {
		t.Fatalf("bucket counts sum to %d, want %d", total, len(vals))
	}
	if last < time.Second || last > time.Second+time.Second/500 {
		t.Fatalf("last bucket upper bound %s, want ~1s (3 significant digits)", last)
	}
}
