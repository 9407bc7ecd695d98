package cmd

import (
	"sync"
	"time"

	runnerv1 "gitea.dev/actions-proto-go/runner/v1"

	"github.com/forgeload/forgeload/internal/app/poll"
	"github.com/forgeload/forgeload/internal/app/run"
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
