package metrics

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
)

func TestCollectAndCompare(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewPedanticRegistry()
	m := New(reg, "v1.2.3", "runner-1")
	m.PollFetchTotal.WithLabelValues(ResultTask).Inc()
	m.PollFetchTotal.WithLabelValues(ResultEmpty).Add(3)
	m.JobTotal.WithLabelValues(ResultSuccess).Inc()
	m.JobTotal.WithLabelValues(ResultCancelled).Inc()
	m.JobDuration.Observe(90)
	ls := m.StartLoadStep("perf", "soak", ProtocolHTTP)
	ls.Requests("home", HTTPResult(503), 1)
	m.SetCapacity(4)
	m.SetRunning(3)

	tests := []struct {
		name string
		want string
	}{
		{"forgeload_info", `
# HELP forgeload_info Always 1; the labels say which forgeload version runs under which runner name.
# TYPE forgeload_info gauge
forgeload_info{name="runner-1",version="v1.2.3"} 1
`},
		{"forgeload_poll_fetch_total", `
# HELP forgeload_poll_fetch_total FetchTask calls by result: task, empty or error.
# TYPE forgeload_poll_fetch_total counter
forgeload_poll_fetch_total{result="empty"} 3
forgeload_poll_fetch_total{result="error"} 0
forgeload_poll_fetch_total{result="task"} 1
`},
		{"forgeload_job_total", `
# HELP forgeload_job_total Finished jobs by status: success, failure, cancelled, skipped or unknown.
# TYPE forgeload_job_total counter
forgeload_job_total{status="cancelled"} 1
forgeload_job_total{status="failure"} 0
forgeload_job_total{status="skipped"} 0
forgeload_job_total{status="success"} 1
forgeload_job_total{status="unknown"} 0
`},
		{"forgeload_job_capacity_utilization_ratio", `
# HELP forgeload_job_capacity_utilization_ratio Jobs running now over runner.capacity.
# TYPE forgeload_job_capacity_utilization_ratio gauge
forgeload_job_capacity_utilization_ratio 0.75
`},
		{"forgeload_capacity", `
# HELP forgeload_capacity How many jobs may run at once (runner.capacity).
# TYPE forgeload_capacity gauge
forgeload_capacity 4
`},
	}
	for _, tt := range tests {
		if err := testutil.GatherAndCompare(reg, strings.NewReader(tt.want), tt.name); err != nil {
			t.Errorf("%s: %v", tt.name, err)
		}
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP forgeload_load_requests_total Load-test requests by workflow job, step, endpoint, protocol and result class.
# TYPE forgeload_load_requests_total counter
forgeload_load_requests_total{endpoint="home",protocol="http",result="http_5xx",step="soak",workflow_job="perf"} 1
`), "forgeload_load_requests_total"); err != nil {
		t.Errorf("load_requests_total: %v", err)
	}
	if err := testutil.CollectAndCompare(m.JobDuration, strings.NewReader(`
# HELP forgeload_job_duration_seconds Duration of finished jobs.
# TYPE forgeload_job_duration_seconds histogram
forgeload_job_duration_seconds_bucket{le="1"} 0
forgeload_job_duration_seconds_bucket{le="2"} 0
forgeload_job_duration_seconds_bucket{le="4"} 0
forgeload_job_duration_seconds_bucket{le="8"} 0
forgeload_job_duration_seconds_bucket{le="16"} 0
forgeload_job_duration_seconds_bucket{le="32"} 0
forgeload_job_duration_seconds_bucket{le="64"} 0
forgeload_job_duration_seconds_bucket{le="128"} 1
forgeload_job_duration_seconds_bucket{le="256"} 1
forgeload_job_duration_seconds_bucket{le="512"} 1
forgeload_job_duration_seconds_bucket{le="1024"} 1
forgeload_job_duration_seconds_bucket{le="2048"} 1
forgeload_job_duration_seconds_bucket{le="4096"} 1
forgeload_job_duration_seconds_bucket{le="8192"} 1
forgeload_job_duration_seconds_bucket{le="16384"} 1
forgeload_job_duration_seconds_bucket{le="+Inf"} 1
forgeload_job_duration_seconds_sum 90
forgeload_job_duration_seconds_count 1
`)); err != nil {
		t.Errorf("job_duration_seconds: %v", err)
	}
}

// TestDesignNames checks that every metric of DESIGN.md section 7 exists.
func TestDesignNames(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	exerciseLoad(New(reg, "v", "n")) // the load series appear with a load step
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, mf := range mfs {
		have[mf.GetName()] = true
	}
	for _, n := range []string{
		"info", "uptime_seconds",
		"poll_fetch_total", "poll_fetch_duration_seconds", "poll_backoff_seconds", "client_errors_total",
		"capacity", "job_running", "job_total", "job_duration_seconds",
		"report_log_total", "report_state_total", "report_log_buffer_rows",
		"load_requests_total", "load_request_duration_seconds", "load_target_rate", "load_inflight", "load_dropped_total",
		"cluster_workers", "cluster_segment_reassignments_total",
	} {
		if !have[Namespace+"_"+n] {
			t.Errorf("metric %s_%s is not registered", Namespace, n)
		}
	}
}

func TestPromlint(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	m := New(reg, "v", "n")
	if err := RegisterRuntime(reg); err != nil {
		t.Fatal(err)
	}
	ls := m.StartLoadStep("j", "s", ProtocolHTTP)
	ls.Latency("e", 10*time.Millisecond, 1)
	ls.Requests("e", LoadOK, 1)
	ls.Dropped(1)
	ls.SetInflight(1)
	ls.SetTargetRate(1)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
	if err := RegisterRuntime(reg); err == nil {
		t.Error("second RegisterRuntime on one registry = nil, want an error")
	}
}

func TestNilRegistryAndUptime(t *testing.T) {
	t.Parallel()
	// In the bubble the clock moves only when every goroutine sleeps.
	synctest.Test(t, func(t *testing.T) {
		m := New(nil, "v", "n")
		m.JobRunning.Inc() // works without a registry
		time.Sleep(90 * time.Second)
		if got := testutil.ToFloat64(m.Uptime); got != 90 {
			t.Errorf("uptime = %v, want 90", got)
		}
	})
	// Two Metrics on separate registries never clash.
	New(prometheus.NewRegistry(), "v", "a")
	New(prometheus.NewRegistry(), "v", "b")
}

func TestHTTPResult(t *testing.T) {
	t.Parallel()
	for status, want := range map[int]string{200: LoadOK, 204: LoadOK, 302: LoadOK, 404: LoadHTTP4xx, 429: LoadHTTP4xx, 500: LoadHTTP5xx, 599: LoadHTTP5xx, 0: LoadHTTPOther, 700: LoadHTTPOther} {
		if got := HTTPResult(status); got != want {
			t.Errorf("HTTPResult(%d) = %q, want %q", status, got, want)
		}
	}
}

// exerciseLoad records one of everything on a load step, so that every
// load series is gathered.
func exerciseLoad(m *Metrics) {
	s := m.StartLoadStep("j", "s", ProtocolHTTP)
	s.Requests("e", LoadOK, 1)
	s.Latency("e", time.Millisecond, 1)
	s.Dropped(1)
	s.SetInflight(1)
	s.SetTargetRate(1)
}
