package container

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"time"

	ctypes "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// Sample is one reading of a container's resource use, from the Engine's
// stats stream (about one a second).
type Sample struct {
	// Time is when the Engine read the counters.
	Time time.Time
	// Interval is the time since the previous reading, which CPUCores
	// covers.
	Interval time.Duration
	// CPUCores is the CPU used since the previous reading, in cores (1.5 =
	// one and a half cores busy).
	CPUCores float64
	// CPULimitCores is the container's CPU limit in cores (--cpus, or
	// quota/period), else the CPUs the container can use.
	CPULimitCores float64
	// MemBytes is the working set: memory usage less the inactive file
	// cache, as `docker stats` shows it.
	MemBytes uint64
	// MemLimitBytes is the memory limit (--memory), else the host's memory.
	MemLimitBytes uint64
	// Net and block I/O counters since the container started.
	NetRxBytes, NetTxBytes          uint64
	BlockReadBytes, BlockWriteBytes uint64
}

// Stats streams the container's resource use to fn, one [Sample] per
// reading, until ctx ends (nil is returned) or the container stops (the
// stream ends; nil too). fn runs on the caller's goroutine.
func (e *Engine) Stats(ctx context.Context, id string, fn func(Sample)) error {
	limit := 0.0
	if res, err := e.cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{}); err == nil && res.Container.HostConfig != nil {
		limit = cpuLimit(res.Container.HostConfig.Resources)
	}
	res, err := e.cli.ContainerStats(ctx, id, client.ContainerStatsOptions{Stream: true})
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("stats of container %s: %w", short(id), err)
	}
	defer res.Body.Close()
	stop := context.AfterFunc(ctx, func() { res.Body.Close() })
	defer stop()
	dec := json.NewDecoder(res.Body)
	for {
		var s ctypes.StatsResponse
		if err := dec.Decode(&s); err != nil {
			if ctx.Err() != nil || errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("stats of container %s: %w", short(id), err)
		}
		if s.PreRead.IsZero() || s.Read.IsZero() {
			continue // the first reading has nothing to diff against
		}
		fn(toSample(&s, limit))
	}
}

// cpuLimit is the CPU cap in cores, or 0 for none.
func cpuLimit(r ctypes.Resources) float64 {
	switch {
	case r.NanoCPUs > 0:
		return float64(r.NanoCPUs) / 1e9
	case r.CPUQuota > 0 && r.CPUPeriod > 0:
		return float64(r.CPUQuota) / float64(r.CPUPeriod)
	}
	return 0
}

// toSample turns one stats frame into a Sample; limit is the CPU cap in
// cores, 0 for none.
func toSample(s *ctypes.StatsResponse, limit float64) Sample {
	out := Sample{Time: s.Read, Interval: max(s.Read.Sub(s.PreRead), 0)}
	online := float64(s.CPUStats.OnlineCPUs)
	if online == 0 {
		online = float64(len(s.CPUStats.CPUUsage.PercpuUsage))
	}
	if online == 0 {
		online = float64(runtime.NumCPU())
	}
	cpuDelta := float64(s.CPUStats.CPUUsage.TotalUsage) - float64(s.PreCPUStats.CPUUsage.TotalUsage)
	sysDelta := float64(s.CPUStats.SystemUsage) - float64(s.PreCPUStats.SystemUsage)
	switch {
	case cpuDelta <= 0:
	case sysDelta > 0:
		// The system counter sums every CPU's time: the share of it the
		// container used, times the CPUs, is cores.
		out.CPUCores = cpuDelta / sysDelta * online
	default:
		if dt := s.Read.Sub(s.PreRead); dt > 0 {
			out.CPUCores = cpuDelta / float64(dt.Nanoseconds())
		}
	}
	out.CPULimitCores = online
	if limit > 0 && limit < online {
		out.CPULimitCores = limit
	}
	m := s.MemoryStats
	out.MemBytes = m.Usage
	// cgroup v1 calls the inactive page cache total_inactive_file, v2
	// inactive_file.
	for _, k := range []string{"total_inactive_file", "inactive_file"} {
		if v, ok := m.Stats[k]; ok {
			if v < out.MemBytes {
				out.MemBytes -= v
			}
			break
		}
	}
	out.MemLimitBytes = m.Limit
	for _, n := range s.Networks {
		out.NetRxBytes += n.RxBytes
		out.NetTxBytes += n.TxBytes
	}
	for _, b := range s.BlkioStats.IoServiceBytesRecursive {
		switch strings.ToLower(b.Op) {
		case "read":
			out.BlockReadBytes += b.Value
		case "write":
			out.BlockWriteBytes += b.Value
		}
	}
	return out
}
