package load

import (
	"sync"
	"time"
)

// executor is one scheduling model: how a run's work starts and what its
// plan's end means. The engine owns the rest (the clock, the recorders,
// the collector and the stop in two contexts of stop.go), so that a model
// is a small type in a file of its own:
//
//   - openExecutor (exec_open.go): arrivals at a planned rate, taken by a
//     pool of workers that grows up to MaxConcurrency;
//   - closedExecutor (exec_closed.go): a fixed number of virtual users,
//     each sending its next request when the last one ends;
//   - rampingExecutor (exec_ramping.go): the closed model whose number of
//     active users follows VUStages (and ScaleVUs) over the run.
//
// Every method but the workers' own runs once per run, off the request
// path.
type executor interface {
	// maxWorkers returns the most workers the plan may need (before the
	// engine caps it at Total).
	maxWorkers() int
	// start starts the model's workers in e.workerWG, and any goroutine of
	// its own in wg; each returns once the stop context is done (e.stop,
	// its Done channel), or earlier when the model's work is done (Total,
	// the schedule's last arrival).
	start(wg *sync.WaitGroup)
	// planEnd returns the plan time at which the plan ends, if it has one.
	planEnd() (time.Duration, bool)
	// timeline reports whether the plan is a timeline of arrivals (the
	// open model). Such a run lasts to its planned end even when its
	// workers return before it (out of arrivals by time, not by Total);
	// at that end it stops by itself, its arrivals due before the end
	// still being sent in the grace period; and its Elapsed lasts at
	// least to the end of the last arrival's slot when Total ended it.
	timeline() bool
	// stopped settles the model's books once the run has stopped at at
	// and its workers have returned (or been given up on): the open model
	// counts the arrivals due before at that no worker sent as dropped.
	stopped(at time.Time)
	// finish sets the model's fields of res (the open model's TargetRPS
	// and workers) once the collector is done, its Elapsed and
	// Interrupted final.
	finish(res *Result, planEnd time.Duration, hasEnd bool)
}

// newExecutor returns the executor of e's scheduling model.
func newExecutor(e *engine) executor {
	o := e.o
	switch {
	case o.open():
		return &openExecutor{e: e}
	case len(o.VUStages) > 0 || o.ScaleVUs != nil:
		return &rampingExecutor{closedExecutor{e: e}}
	default:
		return &closedExecutor{e: e}
	}
}
