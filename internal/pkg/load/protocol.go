package load

import (
	"maps"
	"slices"
	"sync"
	"time"
)

// ProtocolStats are what a protocol driver measures beside the per-request
// [Stats]: counters such as messages_sent or close_1000, and timing
// histograms such as connect or message_rtt. They merge exactly, like Stats.
// The zero value is empty. ProtocolStats are not safe for concurrent use;
// drivers collect them with a [ProtocolRecorder].
type ProtocolStats struct {
	// Protocol names the driver: websocket, sse or grpc.
	Protocol string `json:"protocol"`
	// Counters are named counts.
	Counters map[string]int64 `json:"counters,omitempty"`
	// Timings are named latency histograms.
	Timings map[string]*Histogram `json:"timings,omitempty"`
	// Endpoints are, in a mixed-protocol run (see [Result.Protocols]),
	// the names of the endpoints sent with this protocol; empty
	// otherwise.
	Endpoints []string `json:"endpoints,omitempty"`
}

// Merge adds o to p. Endpoints become the union of both lists, in order.
func (p *ProtocolStats) Merge(o *ProtocolStats) {
	if o == nil {
		return
	}
	if p.Protocol == "" {
		p.Protocol = o.Protocol
	}
	for _, e := range o.Endpoints {
		if !slices.Contains(p.Endpoints, e) {
			p.Endpoints = append(p.Endpoints, e)
		}
	}
	for k, v := range o.Counters {
		if p.Counters == nil {
			p.Counters = map[string]int64{}
		}
		p.Counters[k] += v
	}
	for k, h := range o.Timings {
		if p.Timings == nil {
			p.Timings = map[string]*Histogram{}
		}
		if p.Timings[k] == nil {
			p.Timings[k] = NewHistogram()
		}
		p.Timings[k].Merge(h)
	}
}

// ProtocolRecorder collects [ProtocolStats] from many goroutines. The zero
// value is not ready: use [NewProtocolRecorder].
type ProtocolRecorder struct {
	mu sync.Mutex
	s  ProtocolStats
}

// ProtocolMeter is a driver with protocol-level measurements (gRPC,
// WebSocket, SSE): it returns them, a copy, after the run.
type ProtocolMeter interface {
	ProtocolStats() *ProtocolStats
}

// NewProtocolRecorder returns an empty recorder for the named protocol.
func NewProtocolRecorder(protocol string) *ProtocolRecorder {
	return &ProtocolRecorder{s: ProtocolStats{Protocol: protocol, Counters: map[string]int64{}, Timings: map[string]*Histogram{}}}
}

// Add adds n to the counter name.
func (r *ProtocolRecorder) Add(name string, n int64) {
	r.mu.Lock()
	r.s.Counters[name] += n
	r.mu.Unlock()
}

// Count is one counter's increment, for [ProtocolRecorder.AddCounts].
type Count struct {
	Name string
	N    int64
}

// AddCounts adds every non-zero count under one lock: a driver that counts
// per message tallies a session and records it once, so that workers do
// not queue on the recorder for every message.
func (r *ProtocolRecorder) AddCounts(cs ...Count) {
	r.mu.Lock()
	for _, c := range cs {
		if c.N != 0 {
			r.s.Counters[c.Name] += c.N
		}
	}
	r.mu.Unlock()
}

// Time records d in the histogram name.
func (r *ProtocolRecorder) Time(name string, d time.Duration) {
	r.mu.Lock()
	h := r.s.Timings[name]
	if h == nil {
		h = NewHistogram()
		r.s.Timings[name] = h
	}
	h.Record(d)
	r.mu.Unlock()
}

// Stats returns a copy of what was recorded so far.
func (r *ProtocolRecorder) Stats() *ProtocolStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := &ProtocolStats{Protocol: r.s.Protocol, Counters: maps.Clone(r.s.Counters), Timings: make(map[string]*Histogram, len(r.s.Timings))}
	for k, h := range r.s.Timings {
		out.Timings[k] = h.Clone()
	}
	return out
}

// MergeProtocols adds the per-protocol list o to p (see
// [Result.Protocols]), merging the entries of one protocol, and returns
// it: entries of a protocol p has not yet are appended, as copies.
func MergeProtocols(p, o []*ProtocolStats) []*ProtocolStats {
	for _, x := range o {
		i := slices.IndexFunc(p, func(y *ProtocolStats) bool { return y.Protocol == x.Protocol })
		if i < 0 {
			p = append(p, &ProtocolStats{Protocol: x.Protocol})
			i = len(p) - 1
		}
		p[i].Merge(x)
	}
	return p
}
