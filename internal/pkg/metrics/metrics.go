package metrics

import (
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Namespace prefixes every forgeload metric name.
const Namespace = "forgeload"

// Values of the result label of poll_fetch_total.
const (
	ResultTask  = "task"
	ResultEmpty = "empty"
	ResultError = "error" // also report_*_total
)

// Values of the result label of job_total, report_log_total and
// report_state_total.
const (
	ResultSuccess   = "success"
	ResultFailure   = "failure"
	ResultCancelled = "cancelled"
	ResultSkipped   = "skipped"
	ResultUnknown   = "unknown"
)

// Values of the method label of client_errors_total: the forge RPCs.
const (
	MethodRegister   = "Register"
	MethodDeclare    = "Declare"
	MethodFetchTask  = "FetchTask"
	MethodUpdateTask = "UpdateTask"
	MethodUpdateLog  = "UpdateLog"
)

// Values of the protocol label of load_requests_total.
const (
	ProtocolHTTP      = "http"
	ProtocolWebSocket = "websocket"
	ProtocolSSE       = "sse"
	ProtocolGRPC      = "grpc"
	// ProtocolMixed is a run whose endpoints use several protocols.
	ProtocolMixed = "mixed"
)

// Values of the result label of load_requests_total: bounded classes, never
// error text.
const (
	LoadOK        = "ok"         // the request succeeded
	LoadHTTP4xx   = "http_4xx"   // an HTTP 4xx status
	LoadHTTP5xx   = "http_5xx"   // an HTTP 5xx status
	LoadHTTPOther = "http_other" // any other unexpected HTTP status
	LoadTimeout   = "timeout"    // the request timed out
	LoadCancelled = "cancelled"  // the run stopped while it was in flight
	LoadError     = "error"      // any other failure (connection refused, reset, DNS, protocol)
	LoadCheck     = "check"      // a response that failed a response check (the config's checks:)
)

// HTTPResult classifies an HTTP status code as a load_requests_total result:
// 2xx (and 1xx/3xx) are LoadOK; 4xx LoadHTTP4xx; 5xx LoadHTTP5xx; anything
// else LoadHTTPOther.
func HTTPResult(status int) string {
	switch {
	case status >= 100 && status < 400:
		return LoadOK
	case status >= 400 && status < 500:
		return LoadHTTP4xx
	case status >= 500 && status < 600:
		return LoadHTTP5xx
	default:
		return LoadHTTPOther
	}
}

// Metrics holds every forgeload collector. Build it with [New]. All fields
// are safe for concurrent use (they are Prometheus collectors). Use only the
// exported label constants as label values; the load series, whose labels
// come from workflows, are written through [Metrics.StartLoadStep].
type Metrics struct {
	// Info is forgeload_info{version,name}, always 1.
	Info *prometheus.GaugeVec
	// Uptime is forgeload_uptime_seconds, computed at scrape time.
	Uptime prometheus.GaugeFunc

	// PollFetchTotal is forgeload_poll_fetch_total{result}: ResultTask,
	// ResultEmpty or ResultError.
	PollFetchTotal *prometheus.CounterVec
	// PollFetchDuration is forgeload_poll_fetch_duration_seconds.
	PollFetchDuration prometheus.Histogram
	// PollBackoff is forgeload_poll_backoff_seconds: the current wait
	// before the next FetchTask.
	PollBackoff prometheus.Gauge
	// ClientErrors is forgeload_client_errors_total{method}: failed forge
	// RPCs, by Method* constant.
	ClientErrors *prometheus.CounterVec

	// Capacity is forgeload_capacity: runner.capacity.
	Capacity prometheus.Gauge
	// JobRunning is forgeload_job_running.
	JobRunning prometheus.Gauge
	// JobCapacityUtilization is forgeload_job_capacity_utilization_ratio:
	// running jobs over runner.capacity, kept by SetRunning and
	// SetCapacity (Gitea's runner has the same name).
	JobCapacityUtilization prometheus.Gauge
	// JobTotal is forgeload_job_total{status}: ResultSuccess, ResultFailure,
	// ResultCancelled, ResultSkipped or ResultUnknown. The label is
	// status, as in Gitea's runner.
	JobTotal *prometheus.CounterVec
	// JobDuration is forgeload_job_duration_seconds, with buckets from 1s to
	// about 4.5h.
	JobDuration prometheus.Histogram

	// ReportLogTotal is forgeload_report_log_total{result}: ResultSuccess
	// or ResultError per UpdateLog call.
	ReportLogTotal *prometheus.CounterVec
	// ReportLogDuration is forgeload_report_log_duration_seconds.
	ReportLogDuration prometheus.Histogram
	// ReportStateTotal is forgeload_report_state_total{result}:
	// ResultSuccess or ResultError per UpdateTask call.
	ReportStateTotal *prometheus.CounterVec
	// ReportStateDuration is forgeload_report_state_duration_seconds.
	ReportStateDuration prometheus.Histogram
	// ReportLogBufferRows is forgeload_report_log_buffer_rows: log rows not
	// yet acknowledged by the forge, summed over running jobs.
	ReportLogBufferRows prometheus.Gauge

	// load holds the load series (load_requests_total,
	// load_request_duration_seconds, load_target_rate, load_inflight and
	// load_dropped_total), labelled by workflow_job and step and kept
	// bounded; write them through [Metrics.StartLoadStep].
	load *loadSeries

	// ClusterWorkers is forgeload_cluster_workers: live workers in the
	// cluster run this daemon coordinates or takes part in.
	ClusterWorkers prometheus.Gauge
	// ClusterSegmentReassignmentsTotal is
	// forgeload_cluster_segment_reassignments_total.
	ClusterSegmentReassignmentsTotal prometheus.Counter

	mu                sync.Mutex
	running, capacity int
}

// SetCapacity sets forgeload_capacity and the utilization ratio.
func (m *Metrics) SetCapacity(n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.capacity = n
	m.Capacity.Set(float64(n))
	m.utilizationLocked()
}

// SetRunning sets forgeload_job_running and the utilization ratio.
func (m *Metrics) SetRunning(n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.running = n
	m.JobRunning.Set(float64(n))
	m.utilizationLocked()
}

func (m *Metrics) utilizationLocked() {
	r := 0.0
	if m.capacity > 0 {
		r = float64(m.running) / float64(m.capacity)
	}
	m.JobCapacityUtilization.Set(r)
}

// New builds every forgeload collector and registers it on reg. version and
// name fill forgeload_info. A nil reg registers nothing: the collectors still
// work, which suits callers with metrics turned off. New panics if a
// collector is already registered on reg (a programming error: use one
// registry per Metrics). Series of every known label value start at 0;
// the load series appear with the first load step ([Metrics.StartLoadStep]).
// New does not register the Go and process collectors: see [RegisterRuntime].
func New(reg prometheus.Registerer, version, name string, opts ...Option) *Metrics {
	o := options{now: time.Now}
	for _, opt := range opts {
		opt(&o)
	}
	o.limits = o.limits.withDefaults()
	start := time.Now()
	gauge := func(sub, n, help string) prometheus.Gauge {
		return prometheus.NewGauge(prometheus.GaugeOpts{Namespace: Namespace, Subsystem: sub, Name: n, Help: help})
	}
	counterVec := func(sub, n, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Subsystem: sub, Name: n, Help: help}, labels)
	}
	hist := func(sub, n, help string, buckets []float64) prometheus.Histogram {
		return prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: Namespace, Subsystem: sub, Name: n, Help: help, Buckets: buckets})
	}
	rpcBuckets := []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}
	m := &Metrics{
		Info: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace, Name: "info",
			Help: "Always 1; the labels say which forgeload version runs under which runner name."}, []string{"version", "name"}),
		Uptime: prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: Namespace, Name: "uptime_seconds",
			Help: "Seconds since the daemon started."}, func() float64 { return time.Since(start).Seconds() }),

		PollFetchTotal: counterVec("poll", "fetch_total",
			"FetchTask calls by result: task, empty or error.", "result"),
		PollFetchDuration: hist("poll", "fetch_duration_seconds",
			"Duration of FetchTask calls.", rpcBuckets),
		PollBackoff: gauge("poll", "backoff_seconds",
			"Current wait before the next FetchTask call."),
		ClientErrors: counterVec("client", "errors_total",
			"Failed forge RPCs by method.", "method"),

		Capacity:   gauge("", "capacity", "How many jobs may run at once (runner.capacity)."),
		JobRunning: gauge("job", "running", "Jobs running now."),
		JobCapacityUtilization: gauge("job", "capacity_utilization_ratio",
			"Jobs running now over runner.capacity."),
		JobTotal: counterVec("job", "total",
			"Finished jobs by status: success, failure, cancelled, skipped or unknown.", "status"),
		JobDuration: hist("job", "duration_seconds",
			"Duration of finished jobs.", prometheus.ExponentialBuckets(1, 2, 15)), // 1s .. 16384s (~4.5h)

		ReportLogTotal: counterVec("report", "log_total",
			"UpdateLog calls by result: success or error.", "result"),
		ReportLogDuration: hist("report", "log_duration_seconds",
			"Duration of UpdateLog calls.", rpcBuckets),
		ReportStateTotal: counterVec("report", "state_total",
			"UpdateTask calls by result: success or error.", "result"),
		ReportStateDuration: hist("report", "state_duration_seconds",
			"Duration of UpdateTask calls.", rpcBuckets),
		ReportLogBufferRows: gauge("report", "log_buffer_rows",
			"Log rows not yet acknowledged by the forge, over all running jobs."),

		ClusterWorkers: gauge("cluster", "workers", "Live workers in the current cluster run."),
		ClusterSegmentReassignmentsTotal: prometheus.NewCounter(prometheus.CounterOpts{Namespace: Namespace, Subsystem: "cluster", Name: "segment_reassignments_total",
			Help: "Segments moved from a dead or cut-off worker to another."}),
	}
	m.load = newLoadSeries(o)
	m.startSeries(version, name)
	if reg != nil {
		reg.MustRegister(m.collectors()...)
	}
	return m
}

// startSeries sets forgeload_info to 1 and creates the series of every known
// label value, so that each is scraped at 0 before its first event.
func (m *Metrics) startSeries(version, name string) {
	m.Info.WithLabelValues(version, name).Set(1)
	for _, r := range []string{ResultTask, ResultEmpty, ResultError} {
		m.PollFetchTotal.WithLabelValues(r)
	}
	for _, meth := range []string{MethodRegister, MethodDeclare, MethodFetchTask, MethodUpdateTask, MethodUpdateLog} {
		m.ClientErrors.WithLabelValues(meth)
	}
	for _, r := range []string{ResultSuccess, ResultFailure, ResultCancelled, ResultSkipped, ResultUnknown} {
		m.JobTotal.WithLabelValues(r)
	}
	for _, r := range []string{ResultSuccess, ResultError} {
		m.ReportLogTotal.WithLabelValues(r)
		m.ReportStateTotal.WithLabelValues(r)
	}
}

func (m *Metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{
		m.Info, m.Uptime,
		m.PollFetchTotal, m.PollFetchDuration, m.PollBackoff, m.ClientErrors,
		m.Capacity, m.JobRunning, m.JobCapacityUtilization, m.JobTotal, m.JobDuration,
		m.ReportLogTotal, m.ReportLogDuration, m.ReportStateTotal, m.ReportStateDuration, m.ReportLogBufferRows,
		m.load,
		m.ClusterWorkers, m.ClusterSegmentReassignmentsTotal,
	}
}

// Option configures [New].
type Option func(*options)

type options struct {
	limits LoadLimits
	now    func() time.Time
}

// WithLoadLimits bounds the load series by l instead of the defaults (a
// zero field keeps its default).
func WithLoadLimits(l LoadLimits) Option { return func(o *options) { o.limits = l } }

// WithClock makes now the clock of the load series' retention; the
// default is time.Now. For tests.
func WithClock(now func() time.Time) Option { return func(o *options) { o.now = now } }

// newLoadSeries builds the load collectors under o's limits.
func newLoadSeries(o options) *loadSeries {
	pair := []string{LabelJob, LabelStep}
	l := &loadSeries{
		lim: o.limits, now: o.now, steps: map[stepKey]*stepEntry{},
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Subsystem: "load", Name: "requests_total",
			Help: "Load-test requests by workflow job, step, endpoint, protocol and result class."},
			append(pair, LabelEndpoint, "protocol", "result")),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Subsystem: "load", Name: "request_duration_seconds",
			Help:    "Load-test request latency from the intended send time, by workflow job, step and endpoint.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 17)}, // 0.5ms .. ~33s
			append(pair, LabelEndpoint)),
		rate: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace, Subsystem: "load", Name: "target_rate",
			Help: "Requested arrival rate per second of running load steps, by workflow job and step."}, pair),
		inflight: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace, Subsystem: "load", Name: "inflight",
			Help: "Load-test requests in flight, by workflow job and step."}, pair),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Subsystem: "load", Name: "dropped_total",
			Help: "Arrivals dropped because the load generator could not keep up, by workflow job and step."}, pair),
	}
	l.vecs = []*prometheus.MetricVec{l.requests.MetricVec, l.duration.MetricVec, l.rate.MetricVec, l.inflight.MetricVec, l.dropped.MetricVec}
	return l
}

// RegisterRuntime registers the standard Go runtime and process collectors
// (go_*, process_*) on reg. Call it once per registry, on the daemon's
// registry only: tests that build several registries usually leave it out.
func RegisterRuntime(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	} {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("register runtime collectors: %w (call RegisterRuntime once per registry)", err)
		}
	}
	return nil
}
