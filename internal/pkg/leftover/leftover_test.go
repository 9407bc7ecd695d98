package leftover

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestMarkReplacesAnyEntryForTheKey(t *testing.T) {
	t.Parallel()
	env := []string{"A=1", Key + "=chosen-by-the-job", "B=2", Key + "="}
	got := Mark(env, "uuid-1")
	want := []string{"A=1", "B=2", Marker("uuid-1")}
	if !slices.Equal(got, want) {
		t.Fatalf("Mark = %q, want %q", got, want)
	}
	if Marker("uuid-1") == Marker("uuid-2") || strings.Contains(Marker("uuid-1"), "uuid-1") {
		t.Fatalf("markers %q and %q: want distinct hashes that do not show the UUID", Marker("uuid-1"), Marker("uuid-2"))
	}
}

func TestSummaryNamesAtMostTen(t *testing.T) {
	t.Parallel()
	var procs []Proc
	for i := range 12 {
		procs = append(procs, Proc{PID: 100 + i, Name: "sleep"})
	}
	s := Summary(procs)
	if !strings.Contains(s, "stopped 12 processes") || !strings.Contains(s, `109 ("sleep") and 2 more`) || strings.Contains(s, `110 ("sleep")`) {
		t.Fatalf("Summary = %q", s)
	}
}

// start runs argv with env as a process of its own group, and returns it
// and the first line it prints.
func start(t *testing.T, env []string, argv ...string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("%v printed nothing: %v", argv, err)
	}
	return cmd, strings.TrimSpace(line)
}

// alive reports whether pid runs (a zombie has ended).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
}

// A step's shell and the child it started carry the marker and are
// killed; a process marked for another runner, and an unmarked one, are
// not.
func TestStopKillsTheMarkedOnly(t *testing.T) {
	t.Parallel()
	owner := fmt.Sprintf("owner-%s-%d", t.Name(), time.Now().UnixNano())
	script := "sleep 60 & echo $!; wait"
	sh, child := start(t, Mark(os.Environ(), owner), "sh", "-c", script)
	childPID, err := strconv.Atoi(child)
	if err != nil {
		t.Fatalf("child pid %q: %v", child, err)
	}
	other, _ := start(t, Mark(os.Environ(), owner+"-other"), "sh", "-c", "echo up; exec sleep 60")
	plain, _ := start(t, os.Environ(), "sh", "-c", "echo up; exec sleep 60")

	procs, err := Stop(context.Background(), owner)
	if err != nil {
		t.Fatalf("Stop: %v", err)
	}
	var pids []int
	for _, p := range procs {
		pids = append(pids, p.PID)
	}
	slices.Sort(pids)
	want := []int{sh.Process.Pid, childPID}
	slices.Sort(want)
	if !slices.Equal(pids, want) {
		t.Fatalf("Stop killed %v, want the shell and its child %v", procs, want)
	}
	var ee *exec.ExitError
	if err := sh.Wait(); !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the marked shell ended with %v, want SIGKILL", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for alive(childPID) {
		if time.Now().After(deadline) {
			t.Fatalf("the marked shell's child %d still runs", childPID)
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, c := range []*exec.Cmd{other, plain} {
		if !alive(c.Process.Pid) {
			t.Fatalf("Stop killed %d, which it does not own", c.Process.Pid)
		}
	}
	if again, err := Stop(context.Background(), owner); len(again) != 0 || err != nil {
		t.Fatalf("a second Stop = %v, %v; want nothing left", again, err)
	}
}

// A daemon started from a marked shell spares that shell and itself.
func TestStopSparesItselfAndItsAncestors(t *testing.T) {
	t.Parallel()
	owner := fmt.Sprintf("owner-%s-%d", t.Name(), time.Now().UnixNano())
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	env := append(Mark(os.Environ(), owner), helperOwner+"="+owner)
	cmd := exec.Command("sh", "-c", `"$0"; echo shell-lived`, exe)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "killed [] err <nil>") || !strings.Contains(string(out), "shell-lived") {
		t.Fatalf("Stop from a marked process: %v\n%s", err, out)
	}
}

// The environment is scanned entry by entry, whatever its size: the marker
// after an entry of 100 KB is found, and a long entry that merely ends
// with the marker's text is not the marker.
func TestStopReadsLongEnvironments(t *testing.T) {
	t.Parallel()
	owner := fmt.Sprintf("owner-%s-%d", t.Name(), time.Now().UnixNano())
	big := "BIG=" + strings.Repeat("x", 100<<10)
	marked, _ := start(t, []string{big, Marker(owner), big}, "/bin/sh", "-c", "echo up; exec sleep 60")
	// Its text before the marker's fills the scan buffer exactly twice, so
	// the last piece read of it is the marker's text and its NUL.
	fake, _ := start(t, []string{"FAKE=" + strings.Repeat("y", 2*envBuf-len("FAKE=")) + Marker(owner)}, "/bin/sh", "-c", "echo up; exec sleep 60")
	// Both have become sleep: an exec's instant, when a process shows no
	// environment, is not what this test is about.
	for _, c := range []*exec.Cmd{marked, fake} {
		deadline := time.Now().Add(10 * time.Second)
		for comm(c.Process.Pid) != "sleep" {
			if time.Now().After(deadline) {
				t.Fatalf("process %d is %q, not sleep, after 10 s", c.Process.Pid, comm(c.Process.Pid))
			}
			time.Sleep(time.Millisecond)
		}
	}
	procs, err := Stop(context.Background(), owner)
	if err != nil || len(procs) != 1 || procs[0].PID != marked.Process.Pid {
		t.Fatalf("Stop = %v, %v; want only %d, whose marker follows a 100 KB entry", procs, err, marked.Process.Pid)
	}
	if !alive(fake.Process.Pid) {
		t.Fatalf("Stop killed %d, whose long entry only ends with the marker's text", fake.Process.Pid)
	}
}
