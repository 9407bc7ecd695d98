// Package testmain owns how this module's test binaries start and schedule
// their tests, so that `go test -race ./...` spends its time testing.
//
// Run (or NoRaceExitSleep, first in a TestMain of a package's own) drops
// the race runtime's exit sleep. Under -race a program that exits with
// status 0 while any goroutine besides main is alive (the runtime's own
// always are) sleeps GORACE's atexit_sleep_ms, 1000 by default, so that
// goroutines still running may show a race before the report closes. Each
// of the module's ~45 test binaries paid that second: about half a minute of
// a two-core machine's run of the suite, asleep. The binary starts itself
// again, once, with atexit_sleep_ms=0 added to GORACE. Every race is still
// found and still fails the test it happens in (the testing package checks
// after each test) and the binary (exit status 66); only the extra second
// for goroutines a test left running is gone. internal/archtest checks that
// every package's tests do this.
//
// Gate replaces the testing package's parallel limit in packages whose tests
// wait in real time for seconds (daemons, leases, outages): it starts the
// long tests first, the longest first, where the testing package often
// started them last. DefaultParallel (or RunParallel, a whole TestMain
// with it) raises the limit for packages whose tests wait briefly. It is
// linked into test binaries only.
package testmain
