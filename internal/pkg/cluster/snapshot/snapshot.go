package snapshot

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Histogram geometry used by [Snapshot.Record]: 1 µs to 60 s, three
// significant digits. Values are in microseconds.
const (
	LowestMicros  = 1
	HighestMicros = 60_000_000
	SigFigs       = 3
)

// MaxWireBytes bounds the encoded size [Unmarshal] accepts.
const MaxWireBytes = 8 << 20

// Snapshot holds the counters and histograms of one run second (or, for
// totals, of the whole run). The zero value is not usable; call [New]. A
// Snapshot is not safe for concurrent use.
type Snapshot struct {
	// Second is the run second, counted from the run's start_at; -1 marks
	// a cumulative total.
	Second int
	// Counters maps a metric key (name plus low-cardinality tags) to a count.
	Counters map[string]int64
	// Hists maps a metric key to its latency histogram in microseconds.
	Hists map[string]*hdrhistogram.Histogram
}

// New returns an empty snapshot for run second sec.
func New(sec int) *Snapshot {
	return &Snapshot{Second: sec, Counters: map[string]int64{}, Hists: map[string]*hdrhistogram.Histogram{}}
}

// NewHistogram returns an empty histogram with the standard geometry.
func NewHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(LowestMicros, HighestMicros, SigFigs)
}

// Add adds n to counter key.
func (s *Snapshot) Add(key string, n int64) { s.Counters[key] += n }

// Record records one value (microseconds) into histogram key, clamping it
// into the trackable range so no sample is lost.
func (s *Snapshot) Record(key string, micros int64) {
	h := s.Hists[key]
	if h == nil {
		h = NewHistogram()
		s.Hists[key] = h
	}
	_ = h.RecordValue(min(max(micros, LowestMicros), HighestMicros)) // in range by construction
}

// Merge adds o's counters and histogram counts into s. o is not modified.
// It returns the number of samples that fell outside s's histogram range
// (always 0 for histograms built by this package).
func (s *Snapshot) Merge(o *Snapshot) (dropped int64) {
	for k, v := range o.Counters {
		s.Counters[k] += v
	}
	for k, h := range o.Hists {
		if mine := s.Hists[k]; mine != nil {
			dropped += mine.Merge(h)
		} else {
			s.Hists[k] = h.Clone()
		}
	}
	return dropped
}

// Clone returns a deep copy of s.
func (s *Snapshot) Clone() *Snapshot {
	c := New(s.Second)
	c.Merge(s)
	return c
}

// Keys returns the histogram keys in sorted order.
func (s *Snapshot) Keys() []string { return slices.Sorted(maps.Keys(s.Hists)) }

type wire struct {
	S int               `json:"s"`
	C map[string]int64  `json:"c,omitempty"`
	H map[string]string `json:"h,omitempty"`
}

// MarshalBinary encodes s: JSON with V2-compressed HDR histograms (base64).
func (s *Snapshot) MarshalBinary() ([]byte, error) {
	w := wire{S: s.Second, C: s.Counters, H: make(map[string]string, len(s.Hists))}
	for k, h := range s.Hists {
		b, err := h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
		if err != nil {
			return nil, fmt.Errorf("encode histogram %q: %w", k, err)
		}
		w.H[k] = string(b) // already base64
	}
	return json.Marshal(w)
}

// Unmarshal decodes a snapshot written by [Snapshot.MarshalBinary]. It
// rejects inputs over [MaxWireBytes] and histograms that fail to decode.
func Unmarshal(b []byte) (*Snapshot, error) {
	if len(b) > MaxWireBytes {
		return nil, fmt.Errorf("decode metrics snapshot: %d bytes exceeds the %d byte limit", len(b), MaxWireBytes)
	}
	var w wire
	if err := json.Unmarshal(b, &w); err != nil {
		return nil, fmt.Errorf("decode metrics snapshot: %w", err)
	}
	s := New(w.S)
	for k, v := range w.C {
		s.Counters[k] = v
	}
	for k, hb := range w.H {
		h, err := decodeHist([]byte(hb))
		if err != nil {
			return nil, fmt.Errorf("decode metrics snapshot histogram %q: %w", k, err)
		}
		s.Hists[k] = h
	}
	return s, nil
}

func decodeHist(b []byte) (h *hdrhistogram.Histogram, err error) {
	defer func() { // the decoder indexes into attacker-controlled sizes
		if r := recover(); r != nil {
			h, err = nil, fmt.Errorf("malformed HDR encoding: %v", r)
		}
	}()
	h, err = hdrhistogram.Decode(b)
	if err == nil && h == nil {
		err = fmt.Errorf("malformed HDR encoding")
	}
	return h, err
}
