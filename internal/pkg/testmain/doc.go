// Package testmain owns what every test binary of this module does before
// its tests run. Under -race, the race runtime sleeps one second when a
// program exits with status 0 and any goroutine besides main is alive (the
// runtime's own always are), so that goroutines still running may show a
// race before the report is closed (GORACE's atexit_sleep_ms, 1000 by
// default). Each of the module's ~45 test binaries paid that second: about
// half a minute of a two-core machine's run of `go test -race ./...`, spent
// asleep. Run starts the binary again, once, with atexit_sleep_ms=0 added to
// GORACE. Every race is still found and still fails the test it happens in
// (the testing package checks after each test) and the binary (exit status
// 66); only the extra second for goroutines a test left running is gone.
// It is linked into test binaries only.
package testmain
