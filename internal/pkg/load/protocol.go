package load

import (
	"maps"
	"slices"
	"strconv"
	"strings"
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

// ProtocolSummary is the reported view of [ProtocolStats]. In a
// mixed-protocol run ([Summary.Protocols]) it also has the endpoints sent
// with the protocol and their totals; those fields are absent otherwise.
type ProtocolSummary struct {
	Protocol  string             `json:"protocol"`
	Counters  map[string]int64   `json:"counters,omitempty"`
	Timings   map[string]Latency `json:"timings,omitempty"`
	Endpoints []string           `json:"endpoints,omitempty"`
	Requests  int64              `json:"requests,omitempty"`
	Errors    int64              `json:"errors,omitempty"`
	// Latency is of the protocol's endpoints' requests together, from
	// their merged histograms; nil outside a mixed-protocol run.
	Latency *Latency `json:"latency,omitempty"`
}

func summarizeProtocol(p *ProtocolStats) *ProtocolSummary {
	if p == nil {
		return nil
	}
	out := &ProtocolSummary{Protocol: p.Protocol, Counters: p.Counters}
	if len(p.Timings) > 0 {
		out.Timings = make(map[string]Latency, len(p.Timings))
		for k, h := range p.Timings {
			out.Timings[k] = latencyOf(&Stats{Latency: h})
		}
	}
	return out
}

// summarizeProtocols summarises a mixed-protocol run's list, each entry
// with the totals of its endpoints.
func summarizeProtocols(r *Result) []*ProtocolSummary {
	var out []*ProtocolSummary
	for _, p := range r.Protocols {
		ps := summarizeProtocol(p)
		ps.Endpoints = p.Endpoints
		var st Stats
		for _, name := range p.Endpoints {
			for i := range r.Endpoints {
				if r.Endpoints[i].Name == name {
					st.Merge(&r.Endpoints[i].Stats)
				}
			}
		}
		ps.Requests, ps.Errors = st.Requests, st.Errors
		l := latencyOf(&st)
		ps.Latency = &l
		out = append(out, ps)
	}
	return out
}

// ProtocolSections returns the protocol sections of s: the one protocol's
// ([Summary.Protocol]), or a mixed-protocol run's list, or none.
func (s *Summary) ProtocolSections() []*ProtocolSummary {
	if s.Protocol != nil {
		return []*ProtocolSummary{s.Protocol}
	}
	return s.Protocols
}

// protocolRows returns the summary rows of a protocol section.
func protocolRows(p *ProtocolSummary) [][2]string {
	var rows [][2]string
	if len(p.Endpoints) > 0 {
		rows = append(rows, [2]string{"Endpoints", strings.Join(p.Endpoints, ", ")})
		rate := "0%"
		if p.Requests > 0 {
			rate = FormatPercent(float64(p.Errors) / float64(p.Requests))
		}
		rows = append(rows, [2]string{"Requests / errors", strconv.FormatInt(p.Requests, 10) + " / " + strconv.FormatInt(p.Errors, 10) + " (" + rate + ")"})
		if p.Latency != nil {
			rows = append(rows, [2]string{"Latency p50 / p99 / max", fmtMS(p.Latency.P50) + " / " + fmtMS(p.Latency.P99) + " / " + fmtMS(p.Latency.Max)})
		}
	}
	for _, k := range slices.Sorted(maps.Keys(p.Timings)) {
		l := p.Timings[k]
		rows = append(rows, [2]string{k + " p50 / p99 / max", fmtMS(l.P50) + " / " + fmtMS(l.P99) + " / " + fmtMS(l.Max)})
	}
	if len(p.Counters) > 0 {
		rows = append(rows, [2]string{"Counters", fmtCounts(p.Counters)})
	}
	return rows
}
