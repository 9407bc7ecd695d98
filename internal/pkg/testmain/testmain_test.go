package testmain

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

func TestMain(m *testing.M) { Run(m) }

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
