package load

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// Histogram bounds: latencies are recorded in microseconds from 1 µs to 60 s
// with 3 significant digits. Longer latencies are clamped to the maximum.
const (
	histMin     = 1
	histMax     = 60_000_000
	histSigFigs = 3
)

// Histogram is an HDR latency histogram (1 µs–60 s, 3 significant digits).
// Histograms from different workers, seconds or hosts merge exactly, and
// percentiles are only ever read from (merged) histograms. The zero value is
// not usable; create one with [NewHistogram] or [DecodeHistogram]. A
// Histogram is not safe for concurrent use.
type Histogram struct {
	h *hdr.Histogram
}

// NewHistogram returns an empty histogram.
func NewHistogram() *Histogram { return &Histogram{h: hdr.New(histMin, histMax, histSigFigs)} }

// Record adds one latency. It does not allocate.
func (h *Histogram) Record(d time.Duration) {
	us := int64(d / time.Microsecond)
	if us < histMin {
		us = histMin
	} else if us > histMax {
		us = histMax
	}
	_ = h.h.RecordValue(us) // in range by construction
}

// Merge adds every value of o to h.
func (h *Histogram) Merge(o *Histogram) {
	if o != nil && o.h.TotalCount() > 0 {
		h.h.Merge(o.h)
	}
}

// Reset empties h.
func (h *Histogram) Reset() { h.h.Reset() }

// Count returns the number of recorded values.
func (h *Histogram) Count() int64 { return h.h.TotalCount() }

// Quantile returns the latency at quantile q in [0, 1], or 0 when empty.
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.h.TotalCount() == 0 {
		return 0
	}
	return time.Duration(h.h.ValueAtQuantile(q*100)) * time.Microsecond
}

// Max returns the largest recorded latency (to the histogram's precision),
// or 0 when empty.
func (h *Histogram) Max() time.Duration {
	if h.h.TotalCount() == 0 {
		return 0
	}
	return time.Duration(h.h.Max()) * time.Microsecond
}

// Min returns the smallest recorded latency, or 0 when empty.
func (h *Histogram) Min() time.Duration {
	if h.h.TotalCount() == 0 {
		return 0
	}
	return time.Duration(h.h.Min()) * time.Microsecond
}

// Mean returns the mean latency, or 0 when empty.
func (h *Histogram) Mean() time.Duration {
	if h.h.TotalCount() == 0 {
		return 0
	}
	return time.Duration(h.h.Mean() * float64(time.Microsecond))
}

// Equal reports whether h and o hold the same counts.
func (h *Histogram) Equal(o *Histogram) bool { return h.h.Equals(o.h) }

// Clone returns an independent copy of h.
func (h *Histogram) Clone() *Histogram { return &Histogram{h: h.h.Clone()} }

// Encode returns h in the HdrHistogram V2 compressed encoding, the format
// multi-host runs ship between hosts.
func (h *Histogram) Encode() ([]byte, error) {
	b, err := h.h.Encode(hdr.V2CompressedEncodingCookieBase)
	if err != nil {
		return nil, fmt.Errorf("encode latency histogram: %w", err)
	}
	return b, nil
}

// DecodeHistogram decodes a histogram written by [Histogram.Encode]. Values
// outside 1 µs–60 s are clamped by re-recording into the standard geometry.
func DecodeHistogram(b []byte) (*Histogram, error) {
	d, err := hdr.Decode(b)
	if err != nil {
		return nil, fmt.Errorf("decode latency histogram (%d bytes): %w: it must be HdrHistogram V2 compressed, as written by Histogram.Encode", len(b), err)
	}
	h := NewHistogram()
	if dropped := h.h.Merge(d); dropped > 0 {
		// Re-record out-of-range values at the clamp so no count is lost.
		_ = h.h.RecordValues(histMax, dropped)
	}
	return h, nil
}

// MarshalJSON encodes h as a base64 string of its V2 compressed encoding.
func (h *Histogram) MarshalJSON() ([]byte, error) {
	b, err := h.Encode()
	if err != nil {
		return nil, err
	}
	return json.Marshal(base64.StdEncoding.EncodeToString(b))
}

// UnmarshalJSON decodes the form written by MarshalJSON.
func (h *Histogram) UnmarshalJSON(data []byte) error {
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("decode latency histogram: want a base64 string: %w", err)
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return fmt.Errorf("decode latency histogram: bad base64: %w", err)
	}
	d, err := DecodeHistogram(b)
	if err != nil {
		return err
	}
	h.h = d.h
	return nil
}

// PackedHistogram is a latency histogram that stores only its populated
// buckets, with the geometry of [Histogram]: a few hundred bytes for a
// second of requests where a [Histogram] takes some 140 KB. The per-second
// series of a [Result] keeps one per second, so that series from several
// hosts merge exactly without holding a full histogram per second, and
// without encoding and decoding one every second. In JSON it is the same
// V2 compressed encoding as [Histogram.Encode], as a byte string. The zero
// value is not usable; a nil *PackedHistogram is an empty second. It is not
// safe for concurrent use.
type PackedHistogram struct {
	p *hdr.PackedHistogram
}

// Pack returns h's values as a PackedHistogram.
func (h *Histogram) Pack() *PackedHistogram {
	p := hdr.NewPacked(histMin, histMax, histSigFigs)
	_ = p.MergeFrom(h.h) // the same geometry: nothing is dropped
	return &PackedHistogram{p: p}
}

// Count returns the number of recorded values; 0 for nil.
func (p *PackedHistogram) Count() int64 {
	if p == nil {
		return 0
	}
	return p.p.TotalCount()
}

// Merge adds every value of o to p.
func (p *PackedHistogram) Merge(o *PackedHistogram) {
	if o.Count() > 0 {
		_ = p.p.Merge(o.p) // the same geometry, counts far below overflow
	}
}

// MergeInto adds every value of p to the dense histogram h.
func (p *PackedHistogram) MergeInto(h *Histogram) {
	if p.Count() > 0 {
		_ = p.p.MergeInto(h.h)
	}
}

// Quantile returns the latency at quantile q in [0, 1], or 0 when empty;
// the same value as [Histogram.Quantile] on the same counts.
func (p *PackedHistogram) Quantile(q float64) time.Duration {
	if p.Count() == 0 {
		return 0
	}
	return time.Duration(p.p.ValueAtPercentile(q*100)) * time.Microsecond
}

// MarshalJSON encodes p as a JSON byte string (base64) of its V2
// compressed encoding: the bytes [Histogram.Encode] gives for the same
// counts.
func (p *PackedHistogram) MarshalJSON() ([]byte, error) {
	b, err := p.p.Encode()
	if err != nil {
		return nil, fmt.Errorf("encode latency histogram: %w", err)
	}
	return json.Marshal(b)
}

// UnmarshalJSON decodes the form written by MarshalJSON, through
// [DecodeHistogram] (so out-of-range values are clamped the same way).
func (p *PackedHistogram) UnmarshalJSON(data []byte) error {
	var b []byte
	if err := json.Unmarshal(data, &b); err != nil {
		return fmt.Errorf("decode latency histogram: want a base64 string: %w", err)
	}
	d, err := DecodeHistogram(b)
	if err != nil {
		return err
	}
	*p = *d.Pack()
	return nil
}

// Clone returns an independent copy of p; nil for nil.
func (p *PackedHistogram) Clone() *PackedHistogram {
	if p == nil {
		return nil
	}
	return &PackedHistogram{p: p.p.Clone()}
}
