package cmd

import (
	"sync"
	"time"

	runnerv1 "gitea.dev/actions-proto-go/runner/v1"

	"github.com/forgeload/forgeload/internal/app/poll"
	"github.com/forgeload/forgeload/internal/app/run"
	"github.com/forgeload/forgeload/internal/pkg/load"
	"github.com/forgeload/forgeload/internal/pkg/load/outcome/summary"
	"github.com/forgeload/forgeload/internal/pkg/load/resultview"
	"github.com/forgeload/forgeload/internal/pkg/loadrun"
	"github.com/forgeload/forgeload/internal/pkg/metrics"
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
func (o pollObserver) Running(n int)           { o.m.SetRunning(n) }

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

var _ run.ReportObserver = (*reportObserver)(nil)

func newReportObserver(m *metrics.Metrics) func() run.ReportObserver {
	return func() run.ReportObserver { return &reportObserver{m: m} }
}

func (o *reportObserver) LogSent(ok bool, d time.Duration) {
	o.m.ReportLogTotal.WithLabelValues(okLabel(ok)).Inc()
	o.m.ReportLogDuration.Observe(d.Seconds())
	if !ok {
		o.m.ClientErrors.WithLabelValues(metrics.MethodUpdateLog).Inc()
	}
}

func (o *reportObserver) StateSent(ok bool, d time.Duration) {
	o.m.ReportStateTotal.WithLabelValues(okLabel(ok)).Inc()
	o.m.ReportStateDuration.Observe(d.Seconds())
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
// metrics, and into the step's live dashboard on the jobs page when the
// daemon serves one. It keeps its own share of the gauges, so concurrent
// load steps add up and a finished one takes its share away.
type loadObserver struct {
	m        *metrics.Metrics
	view     jobView
	mu       sync.Mutex
	rate     float64
	inflight int
	protocol string
}

var _ loadrun.Observer = (*loadObserver)(nil)

// jobView lists one load step on the daemon's jobs page while it runs and
// feeds its live dashboard. Its zero value with jobs nil does nothing.
type jobView struct {
	jobs   *resultview.Jobs // nil: no jobs page
	dash   *resultview.Dashboard
	unlist func()
}

func (v *jobView) start(info *summary.RunInfo, mask func(string) string) {
	if v.jobs != nil && info != nil {
		v.dash, v.unlist = v.jobs.Start(info, mask)
	}
}

func (v *jobView) second(s *load.Snapshot) {
	if v.dash != nil {
		v.dash.Second(s)
	}
}

func (v *jobView) done() {
	if v.unlist != nil {
		v.unlist()
		v.dash, v.unlist = nil, nil
	}
}

// runObserver shows a distributed load step this daemon coordinates on
// the jobs page, from the merged seconds of the whole run. It feeds no
// metrics: this host's own segment does, through its loadObserver.
type runObserver struct {
	mu   sync.Mutex
	view jobView
}

var _ loadrun.Observer = (*runObserver)(nil)

// newRunObserver makes the observers of distributed load steps; nil when
// the daemon serves no jobs page.
func newRunObserver(jobs *resultview.Jobs) func() loadrun.Observer {
	if jobs == nil {
		return nil
	}
	return func() loadrun.Observer { return &runObserver{view: jobView{jobs: jobs}} }
}

func (o *runObserver) LoadStarted(_ string, _ float64, info *summary.RunInfo, mask func(string) string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.view.start(info, mask)
}

func (o *runObserver) Second(s *load.Snapshot) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.view.second(s)
}

func (o *runObserver) LoadDone() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.view.done()
}

// newLoadObserver makes the load steps' observers; jobs, when not nil, is
// the jobs page their steps are listed on while they run.
func newLoadObserver(m *metrics.Metrics, jobs *resultview.Jobs) func() loadrun.Observer {
	return func() loadrun.Observer { return &loadObserver{m: m, view: jobView{jobs: jobs}} }
}

func (o *loadObserver) LoadStarted(protocol string, targetRPS float64, info *summary.RunInfo, mask func(string) string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.view.start(info, mask)
	o.protocol = protocol
	o.rate = targetRPS
	o.m.LoadTargetRate.Add(targetRPS)
}

func (o *loadObserver) Second(s *load.Snapshot) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.view.second(s)
	req := o.m.LoadRequestsTotal
	proto := o.protocol
	if proto == "" {
		proto = metrics.ProtocolHTTP
	}
	if proto == metrics.ProtocolHTTP {
		for code, n := range s.Status {
			req.WithLabelValues(proto, metrics.HTTPResult(code)).Add(float64(n))
		}
	} else if ok := s.Requests - s.Errors; ok > 0 {
		// WebSocket and gRPC successes have no status code to count by.
		req.WithLabelValues(proto, metrics.LoadOK).Add(float64(ok))
	}
	for class, n := range s.Classes {
		result := loadResult(class)
		if proto == metrics.ProtocolHTTP && (result == metrics.LoadHTTP4xx || result == metrics.LoadHTTP5xx) {
			continue // counted by status code above
		}
		req.WithLabelValues(proto, result).Add(float64(n))
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

// loadResult is the load_requests_total result label of an engine error
// class name ([load.ErrorClass.String]): the one place where the engine's
// "canceled" becomes the metric's "cancelled".
func loadResult(class string) string {
	switch class {
	case load.ClassTimeout.String():
		return metrics.LoadTimeout
	case load.ClassCanceled.String():
		return metrics.LoadCancelled
	case load.ClassHTTP4xx.String():
		return metrics.LoadHTTP4xx
	case load.ClassHTTP5xx.String():
		return metrics.LoadHTTP5xx
	case load.ClassCheck.String():
		return metrics.LoadCheck
	}
	return metrics.LoadError
}

func (o *loadObserver) LoadDone() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.m.LoadTargetRate.Sub(o.rate)
	o.m.LoadInflight.Sub(float64(o.inflight))
	o.rate, o.inflight = 0, 0
	o.view.done()
}
