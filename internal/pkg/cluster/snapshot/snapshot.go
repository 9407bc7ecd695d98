package snapshot

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/forgeload/forgeload/internal/pkg/load"
)

// Version is the version of the wire form; [Unmarshal] refuses others.
// Version 1 keyed counters and histograms by strings such as
// "ep|<name>|status|200"; version 2 had no drop reasons, generator
// lateness or check counts; version 3 had no error messages (the
// endpoints' [load.Stats] Messages).
const Version = 4

// MaxWireBytes bounds the encoded size [Unmarshal] accepts.
const MaxWireBytes = 8 << 20

// Snapshot holds what the workers of a run measured in one run second (or,
// for totals, in the whole run): the engine's [load.Stats] overall and per
// endpoint, dropped arrivals by reason, the generator's lateness, the
// response checks' counts and requests in flight. The zero value is an
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
	// Dropped counts arrivals never sent, and DroppedBy splits it by
	// reason ([load.DropReason] names).
	Dropped   int64
	DroppedBy map[string]int64
	// GeneratorLate counts arrivals the generator sent late while a worker
	// was free, and GeneratorLateMax is the latest of them (the largest
	// over the merged snapshots); see [load.Snapshot].
	GeneratorLate    int64
	GeneratorLateMax time.Duration
	// Checks are the response checks' counts, in config order (merged by
	// name); nil without checks.
	Checks []load.CheckStats
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
	for k, v := range o.DroppedBy {
		if s.DroppedBy == nil {
			s.DroppedBy = make(map[string]int64, len(o.DroppedBy))
		}
		s.DroppedBy[k] += v
	}
	s.GeneratorLate += o.GeneratorLate
	s.GeneratorLateMax = max(s.GeneratorLateMax, o.GeneratorLateMax)
	s.Checks = mergeChecks(s.Checks, o.Checks)
	s.InFlight += o.InFlight
}

// mergeChecks adds o's counts to cs by name, keeping cs's order and
// appending the names it lacks.
func mergeChecks(cs, o []load.CheckStats) []load.CheckStats {
	for _, c := range o {
		i := slices.IndexFunc(cs, func(m load.CheckStats) bool { return m.Name == c.Name })
		if i < 0 {
			cs = append(cs, c)
			continue
		}
		cs[i].Passed += c.Passed
		cs[i].Failed += c.Failed
	}
	return cs
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
	DroppedBy map[string]int64     `json:"dropped_by,omitempty"`
	GenLate   int64                `json:"generator_late,omitempty"`
	GenLateNs int64                `json:"generator_late_max_ns,omitempty"`
	Checks    []load.CheckStats    `json:"checks,omitempty"`
	InFlight  int64                `json:"in_flight,omitempty"`
}

// MarshalBinary encodes s for the metrics stream.
func (s *Snapshot) MarshalBinary() ([]byte, error) {
	b, err := json.Marshal(wire{V: Version, S: s.Second, Stats: s.Stats, Endpoints: s.Endpoints, Dropped: s.Dropped, DroppedBy: s.DroppedBy,
		GenLate: s.GeneratorLate, GenLateNs: int64(s.GeneratorLateMax), Checks: s.Checks, InFlight: s.InFlight})
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
	return &Snapshot{Second: w.S, Stats: w.Stats, Endpoints: w.Endpoints, Dropped: w.Dropped, DroppedBy: w.DroppedBy,
		GeneratorLate: w.GenLate, GeneratorLateMax: time.Duration(w.GenLateNs), Checks: w.Checks, InFlight: w.InFlight}, nil
}
