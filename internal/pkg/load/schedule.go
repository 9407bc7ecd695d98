package load

import (
	"math"
	"math/rand/v2"
	"time"
)

// Stage is one segment of the open-model rate timeline: the arrival rate
// moves linearly from From to To arrivals per second over Duration. A ramp is
// one Stage, a step is one constant Stage per step, and a spike is a short
// constant Stage. Stages run back to back on one timeline; arrival times are
// taken from the exact integral of this piecewise-linear curve, so a ramp is
// smooth rather than a staircase.
type Stage struct {
	// Duration is how long the stage lasts; it must be positive.
	Duration time.Duration
	// From and To are the rates at the start and the end of the stage, in
	// arrivals per second; both must be >= 0.
	From, To float64
}

// Ramp returns a stage whose rate moves linearly from from to to over d.
func Ramp(from, to float64, d time.Duration) Stage { return Stage{Duration: d, From: from, To: to} }

// Step returns a stage holding rate rps for d; a load pattern of steps is one
// Step per step.
func Step(rps float64, d time.Duration) Stage { return Stage{Duration: d, From: rps, To: rps} }

// Spike returns a stage holding rate rps for d, like [Step]; it exists so a
// schedule reads like its config.
func Spike(rps float64, d time.Duration) Stage { return Step(rps, d) }

// curve is the cumulative arrival count N(t) of a schedule: the stages in
// order, then tail arrivals per second for ever (tail may be 0: it ends).
type curve struct {
	stages []Stage
	start  []float64 // stage start, seconds
	cum    []float64 // N at stage start
	endT   float64   // end of the last stage, seconds
	endN   float64   // N at endT
	tail   float64
}

func newCurve(stages []Stage, tail float64) curve {
	c := curve{stages: stages, tail: tail}
	var t, n float64
	for _, s := range stages {
		c.start = append(c.start, t)
		c.cum = append(c.cum, n)
		d := s.Duration.Seconds()
		n += (s.From + s.To) / 2 * d
		t += d
	}
	c.endT, c.endN = t, n
	return c
}

// rate returns the planned rate at t seconds.
func (c *curve) rate(t float64) float64 {
	for i, s := range c.stages {
		d := s.Duration.Seconds()
		if t < c.start[i]+d {
			x := t - c.start[i]
			return s.From + (s.To-s.From)*x/d
		}
	}
	return c.tail
}

// count returns N(t), the planned number of arrivals in [0, t).
func (c *curve) count(t float64) float64 {
	if t <= 0 {
		return 0
	}
	for i, s := range c.stages {
		d := s.Duration.Seconds()
		if t < c.start[i]+d {
			x := t - c.start[i]
			return c.cum[i] + s.From*x + (s.To-s.From)*x*x/(2*d)
		}
	}
	return c.endN + c.tail*(t-c.endT)
}

// inverse returns the time t at which N(t) = n, starting the stage search at
// *cursor (arrivals are asked for in increasing order, so the search is
// amortised O(1)). ok is false when the plan never reaches n.
func (c *curve) inverse(n float64, cursor *int) (t float64, ok bool) {
	for i := *cursor; i < len(c.stages); i++ {
		s := c.stages[i]
		d := s.Duration.Seconds()
		within := n - c.cum[i]
		if i+1 < len(c.stages) && n >= c.cum[i+1] || i+1 == len(c.stages) && n >= c.endN {
			continue
		}
		*cursor = i
		if within <= 0 {
			return c.start[i], true
		}
		m := (s.To - s.From) / d // slope, arrivals/s²
		a := s.From
		// Solve m/2·x² + a·x = within in a form that is stable for m ≈ 0.
		disc := a*a + 2*m*within
		if disc < 0 {
			disc = 0
		}
		x := 2 * within / (a + math.Sqrt(disc))
		return c.start[i] + min(x, d), true
	}
	*cursor = len(c.stages)
	if c.tail <= 0 {
		return 0, false
	}
	return c.endT + (n-c.endN)/c.tail, true
}

// ArrivalModel is how arrivals are spaced along the rate curve. The zero
// value is Uniform.
type ArrivalModel uint8

// The arrival models.
const (
	// Uniform spaces arrivals evenly: arrival k is at the time the
	// cumulative planned count reaches k.
	Uniform ArrivalModel = iota
	// Poisson makes arrivals a (non-homogeneous) Poisson process with the
	// planned rate: exponential gaps drawn from a source seeded with
	// [Options.Seed], so a run can be reproduced and every host of a
	// multi-host run computes the same global schedule.
	Poisson
)

// String returns "uniform" or "poisson".
func (m ArrivalModel) String() string {
	if m == Poisson {
		return "poisson"
	}
	return "uniform"
}

// Schedule is the global arrival schedule of an open-model plan: arrival k
// (k = 0, 1, 2, …) is due at plan time t_k. Every host of a multi-host run
// computes the same schedule, so striping by k splits it exactly. A Schedule
// is not safe for concurrent use; the engine serialises access to it.
type Schedule struct {
	c       curve
	model   ArrivalModel
	rng     *rand.Rand
	u       float64 // operational time of the next Poisson arrival
	k       uint64
	cursor  int
	total   uint64
	end     float64 // plan end in seconds; +Inf without a duration
	owns    func(uint64) bool
	stopped bool
	// totalHit is set once Total ended the schedule.
	totalHit bool
}

// NewSchedule returns the schedule of o's open-model plan: o.Stages, then
// o.Rate, spaced by o.Arrival, capped by o.Total and o.Duration, restricted
// to the arrivals o.Owns, and starting at the first arrival at or after
// o.Offset. It uses only those fields of o.
func NewSchedule(o *Options) *Schedule {
	s := &Schedule{
		c:     newCurve(o.Stages, o.Rate),
		model: o.Arrival,
		total: o.Total,
		end:   math.Inf(1),
		owns:  o.Owns,
	}
	if o.Duration > 0 {
		s.end = o.Duration.Seconds()
	}
	if o.Arrival == Poisson {
		s.rng = rand.New(rand.NewPCG(o.Seed, o.Seed^0x9e3779b97f4a7c15))
		s.u = s.rng.ExpFloat64()
	}
	if o.Offset > 0 {
		off := o.Offset.Seconds()
		for {
			_, t, ok := s.peek()
			if !ok || t >= off {
				break
			}
			s.advance()
		}
	}
	return s
}

// peek returns the next arrival without consuming it, regardless of Owns.
func (s *Schedule) peek() (k uint64, t float64, ok bool) {
	if s.stopped {
		return 0, 0, false
	}
	if s.total > 0 && s.k >= s.total {
		s.totalHit = true
		return 0, 0, false
	}
	n := float64(s.k)
	if s.model == Poisson {
		n = s.u
	}
	t, ok = s.c.inverse(n, &s.cursor)
	if !ok || t >= s.end {
		s.stopped = true
		return 0, 0, false
	}
	return s.k, t, true
}

func (s *Schedule) advance() {
	s.k++
	if s.model == Poisson {
		s.u += s.rng.ExpFloat64()
	}
}

// Next returns the next arrival this host owns: its global index k and its
// plan time t_k. ok is false once the plan, Total or Duration is exhausted.
// It does not allocate.
func (s *Schedule) Next() (k uint64, t time.Duration, ok bool) {
	for {
		k, ts, ok := s.peek()
		if !ok {
			return 0, 0, false
		}
		s.advance()
		if s.owns == nil || s.owns(k) {
			return k, time.Duration(ts * float64(time.Second)), true
		}
	}
}

// exactSkip is the most arrivals SkipBefore steps through one at a time;
// past it, it computes.
const exactSkip = 1 << 16

// SkipBefore consumes every arrival due before plan time t and returns how
// many of them this host owns. It costs O(1) whatever the rate, so an
// absurd rate (1e12 req/s) cannot make the engine spin counting arrivals it
// never sends. Up to 65,536 arrivals are stepped through exactly; past that,
// a Poisson schedule skips the expected number of arrivals (its gaps are
// memoryless, so the rest of the schedule keeps its law), and the owned
// share of a striped schedule is extrapolated from the first 65,536.
func (s *Schedule) SkipBefore(t time.Duration) uint64 {
	due := t.Seconds()
	var owned, seen uint64
	step := func() {
		k := s.k
		s.advance()
		seen++
		if s.owns == nil || s.owns(k) {
			owned++
		}
	}
	for seen < exactSkip {
		_, at, ok := s.peek()
		if !ok || at >= due {
			return owned
		}
		step()
	}
	// Many more are due: compute how many, capped by Total and the end.
	limit := due
	if s.end < limit {
		limit = s.end
	}
	var n float64
	if s.model == Poisson {
		n = math.Round(s.c.count(limit) - s.u)
	} else {
		n = math.Ceil(s.c.count(limit)) - float64(s.k)
	}
	if s.total > 0 {
		n = min(n, float64(s.total)-float64(s.k))
	}
	if n <= 0 {
		return owned
	}
	skip := uint64(n)
	s.k += skip
	if s.model == Poisson {
		s.u = s.c.count(limit) + s.rng.ExpFloat64()
	}
	if s.owns == nil {
		return owned + skip
	}
	return owned + uint64(float64(skip)*float64(owned)/float64(seen))
}

// totalEnd returns, for a schedule that Total ended, the plan time at which
// arrival Total would have been due: the end of the last arrival's slot, so
// that N arrivals at rate r span N/r seconds, not (N-1)/r. ok is false when
// Total did not end the schedule.
func (s *Schedule) totalEnd() (time.Duration, bool) {
	if !s.totalHit {
		return 0, false
	}
	n := float64(s.total)
	if s.model == Poisson {
		n = s.u
	}
	cursor := s.cursor
	t, ok := s.c.inverse(n, &cursor)
	if !ok || t > s.end {
		t = s.end
	}
	if math.IsInf(t, 1) {
		return 0, false
	}
	return time.Duration(t * float64(time.Second)), true
}

// End returns the plan time at which the schedule ends by time: Duration, or
// the end of the last stage when no rate follows it. ok is false when only
// Total or the context can end it.
func (s *Schedule) End() (end time.Duration, ok bool) {
	if !math.IsInf(s.end, 1) {
		return time.Duration(s.end * float64(time.Second)), true
	}
	if s.c.tail <= 0 {
		return time.Duration(s.c.endT * float64(time.Second)), true
	}
	return 0, false
}

// PlannedRate returns the planned global arrival rate at plan time t.
func (s *Schedule) PlannedRate(t time.Duration) float64 { return s.c.rate(t.Seconds()) }

// PlannedCount returns the planned global number of arrivals in plan time
// [from, to).
func (s *Schedule) PlannedCount(from, to time.Duration) float64 {
	return s.c.count(to.Seconds()) - s.c.count(from.Seconds())
}
