package testmain

import (
	"flag"
	"slices"
	"sync"
	"testing"
)

// Gate runs a package's parallel tests in place of the testing package's
// own limit, long tests first. The testing package starts waiting parallel
// tests in an order of the scheduler's choosing; in a package whose tests
// take from one to thirty seconds it often started the longest last, and
// the package then took as long as that test's start plus its length. A
// Gate starts the long tests first, the longest of them first, and the
// short ones beside them in the slots the long ones may not take.
//
// A package makes one in TestMain after flag.Parse and before m.Run (the
// testing package reads its limit when the tests start: a gate made later
// would wait behind it, and deadlock), and its tests call
// [Gate.Short] or [Gate.Long] where they would call t.Parallel; subtests
// call [Gate.Sub].
type Gate struct {
	mu   sync.Mutex
	cond *sync.Cond
	// free is how many slots are free; longFree how many long tests may
	// still start beside the running ones.
	free, longFree int
	// registered counts the long tests that called Long (all of them do so
	// before any parallel test starts); arrived, those of them waiting for
	// a slot or holding one; waiting, the lengths of those waiting. No test
	// starts before every registered long test has arrived; a long test
	// starts when no longer one waits, a short one when no long one waits
	// that a slot could take.
	registered, arrived int
	waiting             []int
	subs                chan struct{}
	// started, if set, is told each test that gets a slot, in that order
	// (under mu).
	started func(name string)
}

// NewGate returns a gate of n slots, or of -test.parallel's when the command
// line gave it, of which long tests may hold at most long and parallel
// subtests, beside them, sub more. It lifts the testing package's own limit,
// so every test of the package must go through the gate.
func NewGate(n, long, sub int) *Gate {
	if v, given := givenParallel(); given && v > 0 {
		n = v
	}
	g := &Gate{free: n, longFree: min(long, n), subs: make(chan struct{}, max(sub, 1))}
	g.cond = sync.NewCond(&g.mu)
	_ = flag.Set("test.parallel", "10000")
	return g
}

// Short is t.Parallel for a short test: t runs once the gate has a slot for
// it and no long test waits for one.
func (g *Gate) Short(t *testing.T) { g.schedule(t, 0) }

// Long is t.Parallel for a long test; secs, about how long t takes alone on
// a two-core machine, only orders the long tests: they get slots before the
// short ones, the longest first.
func (g *Gate) Long(t *testing.T, secs int) { g.schedule(t, max(secs, 1)) }

// Sub is t.Parallel for a subtest: it waits for one of the gate's subtest
// slots (its parent holds one of the others) and frees it when t and its
// cleanups are done.
func (g *Gate) Sub(t *testing.T) {
	t.Helper()
	t.Parallel()
	g.subs <- struct{}{}
	t.Cleanup(func() { <-g.subs })
}

// schedule waits for a slot; secs is 0 for a short test.
func (g *Gate) schedule(t *testing.T, secs int) {
	t.Helper()
	long := secs > 0
	if long {
		g.mu.Lock()
		g.registered++
		g.mu.Unlock()
	}
	t.Parallel()
	g.mu.Lock()
	if long {
		g.arrived++
		g.waiting = append(g.waiting, secs)
		g.cond.Broadcast() // the last to arrive lets the waiting ones check again
		for g.free == 0 || g.longFree == 0 || g.arrived < g.registered || secs < slices.Max(g.waiting) {
			g.cond.Wait()
		}
		i := slices.Index(g.waiting, secs)
		g.waiting = slices.Delete(g.waiting, i, i+1)
		g.longFree--
	} else {
		for g.free == 0 || len(g.waiting) > 0 && g.longFree > 0 || g.arrived < g.registered {
			g.cond.Wait()
		}
	}
	g.free--
	if g.started != nil {
		g.started(t.Name())
	}
	g.mu.Unlock()
	g.cond.Broadcast() // the next longest may start too
	t.Cleanup(func() { // registered first, so it runs after the test's own cleanups
		g.mu.Lock()
		g.free++
		if long {
			g.longFree++
		}
		g.mu.Unlock()
		g.cond.Broadcast()
	})
}
