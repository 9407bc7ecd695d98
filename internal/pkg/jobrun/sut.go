package jobrun

import (
	"context"
	"net/netip"
	"strconv"
	"sync"

	"github.com/forgeload/forgeload/internal/pkg/container"
	"github.com/forgeload/forgeload/internal/pkg/load"
)

// serviceAddrs are the host addresses of the job's services' published
// ports, which the target policy allows.
func (j *job) serviceAddrs() []netip.AddrPort {
	var out []netip.AddrPort
	loop := netip.AddrFrom4([4]byte{127, 0, 0, 1})
	for _, s := range j.services {
		for _, hp := range s.ports {
			out = append(out, netip.AddrPortFrom(loop, uint16(hp)))
		}
	}
	return out
}

// sutRecorder is the recorder of the services' resource use for a load
// step, or nil when the job has no services.
func (j *job) sutRecorder() *load.Resources {
	if len(j.services) == 0 || j.deps.Containers == nil {
		return nil
	}
	return &load.Resources{}
}

// sampleServices streams every service's stats into obs until the
// returned stop is called; stop waits for the samplers to end.
func (j *job) sampleServices(ctx context.Context, obs load.ResourceObserver) (stop func()) {
	if obs == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, id := range j.wf.Job.ServiceIDs() {
		s := j.services[id]
		if s == nil {
			continue
		}
		wg.Go(func() {
			err := j.deps.Containers.Stats(ctx, s.cid, func(c container.Sample) {
				obs.Observe(load.ResourceSample{
					Target: s.id, Time: c.Time, Interval: c.Interval,
					CPUCores: c.CPUCores, CPULimitCores: c.CPULimitCores,
					MemBytes: c.MemBytes, MemLimitBytes: c.MemLimitBytes,
					NetRxBytes: c.NetRxBytes, NetTxBytes: c.NetTxBytes,
					BlockReadBytes: c.BlockReadBytes, BlockWriteBytes: c.BlockWriteBytes,
				})
			})
			if err != nil {
				j.deps.Logger.WithError(err).WithField("service", s.id).Warn("sample the service's resource use")
			}
		})
	}
	return func() {
		cancel()
		wg.Wait()
	}
}

// sutOutputs are the load step's outputs about the services' resources:
// the highest peak and mean over the job's services.
func sutOutputs(sums []load.ResourceSummary) map[string]string {
	if len(sums) == 0 {
		return nil
	}
	f := func(v float64, prec int) string { return strconv.FormatFloat(v, 'f', prec, 64) }
	worst := func(g func(load.ResourceSummary) float64) float64 {
		w, _ := load.Worst(sums, g)
		return g(w)
	}
	const mb = 1 << 20
	return map[string]string{
		"sut_cpu_max":       f(worst(func(s load.ResourceSummary) float64 { return s.CPUPctMax }), 1),
		"sut_cpu_mean":      f(worst(func(s load.ResourceSummary) float64 { return s.CPUPctMean }), 1),
		"sut_cpu_max_cores": f(worst(func(s load.ResourceSummary) float64 { return s.CPUCoresMax }), 3),
		"sut_mem_max_mb":    f(worst(func(s load.ResourceSummary) float64 { return s.MemBytesMax })/mb, 1),
		"sut_mem_mean_mb":   f(worst(func(s load.ResourceSummary) float64 { return s.MemBytesMean })/mb, 1),
	}
}
