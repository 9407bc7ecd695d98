package snapshot

import (
	"encoding/json"
	"fmt"

	"github.com/forgeload/forgeload/internal/pkg/load"
)

// Version is the version of the wire form; [Unmarshal] refuses others.
// Version 1 keyed counters and histograms by strings such as
// "ep|<name>|status|200".
const Version = 2

// MaxWireBytes bounds the encoded size [Unmarshal] accepts.
const MaxWireBytes = 8 << 20

// Snapshot holds what the workers of a run measured in one run second (or,
// for totals, in the whole run): the engine's [load.Stats] overall and per
// endpoint, dropped arrivals and requests in flight. The zero value is an
// empty snapshot of second 0; [New] sets the second. A Snapshot is not safe
// for concurrent use.
type Snapshot struct {
	// Second is the run second, counted from the run's start_at; -1 marks
	// a cumulative total.
	Second int
	// Stats are every request's measurements, latency histogram included.
	load.Stats
	// Endpoints are the per-endpoint Stats, in the plan's endpoint order
	// (every worker builds the same plan, so merging keeps that order).
	Endpoints []load.EndpointStats
	// Dropped counts arrivals dropped because every worker was busy.
	Dropped int64
	// InFlight is the number of requests in flight at the end of the
	// second, summed over workers.
	InFlight int64
}

// New returns an empty snapshot for run second sec.
func New(sec int) *Snapshot { return &Snapshot{Second: sec} }

// Merge adds o's counts and histograms into s, endpoint by endpoint (by
// name; an endpoint s lacks is appended). o is not modified.
func (s *Snapshot) Merge(o *Snapshot) {
	s.Stats.Merge(&o.Stats)
	for i := range o.Endpoints {
		e := &o.Endpoints[i]
		mine := s.endpoint(e.Name)
		mine.Merge(&e.Stats)
	}
	s.Dropped += o.Dropped
	s.InFlight += o.InFlight
}

func (s *Snapshot) endpoint(name string) *load.Stats {
	for i := range s.Endpoints {
		if s.Endpoints[i].Name == name {
			return &s.Endpoints[i].Stats
		}
	}
	s.Endpoints = append(s.Endpoints, load.EndpointStats{Name: name})
	return &s.Endpoints[len(s.Endpoints)-1].Stats
}

// Clone returns a deep copy of s.
func (s *Snapshot) Clone() *Snapshot {
	c := New(s.Second)
	c.Merge(s)
	return c
}

// Samples is the number of latency samples s holds: the requests measured.
func (s *Snapshot) Samples() int64 {
	if s.Latency == nil {
		return 0
	}
	return s.Latency.Count()
}

// wire is the encoded form: versioned JSON whose histograms are HDR
// V2-compressed encodings in base64 ([load.Histogram.MarshalJSON]).
type wire struct {
	V         int                  `json:"v"`
	S         int                  `json:"s"`
	Stats     load.Stats           `json:"stats"`
	Endpoints []load.EndpointStats `json:"endpoints,omitempty"`
	Dropped   int64                `json:"dropped,omitempty"`
	InFlight  int64                `json:"in_flight,omitempty"`
}

// MarshalBinary encodes s for the metrics stream.
func (s *Snapshot) MarshalBinary() ([]byte, error) {
	b, err := json.Marshal(wire{V: Version, S: s.Second, Stats: s.Stats, Endpoints: s.Endpoints, Dropped: s.Dropped, InFlight: s.InFlight})
	if err != nil {
		return nil, fmt.Errorf("encode metrics snapshot: %w", err)
	}
	return b, nil
}

// Unmarshal decodes a snapshot written by [Snapshot.MarshalBinary]. It
// rejects inputs over [MaxWireBytes], another version (a worker running a
// different forgeload) and histograms that fail to decode.
func Unmarshal(b []byte) (s *Snapshot, err error) {
	if len(b) > MaxWireBytes {
		return nil, fmt.Errorf("decode metrics snapshot: %d bytes exceeds the %d byte limit", len(b), MaxWireBytes)
	}
	defer func() { // the HDR decoder indexes into attacker-controlled sizes
		if r := recover(); r != nil {
			s, err = nil, fmt.Errorf("decode metrics snapshot: malformed HDR encoding: %v", r)
		}
	}()
	var head struct {
		V int `json:"v"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return nil, fmt.Errorf("decode metrics snapshot: %w", err)
	}
	if head.V != Version {
		return nil, fmt.Errorf("decode metrics snapshot: version %d, this runner understands %d: run the same forgeload version on every cluster member", head.V, Version)
	}
	var w wire
	if err := json.Unmarshal(b, &w); err != nil {
		return nil, fmt.Errorf("decode metrics snapshot: %w", err)
	}
	return &Snapshot{Second: w.S, Stats: w.Stats, Endpoints: w.Endpoints, Dropped: w.Dropped, InFlight: w.InFlight}, nil
}
