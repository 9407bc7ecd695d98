package build

import (
	"fmt"
	"time"

	"github.com/forgeload/forgeload/internal/pkg/load"
	"github.com/forgeload/forgeload/internal/pkg/load/threshold"
)

// Abort is the breach of an abort_on_fail threshold, as the error that
// stopped the run: "aborted: http_req_failed:rate < 1% (0.01) at 2s (got
// 100.00%)".
type Abort struct {
	// Threshold is the threshold that failed.
	Threshold threshold.Threshold
	// At is the plan time of the end of the second that breached it.
	At time.Duration
	// Actual is the measured value, formatted.
	Actual string
}

func (a *Abort) Error() string {
	return fmt.Sprintf("aborted: %s at %s (got %s)", a.Threshold.String(), a.At, a.Actual)
}

// Watch judges the abort_on_fail thresholds on the per-second snapshots
// of a run (Options.OnSecond), off the engine's request path: after each
// second it evaluates them on every second so far. The run's own host
// uses one in [New]; a multi-host run's coordinator uses one on the merged
// seconds. A Watch is not safe for concurrent use; OnSecond calls are
// serial.
type Watch struct {
	ths []threshold.Threshold
	res load.Result
	hit *Abort
}

// NewWatch returns a watch of the abort_on_fail thresholds among ths, or
// nil when there are none; phases are the run's named phases.
func NewWatch(ths []threshold.Threshold, phases []load.Phase) *Watch {
	var abort []threshold.Threshold
	for _, t := range ths {
		if t.AbortOnFail {
			abort = append(abort, t)
		}
	}
	if len(abort) == 0 {
		return nil
	}
	w := &Watch{ths: abort}
	if len(phases) > 0 {
		w.res.SetPhases(phases)
	}
	return w
}

// Add adds one (merged) second and returns the first breach, or nil. A
// threshold is judged once the end of the second is at least its Delay
// into the run; one that cannot be evaluated yet (no requests) does not
// abort. After a breach Add returns the same breach.
func (w *Watch) Add(s *load.Snapshot) *Abort {
	if w.hit != nil {
		return w.hit
	}
	w.res.AddSnapshot(s)
	at := time.Duration(s.Second+1) * time.Second
	w.res.Elapsed = max(w.res.Elapsed, at)
	for _, t := range w.ths {
		if at < t.Delay {
			continue
		}
		o := threshold.EvaluateBaseline([]threshold.Threshold{t}, Source(&w.res), nil)[0]
		if o.Err != nil || o.Passed || o.Skipped {
			continue
		}
		w.hit = &Abort{Threshold: t, At: at, Actual: threshold.FormatValue(t, o.Actual)}
		return w.hit
	}
	return nil
}

// watchAborts makes the engine stop its run, with an [*Abort] as
// [Engine.Stopped], as soon as an abort_on_fail threshold fails.
func (p *Engine) watchAborts() {
	w := NewWatch(p.Thresholds, p.Options.Phases)
	if w == nil {
		return
	}
	next := p.Options.OnSecond
	p.Options.OnSecond = func(s *load.Snapshot) {
		if next != nil {
			next(s)
		}
		if a := w.Add(s); a != nil {
			p.stop(a)
		}
	}
}

// secondChecks gives every per-second snapshot (Options.OnSecond) the
// response checks' counts of its second, before anyone else sees it: the
// abort watch, and a multi-host run's workers, which ship them to the
// coordinator. It reads the checks' counters once a second, off the
// request path; without checks or OnSecond it does nothing. The last
// snapshot comes after every request has ended, so the seconds' counts add
// up to the run's.
func (p *Engine) secondChecks() {
	next := p.Options.OnSecond
	if p.checks == nil || next == nil {
		return
	}
	var last []load.CheckStats
	p.Options.OnSecond = func(s *load.Snapshot) {
		now := p.checks.Stats()
		s.Checks = make([]load.CheckStats, len(now))
		for i, c := range now {
			s.Checks[i] = c
			if i < len(last) {
				s.Checks[i].Passed -= last[i].Passed
				s.Checks[i].Failed -= last[i].Failed
			}
		}
		last = now
		next(s)
	}
}
