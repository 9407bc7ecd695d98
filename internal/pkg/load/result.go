package load

import (
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
	// their intended time (open model only).
	Late int64 `json:"late"`
	// Status counts responses by status code.
	Status map[int]int64 `json:"status,omitempty"`
	// Classes counts failed requests by error class name.
	Classes map[string]int64 `json:"classes,omitempty"`
	// Latency is the latency histogram; nil means no requests.
	Latency *Histogram `json:"latency,omitempty"`
}

// Merge adds o to s.
func (s *Stats) Merge(o *Stats) {
	s.Requests += o.Requests
	s.Errors += o.Errors
	s.BytesIn += o.BytesIn
	s.BytesOut += o.BytesOut
	s.Retries += o.Retries
	s.Late += o.Late
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
	// Dropped is the number of arrivals dropped during the second.
	Dropped int64 `json:"dropped"`
	// InFlight is the number of requests in flight at the end of the second.
	InFlight int `json:"in_flight"`
	// TargetRPS is the planned global arrival rate over the second (open
	// model), 0 in the closed model.
	TargetRPS float64 `json:"target_rps"`
}

// Second is one row of a result's per-second series.
type Second struct {
	// Second is the plan second.
	Second int `json:"second"`
	// Requests, Errors and Dropped count that second's completions, failures
	// and dropped arrivals; Requests is also the achieved rate in req/s.
	Requests int64 `json:"requests"`
	Errors   int64 `json:"errors"`
	Dropped  int64 `json:"dropped"`
	// InFlight is the number of requests in flight at the end of the second
	// (summed over hosts after a merge).
	InFlight int `json:"in_flight"`
	// TargetRPS is the planned rate.
	TargetRPS float64 `json:"target_rps"`
	// P50, P90, P95 and P99 are that second's latency percentiles.
	P50 time.Duration `json:"p50"`
	P90 time.Duration `json:"p90"`
	P95 time.Duration `json:"p95"`
	P99 time.Duration `json:"p99"`
	// Hist is the second's latency histogram in V2 compressed encoding, kept
	// so that series from several hosts merge exactly.
	Hist []byte `json:"hist,omitempty"`
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
	// Dropped is the number of arrivals dropped because every worker was busy.
	Dropped int64 `json:"dropped"`
	// GeneratorBound is set by Finish when arrivals were dropped or more than
	// 1% were late: the generator fell behind, and the latencies describe the
	// generator as much as the target.
	GeneratorBound bool `json:"generator_bound"`
	// Interrupted is true when the context stopped the run early.
	Interrupted bool `json:"interrupted"`
	// Seconds is the per-second series, in plan-second order.
	Seconds []Second `json:"seconds"`
}

// AddSnapshot adds one host's snapshot of one second to r. It does not keep
// s or its histograms.
func (r *Result) AddSnapshot(s *Snapshot) {
	r.Stats.Merge(&s.Stats)
	r.Dropped += s.Dropped
	for i := range s.Endpoints {
		r.endpoint(s.Endpoints[i].Name).Merge(&s.Endpoints[i].Stats)
	}
	row := Second{
		Second: s.Second, Requests: s.Requests, Errors: s.Errors, Dropped: s.Dropped,
		InFlight: s.InFlight, TargetRPS: s.TargetRPS,
	}
	if s.Latency != nil && s.Latency.Count() > 0 {
		row.Hist, _ = s.Latency.Encode() // encoding an in-range histogram does not fail
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

// addSecond merges row into the series, keeping it sorted by second.
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
	s.InFlight += row.InFlight
	s.TargetRPS = max(s.TargetRPS, row.TargetRPS) // the same global plan on every host
	if len(row.Hist) > 0 {
		h := NewHistogram()
		for _, b := range [][]byte{s.Hist, row.Hist} {
			if len(b) == 0 {
				continue
			}
			if d, err := DecodeHistogram(b); err == nil {
				h.Merge(d)
			}
		}
		s.Hist, _ = h.Encode()
	}
	s.percentiles()
}

func (s *Second) percentiles() {
	s.P50, s.P90, s.P95, s.P99 = 0, 0, 0, 0
	if len(s.Hist) == 0 {
		return
	}
	h, err := DecodeHistogram(s.Hist)
	if err != nil {
		return
	}
	s.P50, s.P90, s.P95, s.P99 = h.Quantile(0.50), h.Quantile(0.90), h.Quantile(0.95), h.Quantile(0.99)
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
	r.Interrupted = r.Interrupted || o.Interrupted
	for i := range o.Endpoints {
		r.endpoint(o.Endpoints[i].Name).Merge(&o.Endpoints[i].Stats)
	}
	for _, s := range o.Seconds {
		r.addSecond(s)
	}
}

// Finish computes the derived fields (GeneratorBound) after the last change.
func (r *Result) Finish() {
	r.GeneratorBound = r.Dropped > 0 || r.Late*100 > r.Requests
}

// RPS returns the achieved rate: completed requests per second of Elapsed.
func (r *Result) RPS() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Requests) / r.Elapsed.Seconds()
}
