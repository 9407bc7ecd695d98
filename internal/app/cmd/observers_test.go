package cmd

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/forgeload/forgeload/internal/pkg/load"
	"github.com/forgeload/forgeload/internal/pkg/load/outcome/summary"
	"github.com/forgeload/forgeload/internal/pkg/metrics"
)

// gathered sums the samples of metric name on reg whose labels include
// every one of want; a histogram counts its observations.
func gathered(t *testing.T, reg prometheus.Gatherer, name string, want map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, mt := range mf.GetMetric() {
			have := map[string]string{}
			for _, lp := range mt.GetLabel() {
				have[lp.GetName()] = lp.GetValue()
			}
			for k, v := range want {
				if have[k] != v {
					continue next
				}
			}
			switch {
			case mt.GetCounter() != nil:
				sum += mt.GetCounter().GetValue()
			case mt.GetGauge() != nil:
				sum += mt.GetGauge().GetValue()
			case mt.GetHistogram() != nil:
				sum += float64(mt.GetHistogram().GetSampleCount())
			}
		}
	}
	return sum
}

// TestLoadObserverCountsEveryProtocol: requests of a gRPC or WebSocket run,
// whose successes carry no status code, are counted under their protocol.
func TestLoadObserverCountsEveryProtocol(t *testing.T) {
	parallel(t)
	reg := prometheus.NewRegistry()
	m := metrics.New(reg, "test", "r")
	obs := newLoadObserver(m, nil)()
	obs.LoadStarted(metrics.ProtocolGRPC, 0, nil, nil)
	obs.Second(&load.Snapshot{Stats: load.Stats{Requests: 5, Errors: 3, Classes: map[string]int64{"grpc_unavailable": 2, "timeout": 1}}})
	obs.LoadDone()
	for result, want := range map[string]float64{metrics.LoadOK: 2, metrics.LoadError: 2, metrics.LoadTimeout: 1} {
		if got := gathered(t, reg, "forgeload_load_requests_total", map[string]string{"protocol": metrics.ProtocolGRPC, "result": result}); got != want {
			t.Errorf("grpc/%s = %v, want %v", result, got, want)
		}
	}
	if got := gathered(t, reg, "forgeload_load_requests_total", map[string]string{"protocol": metrics.ProtocolHTTP}); got != 0 {
		t.Errorf("http = %v: a gRPC run was counted as HTTP", got)
	}
}

// TestLoadResultFollowsEngineClasses: the engine's class names, whatever
// their spelling, land on the metric's result labels; canceled requests are
// counted as cancelled, not as errors.
func TestLoadResultFollowsEngineClasses(t *testing.T) {
	parallel(t)
	for class, want := range map[load.ErrorClass]string{
		load.ClassTimeout:  metrics.LoadTimeout,
		load.ClassCanceled: metrics.LoadCancelled,
		load.ClassHTTP4xx:  metrics.LoadHTTP4xx,
		load.ClassHTTP5xx:  metrics.LoadHTTP5xx,
		load.ClassNetwork:  metrics.LoadError,
		load.GRPCClass(14): metrics.LoadError,
		load.ClassCheck:    metrics.LoadCheck,
	} {
		if got := loadResult(class.String()); got != want {
			t.Errorf("loadResult(%q) = %q, want %q", class, got, want)
		}
	}
	reg := prometheus.NewRegistry()
	m := metrics.New(reg, "test", "r")
	obs := newLoadObserver(m, nil)()
	obs.LoadStarted(metrics.ProtocolHTTP, 0, nil, nil)
	obs.Second(&load.Snapshot{Stats: load.Stats{Requests: 3, Errors: 3, Classes: map[string]int64{
		load.ClassCanceled.String(): 2, load.ClassHTTP5xx.String(): 1}, Status: map[int]int64{503: 1}}})
	obs.LoadDone()
	for result, want := range map[string]float64{metrics.LoadCancelled: 2, metrics.LoadHTTP5xx: 1, metrics.LoadError: 0} {
		if got := gathered(t, reg, "forgeload_load_requests_total", map[string]string{"protocol": metrics.ProtocolHTTP, "result": result}); got != want {
			t.Errorf("http/%s = %v, want %v", result, got, want)
		}
	}
}

// TestLoadObserverLabels: a job's load step is counted under its workflow
// job, step and endpoint names, with the job's secrets masked; a share of a
// multi-host run, which has no names, under (cluster); and the gauges go
// back to 0 when the step ends.
func TestLoadObserverLabels(t *testing.T) {
	parallel(t)
	reg := prometheus.NewRegistry()
	m := metrics.New(reg, "test", "r")
	mask := func(s string) string { return strings.ReplaceAll(s, "s3cret", "***") }
	obs := newLoadObserver(m, nil)()
	obs.LoadStarted(metrics.ProtocolHTTP, 50, &summary.RunInfo{Job: "perf", Step: "soak s3cret"}, mask)
	home := load.Stats{Requests: 4, Status: map[int]int64{200: 3, 500: 1}, Latency: load.NewHistogram()}
	for range 4 {
		home.Latency.Record(3 * time.Millisecond)
	}
	obs.Second(&load.Snapshot{
		Stats:     load.Stats{Requests: 6, Errors: 1},
		Endpoints: []load.EndpointStats{{Name: "home", Stats: home}, {Name: "key=s3cret", Stats: load.Stats{Requests: 2, Status: map[int]int64{200: 2}}}},
		InFlight:  3, Dropped: 2,
	})
	job := map[string]string{metrics.LabelJob: "perf", metrics.LabelStep: "soak ***"}
	with := func(k, v string) map[string]string {
		out := map[string]string{k: v}
		for k, v := range job {
			out[k] = v
		}
		return out
	}
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"forgeload_load_requests_total", with("endpoint", "home"), 4},
		{"forgeload_load_requests_total", with("result", metrics.LoadHTTP5xx), 1},
		{"forgeload_load_requests_total", with("endpoint", "key=***"), 2},
		{"forgeload_load_request_duration_seconds", with("endpoint", "home"), 4},
		{"forgeload_load_target_rate", job, 50},
		{"forgeload_load_inflight", job, 3},
		{"forgeload_load_dropped_total", job, 2},
	} {
		if got := gathered(t, reg, c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	obs.LoadDone()
	for _, name := range []string{"forgeload_load_target_rate", "forgeload_load_inflight"} {
		if got := gathered(t, reg, name, job); got != 0 {
			t.Errorf("%s after the step = %v, want 0", name, got)
		}
	}
	seg := newLoadObserver(m, nil)()
	seg.LoadStarted(metrics.ProtocolHTTP, 10, nil, nil)
	seg.Second(&load.Snapshot{Endpoints: []load.EndpointStats{{Name: "home", Stats: load.Stats{Requests: 1, Status: map[int]int64{200: 1}}}}})
	seg.LoadDone()
	cluster := map[string]string{metrics.LabelJob: metrics.LabelCluster, metrics.LabelStep: metrics.LabelCluster, "endpoint": "home"}
	if got := gathered(t, reg, "forgeload_load_requests_total", cluster); got != 1 {
		t.Errorf("a segment's requests under %v = %v, want 1", cluster, got)
	}
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		for _, mt := range mf.GetMetric() {
			for _, lp := range mt.GetLabel() {
				if strings.Contains(lp.GetValue(), "s3cret") {
					t.Errorf("%s has the secret in label %s=%q", mf.GetName(), lp.GetName(), lp.GetValue())
				}
			}
		}
	}
}
