package load

import (
	"slices"
	"sync"
	"time"
)

// ResourceSample is one reading of the resource use of a system under test
// (one service container), taken outside the engine, about once a second.
type ResourceSample struct {
	// Target names what was measured, such as the job's service id.
	Target string `json:"target"`
	// Time is when it was read.
	Time time.Time `json:"time"`
	// Interval is the time since the previous reading, which CPUCores
	// covers; 0 when unknown.
	Interval time.Duration `json:"interval_ns,omitempty"`
	// CPUCores is the CPU used since the previous reading, in cores.
	CPUCores float64 `json:"cpu_cores"`
	// CPULimitCores is the CPU the target may use, in cores: its limit,
	// else the host's CPUs.
	CPULimitCores float64 `json:"cpu_limit_cores"`
	// MemBytes is the memory working set; MemLimitBytes its limit, else
	// the host's memory.
	MemBytes      uint64 `json:"mem_bytes"`
	MemLimitBytes uint64 `json:"mem_limit_bytes"`
	// Counters since the target started.
	NetRxBytes      uint64 `json:"net_rx_bytes"`
	NetTxBytes      uint64 `json:"net_tx_bytes"`
	BlockReadBytes  uint64 `json:"block_read_bytes"`
	BlockWriteBytes uint64 `json:"block_write_bytes"`
}

// CPUShare is CPUCores as a fraction of CPULimitCores (1 = at the limit),
// or 0 when the limit is unknown.
func (s ResourceSample) CPUShare() float64 {
	if s.CPULimitCores <= 0 {
		return 0
	}
	return s.CPUCores / s.CPULimitCores
}

// ResourceObserver receives resource samples of the system under test.
// The engine defines it so that whatever measures the target (a container
// runtime's stats stream) can feed a run without the engine knowing it.
type ResourceObserver interface {
	Observe(s ResourceSample)
}

var _ ResourceObserver = (*Resources)(nil)

// Resources records the resource samples of a run's targets: the latest
// of each for progress lines, and the peak and mean of each for the
// summary and thresholds. The zero value is ready to use; it is safe for
// concurrent use. Give it to [Options.Resources] and feed it with Observe.
type Resources struct {
	mu      sync.Mutex
	targets []*resourceAgg
}

type resourceAgg struct {
	first, last              ResourceSample
	n                        int
	covered                  time.Duration
	cpuMax, cpuSum           float64
	shareMax, shareSum       float64
	memMax, memSum, memLimit float64
}

// Observe records one sample.
func (r *Resources) Observe(s ResourceSample) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var a *resourceAgg
	for _, t := range r.targets {
		if t.last.Target == s.Target {
			a = t
		}
	}
	if a == nil {
		a = &resourceAgg{first: s}
		r.targets = append(r.targets, a)
	}
	a.last = s
	a.n++
	a.covered += s.Interval
	a.cpuMax, a.cpuSum = max(a.cpuMax, s.CPUCores), a.cpuSum+s.CPUCores
	share := s.CPUShare()
	a.shareMax, a.shareSum = max(a.shareMax, share), a.shareSum+share
	mem := float64(s.MemBytes)
	a.memMax, a.memSum, a.memLimit = max(a.memMax, mem), a.memSum+mem, float64(s.MemLimitBytes)
}

// Latest returns the last sample of every target, in the order targets
// were first seen.
func (r *Resources) Latest() []ResourceSample {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]ResourceSample, 0, len(r.targets))
	for _, a := range r.targets {
		out = append(out, a.last)
	}
	return out
}

// ResourceSummary is one target's resource use over a run: what the
// summary shows and sut_cpu/sut_mem thresholds check.
type ResourceSummary struct {
	Target  string `json:"target"`
	Samples int    `json:"samples"`
	// SampledSeconds is how much of the run the samples' intervals cover
	// (0 when the sampler does not say): peaks and means describe that
	// time only.
	SampledSeconds float64 `json:"sampled_seconds"`
	// CPU in cores, and as a percentage of the limit (100 = at the limit).
	CPUCoresMax   float64 `json:"cpu_cores_max"`
	CPUCoresMean  float64 `json:"cpu_cores_mean"`
	CPULimitCores float64 `json:"cpu_limit_cores"`
	CPUPctMax     float64 `json:"cpu_pct_max"`
	CPUPctMean    float64 `json:"cpu_pct_mean"`
	// Memory working set in bytes, and its limit.
	MemBytesMax   float64 `json:"mem_bytes_max"`
	MemBytesMean  float64 `json:"mem_bytes_mean"`
	MemLimitBytes float64 `json:"mem_limit_bytes"`
	// I/O during the run: the growth of the counters from the first
	// sample to the last.
	NetRxBytes      uint64 `json:"net_rx_bytes"`
	NetTxBytes      uint64 `json:"net_tx_bytes"`
	BlockReadBytes  uint64 `json:"block_read_bytes"`
	BlockWriteBytes uint64 `json:"block_write_bytes"`
}

// MemPctMax is the peak working set as a percentage of the memory limit.
func (s ResourceSummary) MemPctMax() float64 {
	if s.MemLimitBytes <= 0 {
		return 0
	}
	return 100 * s.MemBytesMax / s.MemLimitBytes
}

// Summaries returns each target's summary, in the order targets were first
// seen; nil when nothing was observed.
func (r *Resources) Summaries() []ResourceSummary {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []ResourceSummary
	for _, a := range r.targets {
		n := float64(a.n)
		out = append(out, ResourceSummary{
			Target: a.last.Target, Samples: a.n, SampledSeconds: a.covered.Seconds(),
			CPUCoresMax: a.cpuMax, CPUCoresMean: a.cpuSum / n, CPULimitCores: a.last.CPULimitCores,
			CPUPctMax: 100 * a.shareMax, CPUPctMean: 100 * a.shareSum / n,
			MemBytesMax: a.memMax, MemBytesMean: a.memSum / n, MemLimitBytes: a.memLimit,
			NetRxBytes: grow(a.first.NetRxBytes, a.last.NetRxBytes), NetTxBytes: grow(a.first.NetTxBytes, a.last.NetTxBytes),
			BlockReadBytes: grow(a.first.BlockReadBytes, a.last.BlockReadBytes), BlockWriteBytes: grow(a.first.BlockWriteBytes, a.last.BlockWriteBytes),
		})
	}
	return out
}

func grow(a, b uint64) uint64 {
	if b < a {
		return 0
	}
	return b - a
}

// Worst returns the summary with the highest value of f, and false when
// there is none; thresholds without a target selector check the worst
// target.
func Worst(sums []ResourceSummary, f func(ResourceSummary) float64) (ResourceSummary, bool) {
	if len(sums) == 0 {
		return ResourceSummary{}, false
	}
	return slices.MaxFunc(sums, func(a, b ResourceSummary) int {
		switch fa, fb := f(a), f(b); {
		case fa < fb:
			return -1
		case fa > fb:
			return 1
		}
		return 0
	}), true
}
