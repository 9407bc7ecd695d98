package cmd

import (
	"sync"
	"time"

	runnerv1 "gitea.dev/actions-proto-go/runner/v1"

	"github.com/forgeload/forgeload/internal/app/poll"
	"github.com/forgeload/forgeload/internal/app/run"
	"github.com/forgeload/forgeload/internal/pkg/load"
	"github.com/forgeload/forgeload/internal/pkg/metrics"
	"github.com/forgeload/forgeload/internal/pkg/report"
)

// The observers adapt the packages' small consumer-side interfaces to the
// daemon's Prometheus metrics.

type pollObserver struct{ m *metrics.Metrics }

var _ poll.Observer = pollObserver{}

func (o pollObserver) FetchDone(result string, d time.Duration) {
	o.m.PollFetchTotal.WithLabelValues(result).Inc()
	o.m.PollFetchDuration.Observe(d.Seconds())
	if result == poll.ResultError {
		o.m.ClientErrors.WithLabelValues(metrics.MethodFetchTask).Inc()
	}
}

func (o pollObserver) Backoff(d time.Duration) { o.m.PollBackoff.Set(d.Seconds()) }
func (o pollObserver) Running(n int)           { o.m.JobRunning.Set(float64(n)) }

type jobObserver struct{ m *metrics.Metrics }

var _ run.Observer = jobObserver{}

func (o jobObserver) JobStarted() {}

func (o jobObserver) JobDone(result runnerv1.Result, d time.Duration) {
	label := metrics.ResultUnknown
	switch result {
	case runnerv1.Result_RESULT_SUCCESS:
		label = metrics.ResultSuccess
	case runnerv1.Result_RESULT_FAILURE:
		label = metrics.ResultFailure
	case runnerv1.Result_RESULT_CANCELLED:
		label = metrics.ResultCancelled
	case runnerv1.Result_RESULT_SKIPPED:
		label = metrics.ResultSkipped
	}
	o.m.JobTotal.WithLabelValues(label).Inc()
	o.m.JobDuration.Observe(d.Seconds())
}

// reportObserver is one task's reporter observer. It adds its task's share
// to the buffered-rows gauge, and takes it away on Close.
type reportObserver struct {
	m    *metrics.Metrics
	mu   sync.Mutex
	rows int
}

var _ report.Observer = (*reportObserver)(nil)

func newReportObserver(m *metrics.Metrics) func() report.Observer {
	return func() report.Observer { return &reportObserver{m: m} }
}

func (o *reportObserver) LogSent(ok bool) {
	o.m.ReportLogTotal.WithLabelValues(okLabel(ok)).Inc()
	if !ok {
		o.m.ClientErrors.WithLabelValues(metrics.MethodUpdateLog).Inc()
	}
}

func (o *reportObserver) StateSent(ok bool) {
	o.m.ReportStateTotal.WithLabelValues(okLabel(ok)).Inc()
	if !ok {
		o.m.ClientErrors.WithLabelValues(metrics.MethodUpdateTask).Inc()
	}
}

func (o *reportObserver) BufferRows(n int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.m.ReportLogBufferRows.Add(float64(n - o.rows))
	o.rows = n
}

// Close removes this task's rows from the gauge.
func (o *reportObserver) Close() { o.BufferRows(0) }

func okLabel(ok bool) string {
	if ok {
		return metrics.ResultSuccess
	}
	return metrics.ResultError
}

// loadObserver feeds one load step's per-second snapshots into the load
// metrics. It keeps its own share of the gauges, so concurrent load steps
// add up and a finished one takes its share away.
type loadObserver struct {
	m        *metrics.Metrics
	mu       sync.Mutex
	rate     float64
	inflight int
}

var _ run.LoadObserver = (*loadObserver)(nil)

func newLoadObserver(m *metrics.Metrics) func() run.LoadObserver {
	return func() run.LoadObserver { return &loadObserver{m: m} }
}

func (o *loadObserver) LoadStarted(targetRPS float64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.rate = targetRPS
	o.m.LoadTargetRate.Add(targetRPS)
}

func (o *loadObserver) Second(s *load.Snapshot) {
	o.mu.Lock()
	defer o.mu.Unlock()
	req := o.m.LoadRequestsTotal
	for code, n := range s.Status {
		req.WithLabelValues(metrics.ProtocolHTTP, metrics.HTTPResult(code)).Add(float64(n))
	}
	for class, n := range s.Classes {
		switch class {
		case "timeout":
			req.WithLabelValues(metrics.ProtocolHTTP, metrics.LoadTimeout).Add(float64(n))
		case "canceled":
			req.WithLabelValues(metrics.ProtocolHTTP, metrics.LoadCancelled).Add(float64(n))
		case "http_4xx", "http_5xx":
			continue // counted by status code above
		default:
			req.WithLabelValues(metrics.ProtocolHTTP, metrics.LoadError).Add(float64(n))
		}
	}
	if s.Dropped > 0 {
		o.m.LoadDroppedTotal.Add(float64(s.Dropped))
	}
	o.m.LoadInflight.Add(float64(s.InFlight - o.inflight))
	o.inflight = s.InFlight
	if s.TargetRPS > 0 && s.TargetRPS != o.rate {
		o.m.LoadTargetRate.Add(s.TargetRPS - o.rate)
		o.rate = s.TargetRPS
	}
	if s.Latency != nil {
		s.Latency.Buckets(func(upper time.Duration, n int64) {
			for range n {
				o.m.LoadRequestDuration.Observe(upper.Seconds())
			}
		})
	}
}

func (o *loadObserver) LoadDone() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.m.LoadTargetRate.Sub(o.rate)
	o.m.LoadInflight.Sub(float64(o.inflight))
	o.rate, o.inflight = 0, 0
}
