package load

import (
	"maps"
	"slices"
	"time"
)

// Stats are the mergeable measurements of a set of requests: counters, status
// codes, error classes and a latency histogram. Merging the Stats of several
// workers, seconds or hosts gives exactly the Stats of all their requests.
// The zero value is empty and ready to use. Stats are not safe for concurrent
// use.
type Stats struct {
	// Requests is the number of completed requests, failed ones included.
	Requests int64 `json:"requests"`
	// Errors is the number of failed requests.
	Errors int64 `json:"errors"`
	// BytesIn and BytesOut are the bytes received and sent.
	BytesIn  int64 `json:"bytes_in"`
	BytesOut int64 `json:"bytes_out"`
	// Retries is the number of attempts beyond the first.
	Retries int64 `json:"retries"`
	// Late is the number of arrivals sent more than LateTolerance after
	// their intended time (open model only), whatever the cause.
	Late int64 `json:"late"`
	// Queued is the part of Late that waited for a free worker while every
	// worker (Options.Concurrency of them) was busy: the target's latency
	// or the concurrency limited the test. Late − Queued were sent late by
	// the generator itself (its timers or CPU fell behind).
	Queued int64 `json:"queued"`
	// Stalled counts arrivals skipped because the generator itself had
	// stalled (a frozen process or host) past Options.MaxStall: they were
	// never sent, and are counted in Dropped too, as the generator's.
	Stalled int64 `json:"stalled,omitempty"`
	// Status counts responses by status code.
	Status map[int]int64 `json:"status,omitempty"`
	// Classes counts failed requests by error class name.
	Classes map[string]int64 `json:"classes,omitempty"`
	// Latency is the latency histogram; nil means no requests.
	Latency *Histogram `json:"latency,omitempty"`
	// Messages counts failed requests by error message, bounded (see
	// [ErrorMessages]). The engine fills it per endpoint only: a run's or
	// a second's totals leave it empty, and the summary (package
	// outcome/summary) reads the endpoints'.
	Messages ErrorMessages `json:"messages,omitzero"`
}

// Merge adds o to s.
func (s *Stats) Merge(o *Stats) {
	s.Requests += o.Requests
	s.Errors += o.Errors
	s.BytesIn += o.BytesIn
	s.BytesOut += o.BytesOut
	s.Retries += o.Retries
	s.Late += o.Late
	s.Queued += o.Queued
	s.Stalled += o.Stalled
	for k, v := range o.Status {
		if s.Status == nil {
			s.Status = make(map[int]int64)
		}
		s.Status[k] += v
	}
	for k, v := range o.Classes {
		if s.Classes == nil {
			s.Classes = make(map[string]int64)
		}
		s.Classes[k] += v
	}
	s.Messages.Merge(&o.Messages)
	if o.Latency != nil {
		if s.Latency == nil {
			s.Latency = NewHistogram()
		}
		s.Latency.Merge(o.Latency)
	}
}

// ErrorRate returns Errors/Requests, or 0 without requests.
func (s *Stats) ErrorRate() float64 {
	if s.Requests == 0 {
		return 0
	}
	return float64(s.Errors) / float64(s.Requests)
}

// Quantile returns the latency at quantile q in [0, 1], or 0 without requests.
func (s *Stats) Quantile(q float64) time.Duration {
	if s.Latency == nil {
		return 0
	}
	return s.Latency.Quantile(q)
}

// EndpointStats are the Stats of one named endpoint.
type EndpointStats struct {
	// Name is the endpoint's name from Options.Endpoints.
	Name string `json:"name"`
	Stats
}

// Snapshot is what one host measured in one plan second: [Options.OnSecond]
// receives one per elapsed second, and the callee may keep it. Snapshots of
// the same second from several hosts merge exactly.
type Snapshot struct {
	// Second is the plan second, counted from plan time 0.
	Second int `json:"second"`
	// Stats are the requests completed during the second.
	Stats
	// Endpoints are per-endpoint Stats, in Options.Endpoints order.
	Endpoints []EndpointStats `json:"endpoints"`
	// Dropped is the number of arrivals dropped during the second, and
	// DroppedBy splits it by reason ([DropReason] names).
	Dropped   int64            `json:"dropped"`
	DroppedBy map[string]int64 `json:"dropped_by,omitempty"`
	// InFlight is the number of requests in flight at the end of the second.
	InFlight int `json:"in_flight"`
	// TargetRPS is the planned global arrival rate over the second (open
	// model), 0 in the closed model.
	TargetRPS float64 `json:"target_rps"`
	// GeneratorLate counts the arrivals the generator sent more than
	// GeneratorLateTolerance late while a worker was free (its timers or
	// CPU fell behind); GeneratorLateMax is the latest of them.
	GeneratorLate    int64         `json:"generator_late,omitempty"`
	GeneratorLateMax time.Duration `json:"generator_late_max,omitempty"`
	// Checks are the response checks' counts of the second (what they
	// counted since the previous snapshot), in config order; nil without
	// checks. The engine leaves them nil: package build fills them in.
	Checks []CheckStats `json:"checks,omitempty"`
}

// Second is one row of a result's per-second series.
type Second struct {
	// Second is the plan second.
	Second int `json:"second"`
	// Requests, Errors, Dropped and Late count that second's completions,
	// failures, dropped and late arrivals; Requests is also the achieved
	// rate in req/s. DroppedBy splits Dropped by reason.
	Requests  int64            `json:"requests"`
	Errors    int64            `json:"errors"`
	Dropped   int64            `json:"dropped"`
	DroppedBy map[string]int64 `json:"dropped_by,omitempty"`
	Late      int64            `json:"late"`
	// GeneratorLate and GeneratorLateMax are the second's evidence that
	// the generator fell behind; see [Snapshot].
	GeneratorLate    int64         `json:"generator_late,omitempty"`
	GeneratorLateMax time.Duration `json:"generator_late_max,omitempty"`
	// Status and Classes count that second's responses by status code and
	// failures by error class.
	Status  map[int]int64    `json:"status,omitempty"`
	Classes map[string]int64 `json:"classes,omitempty"`
	// InFlight is the number of requests in flight at the end of the second
	// (summed over hosts after a merge).
	InFlight int `json:"in_flight"`
	// TargetRPS is the planned rate.
	TargetRPS float64 `json:"target_rps"`
	// P50, P90, P95, P99 and P999 are that second's latency percentiles.
	P50  time.Duration `json:"p50"`
	P90  time.Duration `json:"p90"`
	P95  time.Duration `json:"p95"`
	P99  time.Duration `json:"p99"`
	P999 time.Duration `json:"p99_9"`
	// Hist is the second's latency histogram, kept so that series from
	// several hosts merge exactly; nil when nothing completed. In JSON it
	// is the V2 compressed encoding.
	Hist *PackedHistogram `json:"hist,omitempty"`
	// Endpoints are the second's rows of the first [MaxEndpointSeries]
	// endpoints (in Options.Endpoints order) that completed requests in
	// it; nil when none did.
	Endpoints []SecondEndpoint `json:"endpoints,omitempty"`
}

// MaxEndpointSeries is the most endpoints a [Second] keeps a row of: the
// per-endpoint series of a run of many endpoints (a HAR file) cover its
// first ones, so that a second's memory stays bounded whatever the config.
const MaxEndpointSeries = 8

// SecondEndpoint is one endpoint's part of a [Second].
type SecondEndpoint struct {
	// Name is the endpoint's name from Options.Endpoints.
	Name string `json:"name"`
	// Requests and Errors count the endpoint's completions and failures
	// in the second.
	Requests int64 `json:"requests"`
	Errors   int64 `json:"errors"`
	// P50 and P99 are the endpoint's latency percentiles in the second.
	P50 time.Duration `json:"p50"`
	P99 time.Duration `json:"p99"`
	// Hist is the endpoint's latency histogram in the second, as
	// [Second.Hist] is the second's.
	Hist *PackedHistogram `json:"hist,omitempty"`
}

// secondEndpoints are the rows of s's endpoints for its Second.
func secondEndpoints(s *Snapshot) []SecondEndpoint {
	var out []SecondEndpoint
	for i := range min(len(s.Endpoints), MaxEndpointSeries) {
		e := &s.Endpoints[i]
		if e.Requests == 0 {
			continue
		}
		row := SecondEndpoint{Name: e.Name, Requests: e.Requests, Errors: e.Errors}
		if e.Latency != nil && e.Latency.Count() > 0 {
			row.Hist = e.Latency.Pack()
		}
		row.percentiles()
		out = append(out, row)
	}
	return out
}

func (e *SecondEndpoint) percentiles() { e.P50, e.P99 = e.Hist.Quantile(0.5), e.Hist.Quantile(0.99) }

// mergeSecondEndpoints adds o's rows to rows by name, appending the names
// rows lacks while fewer than MaxEndpointSeries; it takes o's histograms.
func mergeSecondEndpoints(rows, o []SecondEndpoint) []SecondEndpoint {
	for _, e := range o {
		i := slices.IndexFunc(rows, func(r SecondEndpoint) bool { return r.Name == e.Name })
		if i < 0 {
			if len(rows) < MaxEndpointSeries {
				rows = append(rows, e)
			}
			continue
		}
		r := &rows[i]
		r.Requests += e.Requests
		r.Errors += e.Errors
		if r.Hist == nil {
			r.Hist = e.Hist
		} else {
			r.Hist.Merge(e.Hist)
		}
		r.percentiles()
	}
	return rows
}

// cloneSecondEndpoints is a deep copy of rows.
func cloneSecondEndpoints(rows []SecondEndpoint) []SecondEndpoint {
	if rows == nil {
		return nil
	}
	out := slices.Clone(rows)
	for i := range out {
		out[i].Hist = out[i].Hist.Clone()
	}
	return out
}

// Result is the outcome of a run, or of several hosts' runs merged. Build one
// from snapshots with [Result.AddSnapshot], combine with [Result.Merge], and
// call [Result.Finish] after the last change. The zero value is an empty
// result. A Result is not safe for concurrent use.
type Result struct {
	// Start is when the run started; Elapsed how long it ran.
	Start   time.Time     `json:"start"`
	Elapsed time.Duration `json:"elapsed"`
	// Open is true for the open model (a rate), false for the closed model.
	Open bool `json:"open"`
	// TargetRPS is the planned mean arrival rate (open model).
	TargetRPS float64 `json:"target_rps"`
	// Stats are the totals.
	Stats
	// Endpoints are the per-endpoint totals.
	Endpoints []EndpointStats `json:"endpoints"`
	// Dropped is the number of arrivals never sent: they waited longer than
	// Options.MaxLateness for a worker, were still due when the run
	// stopped, or the driver reported them unsent ([Sample.Unsent]).
	// DroppedBy splits it by reason ([DropReason] names).
	Dropped   int64            `json:"dropped"`
	DroppedBy map[string]int64 `json:"dropped_by,omitempty"`
	// Workers is the most open-model workers the run started, and
	// MaxWorkers the most it could (Options.MaxConcurrency); summed over
	// hosts after a merge.
	Workers    int `json:"workers,omitempty"`
	MaxWorkers int `json:"max_workers,omitempty"`
	// GeneratorLate and GeneratorLateMax total the seconds' evidence that
	// the generator fell behind; see [Snapshot].
	GeneratorLate    int64         `json:"generator_late,omitempty"`
	GeneratorLateMax time.Duration `json:"generator_late_max,omitempty"`
	// GeneratorBound is set by Finish when the generator itself fell
	// behind: see [GeneratorBehind]. The latencies then describe the
	// generator as much as the target. Lower the rate or give the
	// generator more CPU.
	GeneratorBound bool `json:"generator_bound"`
	// WorkerBound is set by Finish when arrivals were dropped for
	// lateness or more than 1% of the requests waited for a free worker
	// (Queued): every worker was busy, so the target's latency or the
	// worker cap limited the test. The latencies are still honest
	// (measured from the intended time).
	WorkerBound bool `json:"worker_bound"`
	// Invalid lists why the run did not deliver the load it was asked
	// for, set by Finish; empty for a valid run. See [Result.Validity].
	Invalid []Invalidity `json:"invalid,omitempty"`
	// Interrupted is true when the context stopped the run early.
	Interrupted bool `json:"interrupted"`
	// Unreported is, for a multi-host run that lost a host, what Requests
	// counts of its traffic without metrics and the bound of what it may
	// have sent beyond; nil otherwise. The coordinator's merge sets it.
	Unreported *Unreported `json:"unreported,omitempty"`
	// Seconds is the per-second series, in plan-second order.
	Seconds []Second `json:"seconds"`
	// Protocol holds a WebSocket, SSE or gRPC driver's own measurements;
	// nil for HTTP and for a mixed-protocol run.
	Protocol *ProtocolStats `json:"protocol,omitempty"`
	// Protocols is, for a mixed-protocol run (endpoints of several
	// protocols), one entry per protocol its endpoints use, in the order
	// of their first endpoint: the measurements of every driver of that
	// protocol merged, and the names of its endpoints (http has an entry
	// with its endpoints and no measurements of its own). nil otherwise,
	// so a single-protocol result keeps Protocol alone.
	Protocols []*ProtocolStats `json:"protocols,omitempty"`
	// Checks are the response checks' counts, in config order; nil
	// without checks.
	Checks []CheckStats `json:"checks,omitempty"`
	// SUT summarises the resource use of the system under test during the
	// run (see [Options.Resources]); nil when none was measured.
	SUT []ResourceSummary `json:"sut,omitempty"`
	// Phases are the Stats of each named phase (see [Result.SetPhases]),
	// in timeline order; nil when the run has none.
	Phases []PhaseStats `json:"phases,omitempty"`
}

// AddSnapshot adds one host's snapshot of one second to r. It does not keep
// s or its histograms.
func (r *Result) AddSnapshot(s *Snapshot) {
	r.Stats.Merge(&s.Stats)
	r.Dropped += s.Dropped
	r.DroppedBy = addCounts(r.DroppedBy, s.DroppedBy)
	r.GeneratorLate += s.GeneratorLate
	r.GeneratorLateMax = max(r.GeneratorLateMax, s.GeneratorLateMax)
	r.Checks = mergeChecks(r.Checks, s.Checks)
	for i := range s.Endpoints {
		r.endpoint(s.Endpoints[i].Name).Merge(&s.Endpoints[i].Stats)
	}
	r.addPhases(s)
	row := Second{
		Second: s.Second, Requests: s.Requests, Errors: s.Errors, Dropped: s.Dropped, Late: s.Late,
		InFlight: s.InFlight, TargetRPS: s.TargetRPS,
		Status: maps.Clone(s.Status), Classes: maps.Clone(s.Classes), DroppedBy: maps.Clone(s.DroppedBy),
		GeneratorLate: s.GeneratorLate, GeneratorLateMax: s.GeneratorLateMax,
		Endpoints: secondEndpoints(s),
	}
	if s.Latency != nil && s.Latency.Count() > 0 {
		row.Hist = s.Latency.Pack()
	}
	r.addSecond(row)
}

func (r *Result) endpoint(name string) *Stats {
	for i := range r.Endpoints {
		if r.Endpoints[i].Name == name {
			return &r.Endpoints[i].Stats
		}
	}
	r.Endpoints = append(r.Endpoints, EndpointStats{Name: name})
	return &r.Endpoints[len(r.Endpoints)-1].Stats
}

// addSecond merges row into the series, keeping it sorted by second; r
// takes row's maps and histogram.
func (r *Result) addSecond(row Second) {
	i, found := slices.BinarySearchFunc(r.Seconds, row.Second, func(s Second, n int) int { return s.Second - n })
	if !found {
		r.Seconds = slices.Insert(r.Seconds, i, row)
		r.Seconds[i].percentiles()
		return
	}
	s := &r.Seconds[i]
	s.Requests += row.Requests
	s.Errors += row.Errors
	s.Dropped += row.Dropped
	s.DroppedBy = addCounts(s.DroppedBy, row.DroppedBy)
	s.GeneratorLate += row.GeneratorLate
	s.GeneratorLateMax = max(s.GeneratorLateMax, row.GeneratorLateMax)
	s.Late += row.Late
	s.Status = addCounts(s.Status, row.Status)
	s.Classes = addCounts(s.Classes, row.Classes)
	s.InFlight += row.InFlight
	s.TargetRPS = max(s.TargetRPS, row.TargetRPS) // the same global plan on every host
	s.Endpoints = mergeSecondEndpoints(s.Endpoints, row.Endpoints)
	if row.Hist.Count() > 0 {
		if s.Hist == nil {
			s.Hist = row.Hist
		} else {
			s.Hist.Merge(row.Hist)
		}
	}
	s.percentiles()
}

func (s *Second) percentiles() {
	h := s.Hist
	s.P50, s.P90, s.P95, s.P99, s.P999 = h.Quantile(0.50), h.Quantile(0.90), h.Quantile(0.95), h.Quantile(0.99), h.Quantile(0.999)
}

// addCounts adds o's counts to m, allocating m when needed.
func addCounts[K comparable](m, o map[K]int64) map[K]int64 {
	for k, v := range o {
		if m == nil {
			m = make(map[K]int64, len(o))
		}
		m[k] += v
	}
	return m
}

// Merge adds another host's result to r: counters add up, histograms merge,
// per-second rows with the same plan second combine, and percentiles are
// recomputed from the merged histograms (never averaged). Elapsed becomes
// the longer of the two; call Finish afterwards.
func (r *Result) Merge(o *Result) {
	if r.Start.IsZero() || !o.Start.IsZero() && o.Start.Before(r.Start) {
		r.Start = o.Start
	}
	r.Elapsed = max(r.Elapsed, o.Elapsed)
	r.Open = r.Open || o.Open
	r.TargetRPS = max(r.TargetRPS, o.TargetRPS)
	r.Stats.Merge(&o.Stats)
	r.Dropped += o.Dropped
	r.DroppedBy = addCounts(r.DroppedBy, o.DroppedBy)
	r.Workers += o.Workers
	r.MaxWorkers += o.MaxWorkers
	r.GeneratorLate += o.GeneratorLate
	r.GeneratorLateMax = max(r.GeneratorLateMax, o.GeneratorLateMax)
	r.Interrupted = r.Interrupted || o.Interrupted
	for i := range o.Endpoints {
		r.endpoint(o.Endpoints[i].Name).Merge(&o.Endpoints[i].Stats)
	}
	r.mergePhases(o)
	for _, s := range o.Seconds {
		// r's rows are changed by later merges: they must not share o's.
		s.Status, s.Classes, s.Hist = maps.Clone(s.Status), maps.Clone(s.Classes), s.Hist.Clone()
		s.DroppedBy = maps.Clone(s.DroppedBy)
		s.Endpoints = cloneSecondEndpoints(s.Endpoints)
		r.addSecond(s)
	}
	if o.Protocol != nil {
		if r.Protocol == nil {
			r.Protocol = &ProtocolStats{}
		}
		r.Protocol.Merge(o.Protocol)
	}
	r.Protocols = MergeProtocols(r.Protocols, o.Protocols)
	r.Checks = mergeChecks(r.Checks, o.Checks)
}

// Finish computes the derived fields (GeneratorBound, WorkerBound,
// Invalid) after the last change.
func (r *Result) Finish() {
	r.GeneratorBound = GeneratorBehind(r).Behind || r.Stalled > 0
	workerDrops := r.DroppedBy[DropLate.String()] + r.DroppedBy[DropStop.String()]
	r.WorkerBound = workerDrops > 0 || r.Queued*100 > r.Requests
	r.Invalid = r.Validity()
}

// MeasuredNothing reports whether no request succeeded: every request
// failed (a closed port, a wrong URL, a target answering only errors) or
// none completed. Such a run says nothing about the target's performance,
// so forgeload fails it whatever its thresholds say.
func (r *Result) MeasuredNothing() bool { return r.Requests <= r.Errors }

// RPS returns the achieved rate: completed requests per second of Elapsed.
func (r *Result) RPS() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Requests) / r.Elapsed.Seconds()
}
