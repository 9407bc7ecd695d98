package cmd

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	runnerv1 "gitea.dev/actions-proto-go/runner/v1"

	"github.com/forgeload/forgeload/internal/pkg/forgetest"
)

// peakRSS is the daemon's peak resident memory (VmHWM) in bytes.
func peakRSS(t *testing.T, d *daemon) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", d.cmd.Process.Pid))
	if err != nil {
		t.Fatalf("read the daemon's status: %v", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("parse VmHWM %q: %v", rest, err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in the daemon's status")
	return 0
}

// TestE2EJobInputCannotTakeTheDaemonDown runs, through the real daemon,
// jobs that point it at unbounded or foreign files and expressions:
// /dev/zero as load config, body file and GITHUB_OUTPUT; 2 GiB (sparse)
// GITHUB_ENV and GITHUB_STEP_SUMMARY; a format() that expands to 10 GB;
// config: at /etc/passwd, at a symlink to the runner's registration file,
// and at a copy of it. Each fails its own step with a message naming the
// limit or the workspace, no file content reaches the forge, the daemon's
// memory stays bounded, and the next job runs.
func TestE2EJobInputCannotTakeTheDaemonDown(t *testing.T) {
	parallel(t)
	tg := newTarget(t)
	f := forgetest.New(t, forgetest.WithRegistrationToken("reg-token"))
	n := newNode(t, "")
	registered(t, f, n, "e2e-bounds")
	reg, err := os.ReadFile(n.file)
	if err != nil {
		t.Fatal(err)
	}
	var regFile struct{ Token string }
	if err := json.Unmarshal(reg, &regFile); err != nil || regFile.Token == "" {
		t.Fatalf("read the runner token from %s: %v", n.file, err)
	}
	d := n.startDaemon()
	job := func(steps string) forgetest.TaskView {
		t.Helper()
		id := f.QueueJob(forgetest.Job{RunsOn: []string{"forgeload"}, Payload: []byte("on: push\njobs:\n  a:\n    runs-on: forgeload\n    steps:\n" + steps)})
		return waitDone(t, f, id, d)
	}
	load := func(with string) string {
		return "      - uses: forgeload/load@v1\n        with:\n          target: " + tg.URL + "/\n          total: 1\n" + with
	}
	nested := "'xxxxxxxxxx'"
	for range 9 {
		nested = "format('{0}{0}{0}{0}{0}{0}{0}{0}{0}{0}', " + nested + ")"
	}
	cases := []struct {
		name, steps, want string
	}{
		{"GITHUB_OUTPUT to /dev/zero", "      - run: ln -sf /dev/zero \"$GITHUB_OUTPUT\"\n", "GITHUB_OUTPUT: open files/step-0/output in the task directory"},
		{"2 GiB GITHUB_ENV", "      - run: truncate -s 2G \"$GITHUB_ENV\"\n", "GITHUB_ENV is 2 GiB, more than the 1 MiB limit"},
		{"config /dev/zero", load("          config: /dev/zero\n"), "outside the workspace"},
		{"config symlink to /dev/zero", "      - run: ln -s /dev/zero zero.yaml\n" + load("          config: zero.yaml\n"), "outside the workspace"},
		{"body_file /dev/zero", load("          body_file: /dev/zero\n"), "outside the workspace"},
		{"10 GB format()", "      - run: echo ${{ " + nested + " }}\n", "limit on expression results"},
		{"config /etc/passwd", load("          config: /etc/passwd\n"), "outside the workspace"},
		{"config symlink to .runner", "      - run: ln -s " + n.file + " runner.json\n" + load("          config: runner.json\n"), "outside the workspace"},
		{"config copy of .runner", "      - run: cp " + n.file + " runner.json\n" + load("          config: runner.json\n"), "not a load config"},
	}
	for _, c := range cases {
		v := job(c.steps)
		log := strings.Join(v.Log, "\n")
		if v.Result != runnerv1.Result_RESULT_FAILURE || !strings.Contains(log, c.want) {
			t.Fatalf("%s: result %v, log lacks %q:\n%s", c.name, v.Result, c.want, log)
		}
		for _, leak := range []string{"root:x:0:0", regFile.Token} {
			if strings.Contains(log, leak) {
				t.Fatalf("%s: the log quotes a file the job may not read (%q):\n%s", c.name, leak, log)
			}
		}
	}

	// A 2 GiB summary is not uploaded and does not fail the step.
	v := job("      - run: truncate -s 2G \"$GITHUB_STEP_SUMMARY\"\n")
	if log := strings.Join(v.Log, "\n"); v.Result != runnerv1.Result_RESULT_SUCCESS || !strings.Contains(log, "job summary not uploaded: GITHUB_STEP_SUMMARY is 2 GiB, more than the 1 MiB limit") {
		t.Fatalf("2 GiB summary: result %v:\n%s", v.Result, log)
	}

	stillServing(t, d, job(load("")+"      - run: echo still serving\n"))
	if rss := peakRSS(t, d); rss > 400<<20 {
		t.Fatalf("the daemon's peak memory is %d MiB, want it bounded (< 400 MiB)", rss>>20)
	}
}

var faultsBin = sync.OnceValues(func() (string, error) { return goBuild(nil, "-tags", buildTags+",faults") })

// TestE2EPanicInJobGoroutineFailsThatJobOnly runs a build with fault
// injection (-tags faults) that panics, once each, in the goroutines a job
// starts: the output copier that runs masking, a load worker, and the
// reporter's log loop. Each panic fails its own job with a message in its
// log, the daemon logs the stack and keeps serving, and the next job runs.
func TestE2EPanicInJobGoroutineFailsThatJobOnly(t *testing.T) {
	parallel(t)
	bin, err := faultsBin()
	if err != nil {
		t.Fatal(err)
	}
	tg := newTarget(t)
	f := forgetest.New(t, forgetest.WithRegistrationToken("reg-token"))
	n := newNode(t, "")
	registered(t, f, n, "e2e-panics")
	d := n.startBin(bin, "-c", n.cfg, "daemon")
	job := func(steps string) forgetest.TaskView {
		t.Helper()
		id := f.QueueJob(forgetest.Job{RunsOn: []string{"forgeload"}, Payload: []byte("on: push\njobs:\n  a:\n    runs-on: forgeload\n    steps:\n" + steps)})
		return waitDone(t, f, id, d)
	}
	cases := []struct{ name, steps, want string }{
		{"copier", "      - run: echo forgeload-fault-panic:copier\n", "internal error (a panic: injected fault at copier)"},
		{"worker", "      - uses: forgeload/load@v1\n        with:\n          target: " + tg.URL + "\n          endpoints: '[{name: \"forgeload-fault-panic:worker\", path: /}]'\n          rate: 50\n          duration: 30s\n", "load engine: the run was stopped by internal error (a panic: injected fault at worker)"},
		// The sleep keeps the job running until the log loop sends the row
		// (the panic then cancels the job), so the panic is the loop's, not
		// the final report's.
		{"reporter", "      - run: echo forgeload-fault-panic:reporter; sleep 60\n", "internal error reporting this job (internal error (a panic: injected fault at reporter))"},
	}
	for _, c := range cases {
		v := job(c.steps)
		log := strings.Join(v.Log, "\n")
		if v.Result != runnerv1.Result_RESULT_FAILURE || !strings.Contains(log, c.want) {
			t.Fatalf("%s: result %v, log lacks %q:\n%s\ndaemon:\n%s", c.name, v.Result, c.want, log, d.out.String())
		}
		// The daemon may report the job's end before its own log line
		// about the panic has come through the pipe.
		for deadline := time.Now().Add(20 * time.Second); !strings.Contains(d.out.String(), "injected fault at "+c.name); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: the daemon log lacks the panic 20 s after the job ended:\n%s", c.name, d.out.String())
			}
		}
	}
	stillServing(t, d, job("      - run: echo still serving\n"))
}

// stillServing checks that v, the job after the bad ones, echoed "still
// serving" and succeeded, and that the daemon is still running.
func stillServing(t *testing.T, d *daemon, v forgetest.TaskView) {
	t.Helper()
	if v.Result != runnerv1.Result_RESULT_SUCCESS || !strings.Contains(strings.Join(v.Log, "\n"), "still serving") {
		t.Fatalf("the job after the bad ones: %v\n%s", v.Result, strings.Join(v.Log, "\n"))
	}
	select {
	case <-d.done:
		t.Fatalf("the daemon exited:\n%s", d.out.String())
	default:
	}
}
