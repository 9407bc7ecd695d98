package metrics

import (
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
)

// Label names of the load series. The workflow job's label is
// workflow_job, not job: Prometheus gives every scraped series the target's
// own job label, and renames a job label it finds in the scrape to
// exported_job (or, with honor_labels, lets it replace the scrape job's
// name).
const (
	LabelJob      = "workflow_job"
	LabelStep     = "step"
	LabelEndpoint = "endpoint"
)

// Fixed values of the workflow_job, step and endpoint labels. A workflow
// job's id cannot contain parentheses, so none of them is a job's name.
const (
	// LabelOther is the value that takes the series of what is over a
	// cap: a load step beyond [LoadLimits.Steps] gets workflow_job and step
	// LabelOther, an endpoint beyond [LoadLimits.Endpoints] endpoint
	// LabelOther.
	LabelOther = "(other)"
	// LabelCluster is workflow_job and step of a share of a multi-host
	// run whose coordinator shipped no names (an older forgeload).
	LabelCluster = "(cluster)"
	// LabelNone stands for a value that is empty once sanitized, and is
	// the endpoint of a snapshot without per-endpoint numbers.
	LabelNone = "(none)"
)

// Bounds of the load series' labels.
const (
	// MaxLabelLength is the longest value, in bytes, of the workflow_job,
	// step and endpoint labels; a longer one is cut (at a character
	// boundary) and ends with "…".
	MaxLabelLength = 64
	// DefaultLoadSteps is the default of [LoadLimits.Steps].
	DefaultLoadSteps = 16
	// DefaultLoadEndpoints is the default of [LoadLimits.Endpoints].
	DefaultLoadEndpoints = 16
	// DefaultLoadRetention is the default of [LoadLimits.Retention].
	DefaultLoadRetention = 10 * time.Minute
)

// LoadLimits bound the load series. Its zero value means the defaults.
type LoadLimits struct {
	// Steps is how many distinct (workflow_job, step) pairs may have
	// series at once, running or kept for Retention; the next ones share
	// the pair (LabelOther, LabelOther). 0 means DefaultLoadSteps.
	Steps int
	// Endpoints is how many distinct endpoint values one pair may have;
	// the next endpoints share LabelOther. 0 means DefaultLoadEndpoints.
	Endpoints int
	// Retention is how long a pair's series stay after its last load step
	// ended, so that a scrape sees the final counts; then they are
	// deleted. 0 means DefaultLoadRetention.
	Retention time.Duration
}

func (l LoadLimits) withDefaults() LoadLimits {
	if l.Steps <= 0 {
		l.Steps = DefaultLoadSteps
	}
	if l.Endpoints <= 0 {
		l.Endpoints = DefaultLoadEndpoints
	}
	if l.Retention <= 0 {
		l.Retention = DefaultLoadRetention
	}
	return l
}

// LabelValue is v made fit for a workflow_job, step or endpoint label:
// valid UTF-8, control characters and runs of white space turned into one
// space, trimmed, at most MaxLabelLength bytes, and LabelNone when nothing
// is left. Mask secrets before, not after: a cut could split one.
func LabelValue(v string) string {
	v = strings.ToValidUTF8(v, "\uFFFD")
	v = strings.Join(strings.FieldsFunc(v, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }), " ")
	if v == "" {
		return LabelNone
	}
	if len(v) <= MaxLabelLength {
		return v
	}
	const ellipsis = "…"
	cut := MaxLabelLength - len(ellipsis)
	for cut > 0 && !utf8.RuneStart(v[cut]) {
		cut--
	}
	return v[:cut] + ellipsis
}

type stepKey struct{ job, step string }

// stepEntry is one (workflow_job, step) pair with series.
type stepEntry struct {
	refs      int             // running LoadSteps on it
	idle      time.Time       // when refs last fell to 0
	endpoints map[string]bool // its endpoint values, LabelOther aside
}

// loadSeries keeps the load series bounded: it hands out the label pairs
// under the caps and deletes an idle pair's series after the retention.
type loadSeries struct {
	lim LoadLimits
	now func() time.Time
	// vecs are the collectors labelled by workflow_job and step.
	vecs []*prometheus.MetricVec

	requests *prometheus.CounterVec   // + endpoint, protocol, result
	duration *prometheus.HistogramVec // + endpoint
	rate     *prometheus.GaugeVec
	inflight *prometheus.GaugeVec
	dropped  *prometheus.CounterVec

	mu    sync.Mutex
	steps map[stepKey]*stepEntry
}

// Describe and Collect make loadSeries the one collector of the load
// series: a scrape first deletes the series whose retention is over.
func (l *loadSeries) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range l.collectors() {
		c.Describe(ch)
	}
}

func (l *loadSeries) Collect(ch chan<- prometheus.Metric) {
	l.sweep()
	for _, c := range l.collectors() {
		c.Collect(ch)
	}
}

func (l *loadSeries) collectors() []prometheus.Collector {
	return []prometheus.Collector{l.requests, l.duration, l.rate, l.inflight, l.dropped}
}

// sweep deletes the series of every pair idle for longer than the
// retention.
func (l *loadSeries) sweep() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sweepLocked()
}

func (l *loadSeries) sweepLocked() {
	now := l.now()
	for k, e := range l.steps {
		if e.refs > 0 || now.Sub(e.idle) < l.lim.Retention {
			continue
		}
		labels := prometheus.Labels{LabelJob: k.job, LabelStep: k.step}
		for _, v := range l.vecs {
			v.DeletePartialMatch(labels)
		}
		delete(l.steps, k)
	}
}

// acquire takes a reference on the pair of job and step (sanitized), or on
// the overflow pair when the cap is reached.
func (l *loadSeries) acquire(job, step string) stepKey {
	k := stepKey{LabelValue(job), LabelValue(step)}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sweepLocked()
	e, ok := l.steps[k]
	if !ok {
		other := stepKey{LabelOther, LabelOther}
		n := len(l.steps)
		if _, ok := l.steps[other]; ok {
			n-- // the overflow pair is beyond the cap
		}
		if n >= l.lim.Steps {
			k = other
		}
		if e, ok = l.steps[k]; !ok {
			e = &stepEntry{endpoints: map[string]bool{}}
			l.steps[k] = e
		}
	}
	e.refs++
	return k
}

func (l *loadSeries) release(k stepKey) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e := l.steps[k]; e != nil {
		if e.refs--; e.refs == 0 {
			e.idle = l.now()
		}
	}
}

// endpoint is the endpoint label of name (sanitized) on pair k: name, or
// LabelOther once the pair has its cap of endpoints.
func (l *loadSeries) endpoint(k stepKey, name string) string {
	v := LabelValue(name)
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.steps[k]
	switch {
	case e == nil:
		return LabelOther
	case e.endpoints[v]:
		return v
	case len(e.endpoints) >= l.lim.Endpoints:
		return LabelOther
	}
	e.endpoints[v] = true
	return v
}

// LoadStep is one running load test's handle on the load series, from
// [Metrics.StartLoadStep] to [LoadStep.Done]. It keeps its own share of
// the gauges, so that runs on the same labels add up and an ended one
// takes its share away. Its methods are safe for concurrent use; after
// Done they do nothing.
type LoadStep struct {
	l        *loadSeries
	key      stepKey
	protocol string

	mu        sync.Mutex
	done      bool
	endpoints map[string]string // given name → label value
	rate      float64
	inflight  float64
}

// StartLoadStep starts the series of one load test: job is the workflow
// job's id, step the step's id or name (on a share of a multi-host run,
// those its coordinator shipped, or LabelCluster), protocol a Protocol*
// constant. Secrets must be masked in job and step before: they become
// label values, sanitized and capped here (LabelValue, LoadLimits)
// wherever they come from. Its target rate, in-flight and dropped series
// start at 0. Call Done when the test ends.
func (m *Metrics) StartLoadStep(job, step, protocol string) *LoadStep {
	switch protocol {
	case ProtocolHTTP, ProtocolWebSocket, ProtocolSSE, ProtocolGRPC:
	default:
		protocol = ProtocolHTTP
	}
	l := m.load
	k := l.acquire(job, step)
	// Under the reference just taken: no sweep deletes them.
	l.rate.WithLabelValues(k.job, k.step)
	l.inflight.WithLabelValues(k.job, k.step)
	l.dropped.WithLabelValues(k.job, k.step)
	return &LoadStep{l: l, key: k, protocol: protocol, endpoints: map[string]string{}}
}

// Protocol is the protocol label of this test's requests.
func (s *LoadStep) Protocol() string { return s.protocol }

// endpointLocked is the endpoint label of name; s.mu is held.
func (s *LoadStep) endpointLocked(name string) string {
	v, ok := s.endpoints[name]
	if !ok {
		v = s.l.endpoint(s.key, name)
		s.endpoints[name] = v
	}
	return v
}

// Requests counts n requests of endpoint (the config's endpoint name,
// secrets masked) with result, a Load* constant.
func (s *LoadStep) Requests(endpoint, result string, n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done || n <= 0 {
		return
	}
	s.l.requests.WithLabelValues(s.key.job, s.key.step, s.endpointLocked(endpoint), s.protocol, result).Add(float64(n))
}

// Latency observes n requests of endpoint that took d.
func (s *LoadStep) Latency(endpoint string, d time.Duration, n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done || n <= 0 {
		return
	}
	h := s.l.duration.WithLabelValues(s.key.job, s.key.step, s.endpointLocked(endpoint))
	for range n {
		h.Observe(d.Seconds())
	}
}

// Dropped counts n arrivals dropped because the generator could not keep
// up.
func (s *LoadStep) Dropped(n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done || n <= 0 {
		return
	}
	s.l.dropped.WithLabelValues(s.key.job, s.key.step).Add(float64(n))
}

// SetInflight sets this test's share of load_inflight.
func (s *LoadStep) SetInflight(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		return
	}
	s.l.inflight.WithLabelValues(s.key.job, s.key.step).Add(float64(n) - s.inflight)
	s.inflight = float64(n)
}

// SetTargetRate sets this test's share of load_target_rate, in arrivals
// per second.
func (s *LoadStep) SetTargetRate(r float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		return
	}
	s.l.rate.WithLabelValues(s.key.job, s.key.step).Add(r - s.rate)
	s.rate = r
}

// Done takes this test's share away from the gauges and lets its pair's
// series go once the retention is over (and no other test uses them).
func (s *LoadStep) Done() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		return
	}
	s.l.rate.WithLabelValues(s.key.job, s.key.step).Sub(s.rate)
	s.l.inflight.WithLabelValues(s.key.job, s.key.step).Sub(s.inflight)
	s.rate, s.inflight, s.done = 0, 0, true
	s.l.release(s.key)
}
