package threshold

import (
	"fmt"
)

// The validity metrics: whether the run delivered the load it was asked
// for. They name their unit like the failure rate: a rate or a ratio is a
// percentage (1%) or a plain fraction (0.01).
const (
	// MetricDropped counts the arrivals never sent (count), or their share
	// of all arrivals, sent or not (rate).
	MetricDropped = "dropped"
	// MetricLate counts the requests sent more than 1 ms after their
	// intended time (count), or their share of the requests (rate).
	MetricLate = "late"
	// MetricAchieved is the achieved rate over the asked one (value), in
	// the open model: achieved_ratio:value >= 99%.
	MetricAchieved = "achieved_ratio"
)

// ArrivalMetrics is what the validity metrics read. The engine's result
// implements it beside [Metrics]; a source without it (a baseline) cannot
// evaluate them.
type ArrivalMetrics interface {
	// Dropped returns the arrivals never sent.
	Dropped() int64
	// Late returns the requests sent late.
	Late() int64
	// AchievedRatio returns the achieved rate over the asked one, and
	// false when no rate was asked (closed model).
	AchievedRatio() (float64, bool)
}

// isArrival reports whether t checks a validity metric.
func (t Threshold) isArrival() bool {
	return t.Metric == MetricDropped || t.Metric == MetricLate || t.Metric == MetricAchieved
}

// perEndpoint reports whether metric can be selected per endpoint.
func perEndpoint(metric string) bool {
	return metric != MetricDropped && metric != MetricAchieved
}

// achievedValue reads the bound of achieved_ratio: a percentage (99%,
// 120% for a run asked to exceed its rate) or a plain fraction up to 1
// (0.99). A plain number above 1 is refused: it is a percentage missing
// its sign.
func (p *parser) achievedValue(at, unitAt int, unit string, v float64) (float64, error) {
	switch unit {
	case "%":
		return v / 100, nil
	case "":
		if v > 1 {
			return 0, p.errorf(at, "the achieved ratio has no unit, and a plain number above 1 is not a fraction: %s", rateFix(p.src[at:unitAt], v))
		}
		return v, nil
	}
	return 0, p.errorf(unitAt, "unknown unit %s for the achieved ratio: want %% (99%%) or a plain fraction (0.99)", fragment(unit))
}

// measureArrivals measures a validity metric.
func measureArrivals(t Threshold, src Source) (float64, error) {
	var m Metrics
	if t.Endpoint == "" {
		m = src.Overall()
	} else {
		var ok bool
		if m, ok = src.Endpoint(t.Endpoint); !ok {
			return 0, fmt.Errorf("evaluate threshold %q: no endpoint named %q in the results; use a name from endpoints[].name in the load config", t.Source, t.Endpoint)
		}
	}
	a, ok := m.(ArrivalMetrics)
	if !ok {
		return 0, fmt.Errorf("evaluate threshold %q: %s was not measured for these results", t.Source, t.Metric)
	}
	switch t.Metric {
	case MetricAchieved:
		r, ok := a.AchievedRatio()
		if !ok {
			return 0, fmt.Errorf("evaluate threshold %q: no rate was asked (closed model), so the achieved ratio is undefined: use it with rate or load_patterns", t.Source)
		}
		return r, nil
	case MetricDropped:
		if t.Aggregate == "count" {
			return float64(a.Dropped()), nil
		}
		if all := m.Requests() + a.Dropped(); all > 0 {
			return float64(a.Dropped()) / float64(all), nil
		}
		return 0, nil
	default: // late
		if t.Aggregate == "count" {
			return float64(a.Late()), nil
		}
		if m.Requests() > 0 {
			return float64(a.Late()) / float64(m.Requests()), nil
		}
		return 0, nil
	}
}
