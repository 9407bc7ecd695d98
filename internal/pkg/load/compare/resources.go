package compare

import (
	"slices"

	"github.com/forgeload/forgeload/internal/pkg/load"
	"github.com/forgeload/forgeload/internal/pkg/load/threshold"
)

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
// of each system under test present in new and in every earlier run.
// Resource readings are few and noisy, so a change counts as beyond
// noise over FallbackChange (and, with several earlier runs, beyond their
// run-to-run spread).
func resourceDeltas(runs []*Result, new *Result) []Delta {
	const why = "resource readings: beyond noise when over 5%"
	var ds []Delta
	for _, n := range new.SUT {
		cpus, mems := make([]float64, 0, len(runs)), make([]float64, 0, len(runs))
		for _, r := range runs {
			if i := slices.IndexFunc(r.SUT, func(o load.ResourceSummary) bool { return o.Target == n.Target }); i >= 0 {
				cpus = append(cpus, r.SUT[i].CPUCoresMean)
				mems = append(mems, r.SUT[i].MemBytesMax/(1<<20))
			}
		}
		if len(cpus) < len(runs) {
			continue
		}
		cpu := Delta{Metric: "sut_cpu:" + n.Target, Old: median(cpus), New: n.CPUCoresMean, Unit: "cores"}
		relativeFloor(&cpu, why)
		runNoise(&cpu, cpus)
		mem := Delta{Metric: "sut_mem:" + n.Target, Old: median(mems), New: n.MemBytesMax / (1 << 20), Unit: "MiB"}
		relativeFloor(&mem, why)
		runNoise(&mem, mems)
		ds = append(ds, cpu, mem)
	}
	return ds
}
