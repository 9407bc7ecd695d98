package load

import (
	"context"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// Resources keeps the latest sample and the peak and mean of each target,
// under concurrent feeders, and the reports show them.
func TestResources(t *testing.T) {
	t.Parallel()
	var r Resources
	t0 := time.Unix(0, 0)
	var wg sync.WaitGroup
	for _, target := range []string{"api", "db"} {
		wg.Go(func() {
			for i := range 4 {
				r.Observe(ResourceSample{Target: target, Time: t0.Add(time.Duration(i) * time.Second), Interval: 900 * time.Millisecond,
					CPUCores: float64(i) / 4, CPULimitCores: 1, MemBytes: uint64(i+1) << 20, MemLimitBytes: 64 << 20,
					NetRxBytes: uint64(100 * i), NetTxBytes: uint64(200 * i)})
			}
		})
	}
	wg.Wait()
	sums := r.Summaries()
	if len(sums) != 2 {
		t.Fatalf("Summaries() = %+v, want 2 targets", sums)
	}
	for _, s := range sums {
		if s.Samples != 4 || s.SampledSeconds != 3.6 || s.CPUCoresMax != 0.75 || s.CPUCoresMean != 0.375 || s.CPUPctMax != 75 ||
			s.MemBytesMax != 4<<20 || s.MemBytesMean != 2.5*(1<<20) || s.NetRxBytes != 300 || s.NetTxBytes != 600 {
			t.Errorf("summary = %+v", s)
		}
	}
	if l := r.Latest(); len(l) != 2 || l[0].CPUCores != 0.75 {
		t.Errorf("Latest() = %+v, want the fourth samples", l)
	}
	if w, ok := Worst(sums, func(s ResourceSummary) float64 { return s.MemBytesMax }); !ok || w.MemBytesMax != 4<<20 {
		t.Errorf("Worst = %+v, %v", w, ok)
	}

	line := FormatProgress(Progress{Elapsed: time.Second, SUT: r.Latest()[:1]})
	if !strings.HasSuffix(line, "  sut "+sums[0].Target+" cpu 0.75 cores (75.00%) mem 4.0 MiB") {
		t.Errorf("FormatProgress = %q, want the SUT at its end", line)
	}
}

// A run with Options.Resources shows the latest samples in its progress
// lines and their summary in its result, whoever feeds them.
func TestRunReportsResources(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var res Resources
		var progress []Progress
		req := RequesterFunc(func(ctx context.Context) error {
			res.Observe(ResourceSample{Target: "api", CPUCores: 0.5, CPULimitCores: 1, MemBytes: 1 << 20})
			return nil
		})
		out, err := Run(t.Context(), Options{Requester: req, Concurrency: 1, Rate: 10, Duration: 2 * time.Second,
			Resources: &res, ProgressInterval: time.Second, Progress: func(p Progress) { progress = append(progress, p) }})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.SUT) != 1 || out.SUT[0].Target != "api" || out.SUT[0].Samples != 20 || out.SUT[0].CPUPctMax != 50 {
			t.Fatalf("result SUT = %+v, want api with 20 samples at 50%%", out.SUT)
		}
		if len(progress) == 0 || len(progress[0].SUT) != 1 || progress[0].SUT[0].CPUCores != 0.5 {
			t.Fatalf("progress = %+v, want the latest api sample", progress)
		}
	})
}
