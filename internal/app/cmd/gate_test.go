package cmd

import (
	"testing"

	"github.com/forgeload/forgeload/internal/pkg/testmain"
)

// e2eParallel is how many of this package's tests run at once unless
// -test.parallel says otherwise. They spend their time waiting on daemons,
// jobs, leases and outages in real time, not computing, so the default (one
// per CPU: 2 on CI machines) left the package at about four minutes of
// mostly idle waiting; the bounds they check leave room for a loaded
// machine. (At 16, on a machine at a load average of 30, daemons took over
// 15 s to start.)
const e2eParallel = 14

// longParallel is how many of the e2eParallel slots long tests may hold at
// once: the rest keep the short tests moving beside them. Each long test is
// mostly three daemons under load; at 12 at once, beside a cold build, a
// takeover's heir drove its segments at two thirds of their rate.
const longParallel = 10

// subParallel is how many parallel subtests run at once, beside the tests
// whose slots their parents hold: a corpus of twenty configs would
// otherwise start twenty binaries at once.
const subParallel = 4

// gate runs this package's parallel tests, the longest first (see
// testmain.Gate); TestMain makes it.
var gate *testmain.Gate

func setUpGate() { gate = testmain.NewGate(e2eParallel, longParallel, subParallel) }

// parallel is t.Parallel for this package's short tests.
func parallel(t *testing.T) { gate.Short(t) }

// parallelLong is t.Parallel for the package's long tests: those that take
// 7 s or more alone (cluster runs, outages, services), and those whose
// subtests hold their slot for longer; secs is about how long t takes
// alone, and only orders them.
func parallelLong(t *testing.T, secs int) { gate.Long(t, secs) }

// parallelSub is t.Parallel for a subtest.
func parallelSub(t *testing.T) { gate.Sub(t) }
