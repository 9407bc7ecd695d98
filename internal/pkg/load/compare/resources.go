package compare

import "github.com/forgeload/forgeload/internal/pkg/load/threshold"

// Resources returns the systems under test measured in the run, for
// sut_cpu and sut_mem thresholds against a baseline.
func (r *Result) Resources() map[string]threshold.ResourceMetrics {
	if len(r.SUT) == 0 {
		return nil
	}
	out := make(map[string]threshold.ResourceMetrics, len(r.SUT))
	for _, s := range r.SUT {
		out[s.Target] = threshold.ResourceMetrics{
			CPUCoresMax: s.CPUCoresMax, CPUCoresMean: s.CPUCoresMean,
			CPUShareMax: s.CPUPctMax / 100, CPUShareMean: s.CPUPctMean / 100,
			MemBytesMax: s.MemBytesMax, MemBytesMean: s.MemBytesMean, MemLimitBytes: s.MemLimitBytes,
		}
	}
	return out
}

// resourceDeltas compares the mean CPU (cores) and the peak memory (MiB)
// of each system under test present in both results. Resource readings
// are few and noisy, so a change counts as beyond noise over
// FallbackChange.
func resourceDeltas(old, new *Result) []Delta {
	const why = "resource readings: beyond noise when over 5%"
	var ds []Delta
	for _, o := range old.SUT {
		for _, n := range new.SUT {
			if n.Target != o.Target {
				continue
			}
			cpu := Delta{Metric: "sut_cpu:" + o.Target, Old: o.CPUCoresMean, New: n.CPUCoresMean, Unit: "cores"}
			relativeFloor(&cpu, why)
			mem := Delta{Metric: "sut_mem:" + o.Target, Old: o.MemBytesMax / (1 << 20), New: n.MemBytesMax / (1 << 20), Unit: "MiB"}
			relativeFloor(&mem, why)
			ds = append(ds, cpu, mem)
		}
	}
	return ds
}
