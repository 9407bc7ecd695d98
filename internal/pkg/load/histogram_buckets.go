package load

import "time"

// Buckets calls f once per non-empty bucket of h, in increasing order, with
// the bucket's upper bound and its count. It lets a caller re-bucket the
// exact counts into a coarser histogram (Prometheus) without touching the
// samples.
func (h *Histogram) Buckets(f func(upper time.Duration, n int64)) {
	for _, b := range h.h.Distribution() {
		if b.Count > 0 {
			f(time.Duration(b.To)*time.Microsecond, b.Count)
		}
	}
}
