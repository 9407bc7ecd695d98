package cmd

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/forgeload/forgeload/internal/pkg/load"
	"github.com/forgeload/forgeload/internal/pkg/metrics"
)

// TestLoadObserverCountsEveryProtocol: requests of a gRPC or WebSocket run,
// whose successes carry no status code, are counted under their protocol.
func TestLoadObserverCountsEveryProtocol(t *testing.T) {
	parallel(t)
	m := metrics.New(prometheus.NewRegistry(), "test", "r")
	obs := newLoadObserver(m, nil)()
	obs.LoadStarted(metrics.ProtocolGRPC, 0, nil, nil)
	obs.Second(&load.Snapshot{Stats: load.Stats{Requests: 5, Errors: 3, Classes: map[string]int64{"grpc_unavailable": 2, "timeout": 1}}})
	obs.LoadDone()
	for result, want := range map[string]float64{metrics.LoadOK: 2, metrics.LoadError: 2, metrics.LoadTimeout: 1} {
		if got := testutil.ToFloat64(m.LoadRequestsTotal.WithLabelValues(metrics.ProtocolGRPC, result)); got != want {
			t.Errorf("grpc/%s = %v, want %v", result, got, want)
		}
	}
	if got := testutil.ToFloat64(m.LoadRequestsTotal.WithLabelValues(metrics.ProtocolHTTP, metrics.LoadOK)); got != 0 {
		t.Errorf("http/ok = %v: a gRPC run was counted as HTTP", got)
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
	m := metrics.New(prometheus.NewRegistry(), "test", "r")
	obs := newLoadObserver(m, nil)()
	obs.LoadStarted(metrics.ProtocolHTTP, 0, nil, nil)
	obs.Second(&load.Snapshot{Stats: load.Stats{Requests: 3, Errors: 3, Classes: map[string]int64{
		load.ClassCanceled.String(): 2, load.ClassHTTP5xx.String(): 1}, Status: map[int]int64{503: 1}}})
	obs.LoadDone()
	for result, want := range map[string]float64{metrics.LoadCancelled: 2, metrics.LoadHTTP5xx: 1, metrics.LoadError: 0} {
		if got := testutil.ToFloat64(m.LoadRequestsTotal.WithLabelValues(metrics.ProtocolHTTP, result)); got != want {
			t.Errorf("http/%s = %v, want %v", result, got, want)
		}
	}
}
