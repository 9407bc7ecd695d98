package testmain

import (
	"flag"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestMain is Run's, with the gate test's gate made before the tests run,
// as a package's TestMain makes its own.
func TestMain(m *testing.M) {
	NoRaceExitSleep()
	flag.Parse()
	parallelAtStart, parallelGiven = givenParallel()
	gate = NewGate(2, 2, 1)
	os.Exit(m.Run())
}

var gate *Gate

// What givenParallel said before NewGate set -test.parallel itself.
var (
	parallelAtStart int
	parallelGiven   bool
)

// TestRaceExitSleepIsOff: under -race this binary runs with the exit sleep
// off, because TestMain started it again.
func TestRaceExitSleepIsOff(t *testing.T) {
	if !raceEnabled {
		t.Skip("built without -race: there is no exit sleep to take off")
	}
	if got := os.Getenv("GORACE"); !strings.Contains(got, "atexit_sleep_ms=0") {
		t.Fatalf("GORACE is %q in the tests' process, want atexit_sleep_ms=0 in it", got)
	}
}

// TestKeepsOtherGORACEOptions: options the caller gave in GORACE stay, and
// a caller's own atexit_sleep_ms is left alone.
func TestKeepsOtherGORACEOptions(t *testing.T) {
	if !raceEnabled {
		t.Skip("built without -race")
	}
	if os.Getenv("TESTMAIN_PRINT_GORACE") != "" {
		t.Skip("the child's run of this test")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for given, want := range map[string]string{
		"halt_on_error=1":                      "halt_on_error=1 atexit_sleep_ms=0",
		"atexit_sleep_ms=50":                   "atexit_sleep_ms=50",
		"halt_on_error=1 atexit_sleep_ms=100 ": "halt_on_error=1 atexit_sleep_ms=100 ",
	} {
		cmd := exec.Command(exe, "-test.run=^TestPrintGORACE$", "-test.v")
		cmd.Env = append(without(os.Environ(), "GORACE"), "GORACE="+given, "TESTMAIN_PRINT_GORACE=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("child with GORACE=%q: %v\n%s", given, err, out)
		}
		if !strings.Contains(string(out), "GORACE=["+want+"]") {
			t.Errorf("child started with GORACE=%q ran with %s, want GORACE=[%s]", given, out, want)
		}
	}
}

// TestPrintGORACE prints GORACE for TestKeepsOtherGORACEOptions's child.
func TestPrintGORACE(t *testing.T) {
	if os.Getenv("TESTMAIN_PRINT_GORACE") == "" {
		t.Skip("only in TestKeepsOtherGORACEOptions's child")
	}
	t.Logf("GORACE=[%s]", os.Getenv("GORACE"))
}

func TestWithout(t *testing.T) {
	env := []string{"A=1", "GORACE=x", "GORACEX=2", "B=GORACE=3"}
	if got, want := without(env, "GORACE"), []string{"A=1", "GORACEX=2", "B=GORACE=3"}; !slices.Equal(got, want) {
		t.Errorf("without = %q, want %q", got, want)
	}
	if env[1] != "GORACE=x" {
		t.Errorf("without changed its input: %q", env)
	}
}

// TestGateStartsLongestFirst: with two slots, the long tests start before
// the short ones, the longest first, whatever order they were declared in.
func TestGateStartsLongestFirst(t *testing.T) {
	var order []string
	gate.started = func(name string) { order = append(order, strings.TrimPrefix(name, t.Name()+"/group/")) }
	defer func() { gate.started = nil }()
	t.Run("group", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			secs int
		}{{"short-a", 0}, {"long-3", 3}, {"short-b", 0}, {"long-9", 9}, {"long-5", 5}} {
			t.Run(tc.name, func(t *testing.T) {
				if tc.secs > 0 {
					gate.Long(t, tc.secs)
				} else {
					gate.Short(t)
				}
			})
		}
	})
	if len(order) != 5 || !slices.Equal(order[:3], []string{"long-9", "long-5", "long-3"}) {
		t.Errorf("tests started in the order %v, want long-9, long-5, long-3 and then the short ones", order)
	}
}

// TestGivenParallel: -test.parallel counts as given only when the command
// line has it, so that DefaultParallel and NewGate leave a user's choice
// alone.
func TestGivenParallel(t *testing.T) {
	if os.Getenv("TESTMAIN_PRINT_PARALLEL") != "" {
		t.Logf("PARALLEL=[%d %v]", parallelAtStart, parallelGiven)
		return
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for args, want := range map[string]string{"": "PARALLEL=[0 false]", "-test.parallel=3": "PARALLEL=[3 true]"} {
		cmd := exec.Command(exe, "-test.run=^TestGivenParallel$", "-test.v")
		if args != "" {
			cmd.Args = append(cmd.Args, args)
		}
		cmd.Env = append(os.Environ(), "TESTMAIN_PRINT_PARALLEL=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("child %q: %v\n%s", args, err, out)
		}
		if !strings.Contains(string(out), want) {
			t.Errorf("child with %q printed %s, want %s", args, out, want)
		}
	}
}
