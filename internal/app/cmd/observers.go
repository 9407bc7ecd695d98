package cmd

import (
	"cmp"
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
// metrics, under its workflow job, step and endpoint labels (secrets
// masked, bounded by package metrics), and into the step's live dashboard
// on the jobs page when the daemon serves one. A share of a multi-host
// run is labelled with the names its coordinator shipped (shareJob and
// shareStep), or metrics.LabelCluster where it shipped none.
type loadObserver struct {
	m    *metrics.Metrics
	view jobView
	mu   sync.Mutex
	step *metrics.LoadStep // nil before LoadStarted and after LoadDone
	mask func(string) string
	// shareJob and shareStep name a share's job and step, masked by its
	// coordinator; "" for none.
	shareJob, shareStep string
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

// newShareObserver makes the observers of this host's shares of
// multi-host runs (loadrun.SegmentRunner.Observer): job and step are the
// names the run's coordinator shipped. A share is not listed on the jobs
// page: its coordinator lists the whole run.
func newShareObserver(m *metrics.Metrics) func(job, step string) loadrun.Observer {
	return func(job, step string) loadrun.Observer {
		return &loadObserver{m: m, shareJob: job, shareStep: step}
	}
}

func (o *loadObserver) LoadStarted(protocol string, targetRPS float64, info *summary.RunInfo, mask func(string) string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.view.start(info, mask)
	// The metrics package sanitizes and caps whatever names come here,
	// a share's from the wire included.
	job, step := cmp.Or(o.shareJob, metrics.LabelCluster), cmp.Or(o.shareStep, metrics.LabelCluster)
	if info != nil {
		job, step = maskLabel(info.Job, mask), maskLabel(info.Step, mask)
	}
	if protocol == "" {
		protocol = metrics.ProtocolHTTP
	}
	o.mask = mask
	o.step = o.m.StartLoadStep(job, step, protocol)
	o.step.SetTargetRate(targetRPS)
}

// maskLabel is v with mask's secrets hidden, before it becomes a label.
func maskLabel(v string, mask func(string) string) string {
	if mask == nil {
		return v
	}
	return mask(v)
}

func (o *loadObserver) Second(s *load.Snapshot) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.view.second(s)
	if o.step == nil {
		return
	}
	// The endpoint names are masked like every text the job shows.
	mask := o.mask
	if len(s.Endpoints) == 0 {
		// No per-endpoint split (a snapshot of another source).
		o.countRequests(metrics.LabelNone, &s.Stats)
	}
	for i := range s.Endpoints {
		o.countRequests(maskLabel(s.Endpoints[i].Name, mask), &s.Endpoints[i].Stats)
	}
	o.step.Dropped(s.Dropped)
	o.step.SetInflight(s.InFlight)
	if s.TargetRPS > 0 {
		o.step.SetTargetRate(s.TargetRPS)
	}
}

// countRequests counts one endpoint's requests of a second by result, and
// its latencies.
func (o *loadObserver) countRequests(endpoint string, st *load.Stats) {
	if st.Requests == 0 {
		return
	}
	proto := o.step.Protocol()
	if proto == metrics.ProtocolHTTP {
		for code, n := range st.Status {
			o.step.Requests(endpoint, metrics.HTTPResult(code), n)
		}
	} else if ok := st.Requests - st.Errors; ok > 0 {
		// WebSocket and gRPC successes have no status code to count by.
		o.step.Requests(endpoint, metrics.LoadOK, ok)
	}
	for class, n := range st.Classes {
		result := loadResult(class)
		if proto == metrics.ProtocolHTTP && (result == metrics.LoadHTTP4xx || result == metrics.LoadHTTP5xx) {
			continue // counted by status code above
		}
		o.step.Requests(endpoint, result, n)
	}
	if st.Latency != nil {
		st.Latency.Buckets(func(upper time.Duration, n int64) {
			o.step.Latency(endpoint, upper, n)
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
	if o.step != nil {
		o.step.Done()
		o.step = nil
	}
	o.view.done()
}
