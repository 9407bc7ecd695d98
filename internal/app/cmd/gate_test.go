package cmd

import (
	"flag"
	"slices"
	"strconv"
	"sync"
	"testing"
)

// e2eParallel is how many of this package's tests run at once unless
// -test.parallel says otherwise. They spend their time waiting on daemons,
// jobs, leases and outages in real time, not computing, so the default (one
// per CPU: 2 on CI machines) left the package at about four minutes of
// mostly idle waiting; the bounds they check leave room for a loaded
// machine. (At 16, on a machine at a load average of 30, daemons took over
// 15 s to start; 12 keeps the package near a minute.)
const e2eParallel = 14

// longParallel is how many of the e2eParallel slots long tests may hold at
// once: the rest keep the short tests moving beside them, and fewer
// three-daemon clusters run at once than there are slots.
const longParallel = 12

// The package's own gate in place of the testing package's: -test.parallel
// (or e2eParallel) is read into it, and the testing package's limit is
// lifted. The testing package starts waiting parallel tests in an order of
// the scheduler's choosing; it started the 15–30 s cluster tests last,
// after the short ones, and the package took as long as its last long
// test's start plus its length (about 55 s). This gate starts the long
// tests first, the longest of them first.
var gate struct {
	mu   sync.Mutex
	cond *sync.Cond
	// free is how many slots are free; longFree how many long tests may
	// still start beside the running ones.
	free, longFree int
	// registered counts the long tests that called parallelLong (all of
	// them do so before any parallel test starts); arrived, those of them
	// waiting for a slot or holding one; waiting, the lengths of those
	// waiting. No test starts before every registered long test has
	// arrived; a long test starts when no longer one waits, a short one
	// when no long one waits that a slot could take.
	registered, arrived int
	waiting             []int
}

// setUpGate reads -test.parallel into the gate (e2eParallel unless given)
// and lifts the testing package's own limit. TestMain calls it after
// flag.Parse.
func setUpGate() {
	n := e2eParallel
	flag.Visit(func(f *flag.Flag) {
		if f.Name == "test.parallel" {
			if v, err := strconv.Atoi(f.Value.String()); err == nil && v > 0 {
				n = v
			}
		}
	})
	gate.cond = sync.NewCond(&gate.mu)
	gate.free, gate.longFree = n, min(longParallel, n)
	_ = flag.Set("test.parallel", "1000")
}

// parallel is t.Parallel for this package's short tests: t runs beside the
// others once the gate has a slot for it and no long test waits for one.
func parallel(t *testing.T) { schedule(t, 0) }

// parallelLong is t.Parallel for the package's long tests, those that take
// 7 s or more alone: cluster runs, outages, services. secs, about how long
// t takes alone on a two-core machine, orders them only: they get slots
// before the short tests, the longest first.
func parallelLong(t *testing.T, secs int) { schedule(t, max(secs, 1)) }

// schedule waits for a slot; secs is 0 for a short test.
func schedule(t *testing.T, secs int) {
	t.Helper()
	long := secs > 0
	if long {
		gate.mu.Lock()
		gate.registered++
		gate.mu.Unlock()
	}
	t.Parallel()
	gate.mu.Lock()
	if long {
		gate.arrived++
		gate.waiting = append(gate.waiting, secs)
		gate.cond.Broadcast() // the last to arrive lets the waiting ones check again
		for gate.free == 0 || gate.longFree == 0 || gate.arrived < gate.registered || secs < slices.Max(gate.waiting) {
			gate.cond.Wait()
		}
		gate.waiting = slices.Delete(gate.waiting, slices.Index(gate.waiting, secs), slices.Index(gate.waiting, secs)+1)
		gate.longFree--
	} else {
		for gate.free == 0 || len(gate.waiting) > 0 && gate.longFree > 0 || gate.arrived < gate.registered {
			gate.cond.Wait()
		}
	}
	gate.free--
	gate.mu.Unlock()
	gate.cond.Broadcast() // the next longest may start too
	t.Cleanup(func() {    // registered first, so it runs after the test's own cleanups
		gate.mu.Lock()
		gate.free++
		if long {
			gate.longFree++
		}
		gate.mu.Unlock()
		gate.cond.Broadcast()
	})
}

// subParallel is how many parallel subtests run at once, beside the
// e2eParallel tests whose slots their parents hold. The testing package's
// own limit is lifted for the gate above, so without this one a corpus of
// twenty configs would start twenty binaries at once.
const subParallel = 4

var subSlots = make(chan struct{}, subParallel)

// parallelSub is t.Parallel for a subtest: it waits for one of the
// subParallel slots and frees it when t and its cleanups are done.
func parallelSub(t *testing.T) {
	t.Helper()
	t.Parallel()
	subSlots <- struct{}{}
	t.Cleanup(func() { <-subSlots })
}
