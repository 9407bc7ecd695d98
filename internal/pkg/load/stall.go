package load

import "time"

// stalledPast skips the arrival intended at intended, and every arrival
// already due, when a free worker (not one that waited behind busy ones,
// queued) picks it up more than Options.MaxStall late: the generator
// itself stalled (a frozen process, a paused VM), and sending the overdue
// arrivals now would put a burst on the target that the plan never asked
// for. They are counted as dropped (DropStall) and as Stalled, the generator's.
// It reports whether it skipped.
func (e *engine) stalledPast(intended time.Time, queued bool) bool {
	if e.o.MaxStall <= 0 || queued || time.Since(intended) <= e.o.MaxStall {
		return false
	}
	e.schedMu.Lock()
	n := 1 + int64(e.sched.SkipBefore(e.planNow()))
	e.schedMu.Unlock()
	e.drop(DropStall, n)
	return true
}
