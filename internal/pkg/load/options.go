package load

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Defaults used where an [Options] field is zero.
const (
	// DefaultConcurrency is the number of workers (open model) or users
	// (closed model without VUs).
	DefaultConcurrency = 1
	// DefaultMaxLateness is how late a worker may pick up an arrival before
	// the arrival counts as dropped. It is long enough that a target stalling
	// for a few seconds shows up in the latencies (each late arrival is
	// measured from its intended time) rather than as missing samples.
	DefaultMaxLateness = 5 * time.Second
	// LateTolerance is the lateness above which a sent arrival counts as late.
	LateTolerance = time.Millisecond
	// GeneratorLateTolerance is the lateness above which an arrival the
	// generator sent late while a worker was free is evidence that the
	// generator fell behind (Snapshot.GeneratorLate). Below it, a timer
	// that fired a few milliseconds late on a busy machine is noise that
	// no percentile worth gating on can see.
	GeneratorLateTolerance = 10 * time.Millisecond
	// DefaultGrace is how long in-flight requests may finish after arrivals
	// stop before they are cancelled: Crankfire's graceful_shutdown
	// default.
	DefaultGrace = 5 * time.Second
	// MaxInterruptGrace caps the grace period of a run stopped by its
	// context (Ctrl-C, SIGTERM, a cancel in the forge): in-flight requests
	// are cancelled at most this long after the stop, so an interrupted run
	// returns within a second whatever its config.
	MaxInterruptGrace = 500 * time.Millisecond
	// MaxCancelWait bounds how long Run waits for in-flight requests
	// after cancelling their context. The drivers return at once; the
	// bound keeps a requester that ignores its context from holding a
	// stopped run.
	MaxCancelWait = time.Second
	// DefaultProgressInterval is how often Options.Progress is called.
	DefaultProgressInterval = 5 * time.Second
	// MaxUsers is the most closed-model users (concurrency or vus, capped
	// by Total) a run accepts: each is a goroutine and a connection that
	// exist for the whole run. The open model has no such cap because it
	// starts workers only as the load needs them.
	MaxUsers = 1_000_000
	// vuEvalInterval is how often the closed model re-evaluates its VU target.
	vuEvalInterval = 100 * time.Millisecond
	// leasePoll is how often a closed-model user re-checks an expired
	// Options.Lease.
	leasePoll = 10 * time.Millisecond
)

// VUStage is one segment of the closed-model VU ramp: the number of active
// virtual users moves linearly from the previous target (Options.VUs for the
// first stage) to Target over Duration, and holds the last target afterwards.
type VUStage struct {
	// Duration is how long the stage lasts; it must be positive.
	Duration time.Duration
	// Target is the VU count at the end of the stage; it must be >= 0.
	Target int
}

// Options configures one run of [Run]. Only Requester is required; every
// other zero field has a documented default. The run uses the open model
// (arrivals at a rate) when Rate > 0 or Stages is non-empty, and the closed
// model (users looping as fast as they can, or with ThinkTime) otherwise.
type Options struct {
	// Requester performs one request and reports its endpoint, status,
	// bytes and error class in the engine's Sample. Required.
	Requester Requester

	// Concurrency is the number of workers. In the open model it is the
	// starting pool, and the maximum number of requests in flight unless
	// MaxConcurrency is larger; in the closed model without VUs it is the
	// number of looping users. Default DefaultConcurrency.
	Concurrency int
	// MaxConcurrency is, in the open model, the most workers (requests in
	// flight) the pool may grow to: workers are started one at a time as
	// the load needs them. 0, or less than Concurrency, means
	// Concurrency. The closed model ignores it.
	MaxConcurrency int
	// Total caps the number of requests. In the open model it caps the
	// global arrival index, so hosts striped with Owns together send
	// exactly Total. 0 means no cap.
	Total uint64
	// Duration caps the plan time. 0 means no cap: the run ends with the
	// plan, Total or the context.
	Duration time.Duration

	// Rate is the constant arrival rate in requests per second, after any
	// Stages. 0 with no Stages selects the closed model; 0 after Stages ends
	// the run with the last stage.
	Rate float64
	// Arrival spaces arrivals: Uniform (the zero value) or Poisson.
	Arrival ArrivalModel
	// Seed seeds the Poisson arrival source.
	Seed uint64
	// Stages are the load patterns (ramp, step, spike), back to back from
	// plan time 0.
	Stages []Stage
	// MaxLateness is how long after its intended time an arrival may wait
	// for a free worker. An arrival is never silently delayed: one sent more
	// than LateTolerance late is counted as late and its latency includes
	// the wait (no coordinated omission); one that found every worker busy
	// for longer than MaxLateness is dropped and counted. A small value
	// (k6-style) drops instead of queueing; a negative value never drops
	// (wrk2-style). Default DefaultMaxLateness.
	MaxLateness time.Duration
	// MaxStall, when positive, skips arrivals after a stall of the
	// generator itself: once a free worker picks up an arrival more than
	// MaxStall after its intended time (the process or host was frozen),
	// that arrival and every other one already due are counted as dropped
	// and Stalled, never sent at once in a burst. 0 leaves them to
	// MaxLateness. Distributed shares set it (see loadrun).
	MaxStall time.Duration

	// VUs is the number of closed-model virtual users at the start; with
	// VUStages it is the ramp's starting point. 0 means Concurrency.
	VUs int
	// VUStages ramps the number of active virtual users.
	VUStages []VUStage
	// ThinkTime is the pause of a virtual user after each request. With
	// ThinkTimeMax > ThinkTime the pause is uniformly random in
	// [ThinkTime, ThinkTimeMax].
	ThinkTime    time.Duration
	ThinkTimeMax time.Duration
	// ScaleVUs maps the plan's VU target to this host's share at every ramp
	// evaluation; nil means identity. A multi-host run sets it to its
	// segment's exact split.
	ScaleVUs func(v int) int

	// Owns reports whether this host fires global arrival k (striping);
	// nil means every arrival. It is called from one goroutine at a time.
	Owns func(k uint64) bool
	// Lease, if set, is checked right before every request is sent. While
	// it returns false nothing is sent: an open-model arrival that falls
	// due then is dropped (and counted), a closed-model user waits,
	// checking again every leasePoll, until it is true again or the run
	// stops. A multi-host run sets it to "this host's lease on its share
	// has not expired, on its own monotonic clock", so a host that was
	// paused past its lease (SIGSTOP, a frozen VM, a long GC pause) sends
	// nothing when it resumes, whatever its goroutines were doing. It is
	// called on the request path: it must be cheap and must not allocate.
	Lease func() bool
	// StartAt is the wall-clock instant at which plan time Offset begins;
	// zero means now. A future StartAt makes Run wait.
	StartAt time.Time
	// Offset is the plan position at which this run starts, for a segment
	// taken over mid-run: arrivals before it are skipped and VU ramps are
	// evaluated from it. Duration stays measured from plan time 0. If the
	// open-model run actually starts later than StartAt (its setup or its
	// host stalled), the arrivals that fell due meanwhile are counted as
	// dropped rather than sent late all at once.
	Offset time.Duration

	// Endpoints names the endpoints a Requester reports by index;
	// empty means one endpoint named "default".
	Endpoints []string

	// Grace is how long in-flight requests may finish after arrivals stop
	// (end of plan, or the context is done) before their context is
	// cancelled. At the end of an open plan, arrivals that fell due before
	// the end but are still waiting for a worker are sent (late) during the
	// grace period too; what is still unsent when it expires is dropped.
	// A run stopped by its context gets at most MaxInterruptGrace.
	// Default DefaultGrace; negative cancels at once.
	Grace time.Duration
	// Deadline, if positive, is the plan time (from plan time 0, like
	// Duration) at which the run stops and its in-flight requests are
	// cancelled, whatever Duration and Grace say: the runner admin's hard
	// bound on how long a run lasts. 0 means none.
	Deadline time.Duration

	// Progress, if set, is called every ProgressInterval from the
	// collector goroutine (never on the request path).
	Progress func(Progress)
	// ProgressInterval is rounded up to whole seconds. Default
	// DefaultProgressInterval.
	ProgressInterval time.Duration
	// Resources, if set, holds the resource samples of the system under
	// test that the caller feeds during the run: progress lines show the
	// latest, and the result's SUT field their summary.
	Resources *Resources
	// OnSecond, if set, is called once per elapsed plan second with that
	// second's mergeable snapshot; the callee may keep it.
	OnSecond func(*Snapshot)
	// Phases are the plan's named phases: the result keeps the Stats of
	// each (see [Result.SetPhases]). They change nothing in the run.
	Phases []Phase
}

// Open reports whether o selects the open model: a rate or rate stages
// (arrivals on a schedule) rather than workers or virtual users looping.
// It is the one definition of the model; every package asks it.
func (o *Options) Open() bool { return o.Rate > 0 || len(o.Stages) > 0 }

// open is [Options.Open], for the engine's own calls.
func (o *Options) open() bool { return o.Open() }

// Validate checks o and returns an error naming the first bad field and
// how to fix it.
func (o *Options) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if o.Requester == nil {
		bad("load options: requester is nil: set Options.Requester to a driver such as httpload")
	}
	if o.Concurrency < 0 {
		bad("load options: concurrency %d is negative: use a count >= 1 (0 means %d)", o.Concurrency, DefaultConcurrency)
	}
	if o.MaxConcurrency < 0 {
		bad("load options: max concurrency %d is negative: use a count >= 1 (0 means concurrency)", o.MaxConcurrency)
	}
	if o.Duration < 0 {
		bad("load options: duration %s is negative: use a positive duration or 0 for none", o.Duration)
	}
	o.validateOpen(bad)
	o.validateClosed(bad)
	o.validateTiming(bad)
	return errors.Join(errs...)
}

// validateOpen checks the open model's fields: rate, arrival model, stages.
func (o *Options) validateOpen(bad func(format string, args ...any)) {
	if o.Rate < 0 || math.IsNaN(o.Rate) || math.IsInf(o.Rate, 0) {
		bad("load options: rate %v is invalid: use requests per second >= 0", o.Rate)
	}
	if o.Arrival > Poisson {
		bad("load options: arrival model %d is unknown: use uniform or poisson", o.Arrival)
	}
	for i, s := range o.Stages {
		if s.Duration <= 0 {
			bad("load options: load pattern stage %d: duration %s must be positive", i+1, s.Duration)
		}
		if s.From < 0 || s.To < 0 || math.IsNaN(s.From+s.To) || math.IsInf(s.From+s.To, 0) {
			bad("load options: load pattern stage %d: rates %v→%v must be finite and >= 0", i+1, s.From, s.To)
		}
	}
}

// validateClosed checks the closed model's fields (VUs, VU stages, the
// user cap, think time) and that the two models are not mixed.
func (o *Options) validateClosed(bad func(format string, args ...any)) {
	if o.VUs < 0 {
		bad("load options: vus %d is negative: use a count >= 0", o.VUs)
	}
	for i, s := range o.VUStages {
		if s.Duration <= 0 {
			bad("load options: vu stage %d: duration %s must be positive", i+1, s.Duration)
		}
		if s.Target < 0 {
			bad("load options: vu stage %d: target %d must be >= 0", i+1, s.Target)
		}
	}
	if o.open() && (o.VUs > 0 || len(o.VUStages) > 0) {
		bad("load options: both a rate and vus are set: choose the open model (rate, load patterns) or the closed model (vus)")
	}
	if !o.open() {
		users := uint64(max(o.maxVUs(), 0))
		if o.Total > 0 {
			users = min(users, o.Total)
		}
		if users > MaxUsers {
			bad("load options: %d closed-model users cannot be honoured (each is a goroutine and a connection for the whole run): use at most %d, set total, or set a rate (the open model starts workers only as the load needs them)", users, MaxUsers)
		}
	}
	if o.ThinkTime < 0 || o.ThinkTimeMax < 0 {
		bad("load options: think time %s..%s is negative: use durations >= 0", o.ThinkTime, o.ThinkTimeMax)
	}
}

// validateTiming checks the plan-position and reporting times: offset,
// progress interval, deadline.
func (o *Options) validateTiming(bad func(format string, args ...any)) {
	if o.Offset < 0 {
		bad("load options: offset %s is negative", o.Offset)
	}
	if o.Duration > 0 && o.Offset >= o.Duration {
		bad("load options: offset %s is not before duration %s: nothing would run", o.Offset, o.Duration)
	}
	if o.ProgressInterval < 0 {
		bad("load options: progress interval %s is negative", o.ProgressInterval)
	}
	if o.Deadline < 0 {
		bad("load options: deadline %s is negative: use a positive plan time or 0 for none", o.Deadline)
	}
}

// thinkTime returns one think-time pause.
func (o *Options) thinkTime() time.Duration {
	if o.ThinkTimeMax > o.ThinkTime {
		return o.randomThinkTime()
	}
	return o.ThinkTime // small enough to inline: a closed loop asks after every request
}

func (o *Options) randomThinkTime() time.Duration {
	return o.ThinkTime + time.Duration(rand.Int64N(int64(o.ThinkTimeMax-o.ThinkTime)+1))
}

func (o *Options) concurrency() int {
	if o.Concurrency > 0 {
		return o.Concurrency
	}
	return DefaultConcurrency
}

// maxConcurrency is the open model's cap on workers.
func (o *Options) maxConcurrency() int { return max(o.concurrency(), o.MaxConcurrency) }

func (o *Options) maxLateness() time.Duration {
	switch {
	case o.MaxLateness < 0:
		return time.Duration(math.MaxInt64)
	case o.MaxLateness == 0:
		return DefaultMaxLateness
	}
	return o.MaxLateness
}

func (o *Options) grace() time.Duration {
	switch {
	case o.Grace < 0:
		return 0
	case o.Grace == 0:
		return DefaultGrace
	}
	return o.Grace
}

func (o *Options) endpointNames() []string {
	if len(o.Endpoints) == 0 {
		return []string{"default"}
	}
	return o.Endpoints
}

// vuTarget returns the planned number of active VUs at plan time t (before
// ScaleVUs).
func (o *Options) vuTarget(t time.Duration) int {
	prev := o.VUs
	if prev == 0 && len(o.VUStages) == 0 {
		return o.concurrency()
	}
	var at time.Duration
	for _, s := range o.VUStages {
		if t < at+s.Duration {
			frac := float64(t-at) / float64(s.Duration)
			return int(math.Round(float64(prev) + float64(s.Target-prev)*frac))
		}
		at += s.Duration
		prev = s.Target
	}
	return prev
}

// maxVUs returns the most VUs the plan ever asks for (before ScaleVUs).
func (o *Options) maxVUs() int {
	m := o.VUs
	if m == 0 && len(o.VUStages) == 0 {
		return o.concurrency()
	}
	for _, s := range o.VUStages {
		m = max(m, s.Target)
	}
	return m
}
