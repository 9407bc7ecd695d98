package testmain

import (
	"flag"
	"os"
	"strconv"
	"strings"
	"testing"
)

// Run is a whole TestMain: it drops the race runtime's exit sleep, then
// runs the tests and exits with their status.
func Run(m *testing.M) {
	NoRaceExitSleep()
	os.Exit(m.Run())
}

// RunParallel is Run for a package whose tests mostly wait in real time:
// -test.parallel is n unless the command line gave it (see
// DefaultParallel).
func RunParallel(m *testing.M, n int) {
	NoRaceExitSleep()
	flag.Parse()
	DefaultParallel(n)
	os.Exit(m.Run())
}

// NoRaceExitSleep starts this test binary again, in the same process with
// the same arguments, with atexit_sleep_ms=0 added to GORACE, when it was
// built with -race and GORACE does not already set atexit_sleep_ms. It
// returns when nothing was to be done or the binary could not be started
// again (it then runs on as it is). A TestMain of its own calls it first.
func NoRaceExitSleep() {
	if !raceEnabled {
		return
	}
	gorace, set := os.LookupEnv("GORACE")
	if strings.Contains(gorace, "atexit_sleep_ms") {
		return // set by whoever started us, or by our own earlier start
	}
	exe, err := os.Executable()
	if err != nil {
		return
	}
	env := os.Environ()
	if set {
		env = without(env, "GORACE")
	}
	env = append(env, "GORACE="+strings.TrimSpace(gorace+" atexit_sleep_ms=0"))
	_ = reexec(exe, os.Args, env) // returns only if it failed
}

// without returns env without the variable name.
func without(env []string, name string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}

// DefaultParallel sets -test.parallel to n unless the command line gave it;
// call it after flag.Parse. For packages whose tests mostly wait in real
// time (daemons, leases, timeouts) rather than compute, so that one test per
// CPU, the testing package's default, would leave the machine idle.
func DefaultParallel(n int) {
	if _, given := givenParallel(); !given {
		_ = flag.Set("test.parallel", strconv.Itoa(n))
	}
}

// givenParallel returns -test.parallel's value when the command line gave
// it; call it after flag.Parse.
func givenParallel() (n int, given bool) {
	flag.Visit(func(f *flag.Flag) {
		if f.Name == "test.parallel" {
			n, _ = strconv.Atoi(f.Value.String())
			given = true
		}
	})
	return n, given
}
