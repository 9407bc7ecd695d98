package threshold

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
)

// Metrics is the part of a load-test result that evaluation reads. The
// engine's result implements it; tests use small fakes.
type Metrics interface {
	// Requests returns the number of requests that completed, failed or not.
	Requests() int64
	// Failures returns the number of failed requests.
	Failures() int64
	// Elapsed returns the measured duration of the run, used for rates.
	Elapsed() time.Duration
	// LatencyPercentile returns the latency at percentile p in [0,100].
	LatencyPercentile(p float64) time.Duration
	// LatencyMin returns the smallest recorded latency.
	LatencyMin() time.Duration
	// LatencyMax returns the largest recorded latency.
	LatencyMax() time.Duration
	// LatencyMean returns the mean recorded latency.
	LatencyMean() time.Duration
}

// Source gives the overall metrics of a run and those of each named
// endpoint.
type Source interface {
	// Overall returns the metrics over all requests.
	Overall() Metrics
	// Endpoint returns the metrics of the endpoint with that name, and
	// false when no endpoint has that name.
	Endpoint(name string) (Metrics, bool)
	// Resources returns the metrics of each system under test the run
	// measured, by name, for sut_cpu and sut_mem thresholds; it is empty
	// when nothing was measured.
	Resources() map[string]ResourceMetrics
}

// CheckSource is a [Source] that also counts response checks: the passes
// and failures of every check of the run together. A Source without it
// ran no checks.
type CheckSource interface {
	CheckTotals() (passed, failed int64)
}

// measureChecks is the share of check evaluations that passed. A run
// that evaluated no check has no such share: the threshold fails rather
// than pass on nothing.
func measureChecks(t Threshold, src Source) (float64, error) {
	var p, f int64
	if cs, ok := src.(CheckSource); ok {
		p, f = cs.CheckTotals()
	}
	if p+f == 0 {
		return 0, fmt.Errorf("evaluate threshold %q: no response check ran: add checks: to the load config (see docs/load-config.md), or remove this threshold", t.Source)
	}
	return float64(p) / float64(p+f), nil
}

// ResourceMetrics is one system under test's resource use over a run.
type ResourceMetrics struct {
	// CPU in cores, and as a fraction of the CPU limit.
	CPUCoresMax, CPUCoresMean, CPUShareMax, CPUShareMean float64
	// Memory working set in bytes, and its limit (0 when unknown).
	MemBytesMax, MemBytesMean, MemLimitBytes float64
}

// Outcome is the result of evaluating one threshold.
type Outcome struct {
	// Threshold is the threshold that was evaluated.
	Threshold Threshold
	// Actual is the measured value, in the threshold's canonical unit.
	Actual float64
	// Passed reports whether Actual satisfied the threshold. It is false
	// whenever Err is set.
	Passed bool
	// Err says why the threshold could not be evaluated, for example an
	// unknown endpoint or a run with no requests.
	Err error
	// Bound is the value Actual was compared with: the threshold's Value,
	// or BaselineValue times its Factor.
	Bound, BaselineValue float64
	// Skipped is set, with Passed, for a baseline threshold evaluated
	// without a baseline.
	Skipped bool
}

func measure(t Threshold, src Source) (float64, error) {
	if src == nil {
		return 0, fmt.Errorf("evaluate threshold %q: no results to evaluate", t.Source)
	}
	if t.Metric == MetricChecks {
		return measureChecks(t, src)
	}
	if t.Metric == MetricSUTCPU || t.Metric == MetricSUTMem {
		return measureSUT(t, src)
	}
	src, err := phaseOf(t, src)
	if err != nil {
		return 0, err
	}
	if t.isArrival() {
		return measureArrivals(t, src)
	}
	var m Metrics
	if t.Endpoint == "" {
		m = src.Overall()
	} else {
		var ok bool
		m, ok = src.Endpoint(t.Endpoint)
		if !ok {
			return 0, fmt.Errorf("evaluate threshold %q: no endpoint named %q in the results; use a name from endpoints[].name in the load config", t.Source, t.Endpoint)
		}
	}
	if m == nil {
		return 0, fmt.Errorf("evaluate threshold %q: no results to evaluate", t.Source)
	}
	switch t.Metric {
	case MetricDuration:
		if m.Requests() == 0 {
			return 0, fmt.Errorf("evaluate threshold %q: no requests were recorded, so %s is undefined", t.Source, t.Aggregate)
		}
		var d time.Duration
		switch t.Aggregate {
		case "avg":
			d = m.LatencyMean()
		case "min":
			d = m.LatencyMin()
		case "max":
			d = m.LatencyMax()
		default:
			p, ok := t.Percentile()
			if !ok {
				return 0, fmt.Errorf("evaluate threshold %q: aggregate %q is not valid for %s", t.Source, t.Aggregate, t.Metric)
			}
			d = m.LatencyPercentile(p)
		}
		return d.Seconds(), nil
	case MetricFailed:
		switch t.Aggregate {
		case "count":
			return float64(m.Failures()), nil
		case "rate":
			if m.Requests() == 0 {
				return 0, nil
			}
			return float64(m.Failures()) / float64(m.Requests()), nil
		}
	case MetricRequests:
		switch t.Aggregate {
		case "count":
			return float64(m.Requests()), nil
		case "rate":
			el := m.Elapsed()
			if el <= 0 {
				return 0, fmt.Errorf("evaluate threshold %q: the run has no elapsed time, so the request rate is undefined", t.Source)
			}
			return float64(m.Requests()) / el.Seconds(), nil
		}
	}
	return 0, fmt.Errorf("evaluate threshold %q: unknown metric %s:%s; build thresholds with Parse", t.Source, t.Metric, t.Aggregate)
}

func measureSUT(t Threshold, src Source) (float64, error) {
	all := src.Resources()
	if len(all) == 0 {
		return 0, fmt.Errorf("evaluate threshold %q: the system under test was not measured: %s needs services: in the job, whose containers the Docker Engine samples about once a second during the load step (with services, no sample came: a step of a few seconds on a busy Docker host can end before the first one; run it longer)", t.Source, t.Metric)
	}
	value := func(m ResourceMetrics) (float64, error) {
		switch {
		case t.Metric == MetricSUTCPU && t.Unit == "%":
			return pick(t, m.CPUShareMax, m.CPUShareMean), nil
		case t.Metric == MetricSUTCPU:
			if err := bareCoresReachable(t, m); err != nil {
				return 0, err
			}
			return pick(t, m.CPUCoresMax, m.CPUCoresMean), nil
		case t.Unit == "%":
			if m.MemLimitBytes <= 0 {
				return 0, fmt.Errorf("evaluate threshold %q: the memory limit is unknown; write the bound as a size such as 512MB", t.Source)
			}
			return pick(t, m.MemBytesMax, m.MemBytesMean) / m.MemLimitBytes, nil
		default:
			return pick(t, m.MemBytesMax, m.MemBytesMean), nil
		}
	}
	if t.Service != "" {
		m, ok := all[t.Service]
		if !ok {
			names := make([]string, 0, len(all))
			for k := range all {
				names = append(names, k)
			}
			sort.Strings(names)
			return 0, fmt.Errorf("evaluate threshold %q: no service named %q was measured; measured: %s", t.Source, t.Service, strings.Join(names, ", "))
		}
		return value(m)
	}
	worst := math.Inf(-1)
	for _, m := range all {
		v, err := value(m)
		if err != nil {
			return 0, err
		}
		worst = max(worst, v)
	}
	return worst, nil
}

// bareCoresReachable refuses a sut_cpu upper bound written as a plain
// number of cores the service's CPU limit cannot reach (known from its
// cores and share of the limit): such a bound can never fail, and "< 80"
// was most likely meant as 80%.
func bareCoresReachable(t Threshold, m ResourceMetrics) error {
	if !t.BareCores || (t.Op != OpLess && t.Op != OpLessEqual) || m.CPUShareMax <= 0 {
		return nil
	}
	limit := m.CPUCoresMax / m.CPUShareMax
	if t.Value > limit || t.Op == OpLessEqual && t.Value >= limit {
		return fmt.Errorf("evaluate threshold %q: a plain number is cores, and %s cores can never be reached by a service limited to %s; write %s%% for a share of its limit, or %scores if cores are meant",
			t.Source, formatNumber(t.Value), formatNumber(math.Round(limit*100)/100), formatNumber(t.Value), formatNumber(t.Value))
	}
	return nil
}

func pick(t Threshold, maxV, meanV float64) float64 {
	if t.Aggregate == "max" {
		return maxV
	}
	return meanV
}

// compare applies op with a small relative tolerance for equality, so that
// values which differ only by float rounding compare equal.
func compare(actual float64, op string, want float64) bool {
	eq := math.Abs(actual-want) <= 1e-9*math.Max(1, math.Max(math.Abs(actual), math.Abs(want)))
	switch op {
	case OpLess:
		return actual < want && !eq
	case OpLessEqual:
		return actual < want || eq
	case OpGreater:
		return actual > want && !eq
	case OpGreaterEqual:
		return actual > want || eq
	case OpEqual:
		return eq
	case OpNotEqual:
		return !eq
	}
	return false
}

// FormatValue formats v, in t's canonical unit, for people: durations as
// µs, ms or s; failure rates as a percentage; request rates as "N/s";
// counts as whole numbers.
func FormatValue(t Threshold, v float64) string {
	switch t.kind() {
	case kindDuration:
		switch {
		case v < 1e-3:
			return fmt.Sprintf("%.0fµs", v*1e6)
		case v < 1:
			return fmt.Sprintf("%.1fms", v*1e3)
		default:
			return fmt.Sprintf("%.2fs", v)
		}
	case kindRatio, kindAchieved:
		return fmt.Sprintf("%.2f%%", v*100)
	case kindCount:
		return fmt.Sprintf("%.0f", v)
	case kindShare:
		return fmt.Sprintf("%.1f%%", v*100)
	case kindCores:
		return fmt.Sprintf("%.2f cores", v)
	case kindBytes:
		return fmt.Sprintf("%.1fMiB", v/(1<<20))
	default:
		return fmt.Sprintf("%.1f/s", v)
	}
}
