package cmd

// End-to-end tests of the real forgeload binary against the fake forge:
// register, daemon, signals, exit codes and the RPCs the forge saw.

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	runnerv1 "gitea.dev/actions-proto-go/runner/v1"

	"github.com/forgeload/forgeload/internal/pkg/config"
	"github.com/forgeload/forgeload/internal/pkg/container"
	"github.com/forgeload/forgeload/internal/pkg/forgetest"
	"github.com/forgeload/forgeload/internal/pkg/redistest"
	"github.com/forgeload/forgeload/internal/pkg/testbin"
	"github.com/forgeload/forgeload/internal/pkg/testmain"
)

// binPath is the forgeload binary built once by TestMain.
var binPath string

func TestMain(m *testing.M) {
	testmain.NoRaceExitSleep()
	redistest.ServeProxyIfAsked() // when this binary is started as a test's Redis relay
	flag.Parse()
	setUpGate()
	// The builds that single tests need (a binary with fault injection,
	// the static one of the cluster's container image) are made beside the
	// one every test needs, when the whole package runs (a -run of one
	// test, or a -list, builds nothing more), and before any test starts:
	// beside a dozen cluster tests, two cold builds of the whole module
	// starved their daemons of CPU (a takeover's heir drove its segments at
	// two thirds of their rate). With a warm build cache they take a second
	// or two. The cluster image, when its files changed, is mostly Docker
	// writing layers (some 3 to 7 s, and little CPU): the tests start
	// beside it, and the one test that needs it waits for it. It is kept
	// for the next run (buildClusterImage).
	var builds sync.WaitGroup
	var err error
	builds.Go(func() { binPath, err = goBuild(nil, "-tags", buildTags) })
	wholePackage := flagValue("test.run") == "" && flagValue("test.list") == ""
	if wholePackage {
		builds.Go(func() { _, _ = faultsBin() })
		builds.Go(func() { _, _ = clusterBin() })
	}
	builds.Wait()
	if err != nil {
		fmt.Fprintln(os.Stderr, "build forgeload:", err)
		os.Exit(1)
	}
	var image sync.WaitGroup
	if wholePackage {
		image.Go(func() { clusterImageOnce.Do(func() { clusterImageRef, clusterImageErr = buildClusterImage() }) })
	}
	// In-process runs of load write their results here, not into the
	// source tree (the binary's runs have their own working directory).
	results, err := os.MkdirTemp("", "forgeload-cmd-results-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "results directory:", err)
		os.Exit(1)
	}
	resultsDirDefault = results
	code := m.Run()
	image.Wait()
	_ = os.RemoveAll(results)
	os.Exit(code)
}

// goBuild builds the forgeload binary (./cmd/forgeload, the main of
// ./cmd/runner under the binary's name) with the extra environment and go
// build flags, and returns its path; see testbin.Build: a later run whose
// sources did not change reuses the binary.
func goBuild(env []string, flags ...string) (string, error) {
	return testbin.Build("github.com/forgeload/forgeload/cmd/forgeload", env, flags...)
}

// buildTags are the build tags of every build the project documents (the
// Dockerfile, docs/install.md, bench/): grpcnotrace leaves out gRPC's
// golang.org/x/net/trace (see docs/dependencies.md). Tests build with them,
// so that they test the binary that ships.
const buildTags = "grpcnotrace"

// flagValue returns the value of the flag name, "" if there is none.
func flagValue(name string) string {
	if f := flag.Lookup(name); f != nil {
		return f.Value.String()
	}
	return ""
}

// node is one forgeload home: a config file and a registration file.
type node struct {
	t    *testing.T
	dir  string
	cfg  string
	file string
}

// newNode's daemons poll for work every 100 ms after a task and back off to
// once a second when idle: a queued job waits at most a second. At 200 ms,
// the package's thirty-odd idle daemons polling the race-built fake forges
// cost about 4 of its 40 CPU seconds.
func newNode(t *testing.T, extra string) *node {
	t.Helper()
	dir := t.TempDir()
	n := &node{t: t, dir: dir, cfg: filepath.Join(dir, "config.yaml"), file: filepath.Join(dir, ".runner")}
	cfg := fmt.Sprintf(`runner:
  file: %s
  fetch_interval: 100ms
  fetch_interval_max: 1s
  env_file: ""
%s`, n.file, extra)
	if err := os.WriteFile(n.cfg, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return n
}

// forgeload runs the binary to completion with the node's config (-c; not
// for load, whose -c is its concurrency, nor for version) and returns its
// exit code and combined output.
func (n *node) forgeload(args ...string) (int, string) {
	n.t.Helper()
	return n.forgeloadEnv(nil, args...)
}

// forgeloadEnv is forgeload with extra environment variables.
func (n *node) forgeloadEnv(env []string, args ...string) (int, string) {
	n.t.Helper()
	code, out, err := n.forgeloadErr(env, args...)
	if err != nil {
		n.t.Fatal(err)
	}
	return code, out
}

// forgeloadErr is forgeloadEnv for any goroutine: a binary that could not
// be run is an error, not a failed test.
func (n *node) forgeloadErr(env []string, args ...string) (int, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if len(args) == 0 || !slices.Contains([]string{"load", "version", "--version", "-v"}, args[0]) {
		args = append([]string{"-c", n.cfg}, args...)
	}
	cmd := exec.CommandContext(ctx, binPath, args...)
	cmd.Dir = n.dir
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		return 0, "", fmt.Errorf("run forgeload %v: %v", args, err)
	}
	return code, out.String(), nil
}

// daemon is a running `forgeload daemon`.
type daemon struct {
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{}
	code int
}

func (n *node) startDaemon(args ...string) *daemon {
	n.t.Helper()
	return n.start(append([]string{"-c", n.cfg, "daemon"}, args...)...)
}

// start starts the binary with args in the node's directory; it is killed
// at the end of the test if it is still running.
func (n *node) start(args ...string) *daemon {
	n.t.Helper()
	return n.startBin(binPath, args...)
}

// startBin is start with another build of the binary.
func (n *node) startBin(bin string, args ...string) *daemon {
	n.t.Helper()
	d := &daemon{out: &syncBuffer{}, done: make(chan struct{})}
	d.cmd = exec.Command(bin, args...)
	d.cmd.Dir = n.dir
	d.cmd.Stdout, d.cmd.Stderr = d.out, d.out
	if err := d.cmd.Start(); err != nil {
		n.t.Fatal(err)
	}
	go func() {
		defer close(d.done)
		err := d.cmd.Wait()
		if ee, ok := err.(*exec.ExitError); ok {
			d.code = ee.ExitCode()
		}
	}()
	n.t.Cleanup(func() {
		_ = d.cmd.Process.Kill()
		<-d.done
		n.reapContainers()
	})
	return d
}

// wait waits for the daemon to exit and returns its exit code.
func (d *daemon) wait(t *testing.T, within time.Duration) int {
	t.Helper()
	select {
	case <-d.done:
		return d.code
	case <-time.After(within):
		t.Fatalf("daemon did not exit within %s; output:\n%s", within, d.out.String())
		return -1
	}
}

func (d *daemon) signal(t *testing.T, s syscall.Signal) {
	t.Helper()
	if err := d.cmd.Process.Signal(s); err != nil {
		t.Fatalf("signal daemon: %v", err)
	}
}

func waitFor(t *testing.T, what string, within time.Duration, cond func() bool) {
	t.Helper()
	waitForOr(t, what, within, cond, nil)
}

// waitForOr is waitFor that adds what(dump) says (the daemons' output,
// say) to the failure, so that a timeout in CI can be understood.
func waitForOr(t *testing.T, what string, within time.Duration, cond func() bool, dump func() string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			if dump != nil {
				t.Fatalf("timed out after %s waiting for %s\n%s", within, what, dump())
			}
			t.Fatalf("timed out after %s waiting for %s", within, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func registered(t *testing.T, f *forgetest.Forge, n *node, name string) {
	t.Helper()
	code, out := n.forgeload("register", "--no-interactive", "--instance", f.URL(), "--token", "reg-token", "--name", name, "--wait", "20s")
	if code != 0 {
		t.Fatalf("register exit %d:\n%s", code, out)
	}
}

func TestE2ERegister(t *testing.T) {
	parallel(t)
	f := forgetest.New(t, forgetest.WithRegistrationToken("reg-token"))
	n := newNode(t, "")
	registered(t, f, n, "e2e-reg")

	fi, err := os.Stat(n.file)
	if err != nil {
		t.Fatal(err)
	}
	if mode := fi.Mode().Perm(); mode != 0o600 {
		t.Fatalf(".runner mode = %o, want 600", mode)
	}
	var reg struct {
		ID      int64    `json:"id"`
		UUID    string   `json:"uuid"`
		Name    string   `json:"name"`
		Token   string   `json:"token"`
		Address string   `json:"address"`
		Labels  []string `json:"labels"`
	}
	data, _ := os.ReadFile(n.file)
	if err := json.Unmarshal(data, &reg); err != nil {
		t.Fatalf("parse .runner: %v\n%s", err, data)
	}
	runners := f.Runners()
	if len(runners) != 1 || runners[0].UUID != reg.UUID || reg.Token == "" || reg.Name != "e2e-reg" || reg.Address != f.URL() {
		t.Fatalf(".runner = %+v, forge runners = %+v", reg, runners)
	}
	if strings.Join(runners[0].Labels, ",") != "forgeload" {
		t.Fatalf("registered labels %v, want [forgeload]", runners[0].Labels)
	}
	if got := f.Calls("Ping"); got < 1 {
		t.Fatalf("Ping calls = %d, want >= 1", got)
	}
	if _, err := os.Stat(n.file + ".lock"); !os.IsNotExist(err) {
		t.Errorf("register left %s.lock behind (stat: %v)", n.file, err)
	}

	// A second register refuses to overwrite.
	code, out := n.forgeload("register", "--no-interactive", "--instance", f.URL(), "--token", "reg-token")
	if code != ExitBadInput || !strings.Contains(out, "already exists") {
		t.Fatalf("second register: exit %d, output:\n%s", code, out)
	}
	// A bad token is refused with a clear message.
	n2 := newNode(t, "")
	code, out = n2.forgeload("register", "--no-interactive", "--instance", f.URL(), "--token", "wrong", "--wait", "10s")
	if code == 0 || !strings.Contains(out, "registration token") {
		t.Fatalf("register with a bad token: exit %d, output:\n%s", code, out)
	}
}

// TestE2ERegisterFailsFast: a server that answers but is not a forge fails
// register at once with the reason, leaving no .runner and no .runner.lock;
// Ctrl-C while a down forge is waited for says it was interrupted, not that
// the forge did not answer in time.
func TestE2ERegisterFailsFast(t *testing.T) {
	parallel(t)
	notForge := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(notForge.Close)
	n := newNode(t, "")
	start := time.Now()
	code, out := n.forgeload("register", "--no-interactive", "--instance", notForge.URL, "--token", "t", "--wait", "2m")
	if code != ExitBadInput || !strings.Contains(out, "did not answer as a Gitea or Forgejo instance") || !strings.Contains(out, "404") {
		t.Fatalf("register against a non-forge server: exit %d, output:\n%s", code, out)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("register against a non-forge server took %s, want no wait", d)
	}
	for _, p := range []string{n.file, n.file + ".lock"} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("a failed register left %s behind (stat: %v)", p, err)
		}
	}

	f := forgetest.New(t, forgetest.WithRegistrationToken("reg-token"))
	f.Down()
	out2 := &syncBuffer{}
	cmd := exec.Command(binPath, "-c", n.cfg, "register", "--no-interactive", "--instance", f.URL(), "--token", "reg-token", "--wait", "2m")
	cmd.Dir = n.dir
	cmd.Stdout, cmd.Stderr = out2, out2
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	waitFor(t, "the reason register waits", 20*time.Second, func() bool { return strings.Contains(out2.String(), "does not answer yet") })
	if !strings.Contains(out2.String(), "refused") {
		t.Errorf("the waiting message does not give the reason:\n%s", out2.String())
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatalf("register did not stop on SIGINT:\n%s", out2.String())
	}
	if cmd.ProcessState.ExitCode() == 0 || !strings.Contains(out2.String(), "interrupted while waiting") || strings.Contains(out2.String(), "within 2m0s") {
		t.Fatalf("register after SIGINT: exit %d, output:\n%s", cmd.ProcessState.ExitCode(), out2.String())
	}
	if _, err := os.Stat(n.file + ".lock"); !os.IsNotExist(err) {
		t.Errorf("an interrupted register left %s.lock behind (stat: %v)", n.file, err)
	}
}

// TestE2EUnknownEnv: FORGELOAD_ names a deploy script sets for itself are
// a warning, a near miss of a config key is an error with the fix.
func TestE2EUnknownEnv(t *testing.T) {
	parallel(t)
	f := forgetest.New(t, forgetest.WithRegistrationToken("reg-token"))
	n := newNode(t, "")
	code, out := n.forgeloadEnv([]string{"FORGELOAD_BIN=/usr/bin/forgeload", "FORGELOAD_HOME=/var/lib/forgeload"},
		"register", "--no-interactive", "--instance", f.URL(), "--token", "reg-token", "--name", "e2e-env", "--wait", "20s")
	if code != 0 || !strings.Contains(out, "warning: ignoring environment variable FORGELOAD_BIN, FORGELOAD_HOME") {
		t.Fatalf("register with FORGELOAD_BIN and FORGELOAD_HOME: exit %d, output:\n%s", code, out)
	}
	code, out = n.forgeloadEnv([]string{"FORGELOAD_BIN=/usr/bin/forgeload", "FORGELOAD_RUNNER_CAPACTIY=3"}, "daemon", "--once")
	if code != ExitBadInput || !strings.Contains(out, "FORGELOAD_RUNNER_CAPACTIY (did you mean FORGELOAD_RUNNER_CAPACITY?)") || strings.Contains(out, "FORGELOAD_BIN (") {
		t.Fatalf("daemon with a misspelt override: exit %d, output:\n%s", code, out)
	}
}

func TestE2EDaemonRunsJobAndStopsOnSIGTERM(t *testing.T) {
	parallel(t)
	f := forgetest.New(t, forgetest.WithRegistrationToken("reg-token"))
	n := newNode(t, "")
	registered(t, f, n, "e2e-daemon")
	d := n.startDaemon()

	id := f.QueueJob(forgetest.Job{RunsOn: []string{"forgeload"}, Payload: []byte("on: push\njobs:\n  a:\n    runs-on: forgeload\n    steps:\n      - run: echo from-the-daemon\n")})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	v, err := f.WaitTask(ctx, id, func(v forgetest.TaskView) bool { return v.Done && v.Archived })
	if err != nil {
		t.Fatalf("task not done: %v; daemon output:\n%s", err, d.out.String())
	}
	if v.Result != runnerv1.Result_RESULT_SUCCESS || !strings.Contains(strings.Join(v.Log, "\n"), "from-the-daemon") {
		t.Fatalf("task result %v, log:\n%s", v.Result, strings.Join(v.Log, "\n"))
	}
	waitFor(t, "the task's end in the daemon log", 30*time.Second, func() bool { return strings.Contains(d.out.String(), "task finished") })
	// A second daemon cannot share the registration, and register cannot
	// replace it under the running one.
	code, out := n.forgeload("daemon")
	if code == 0 || !strings.Contains(out, "another forgeload daemon") {
		t.Fatalf("second daemon: exit %d, output:\n%s", code, out)
	}
	code, out = n.forgeload("register", "--no-interactive", "--replace", "--instance", f.URL(), "--token", "reg-token", "--name", "usurper")
	if code == 0 || !strings.Contains(out, "stop that daemon before registering again") {
		t.Fatalf("register --replace under a running daemon: exit %d, output:\n%s", code, out)
	}

	d.signal(t, syscall.SIGTERM)
	if code := d.wait(t, 15*time.Second); code != 0 {
		t.Fatalf("daemon exit code after SIGTERM = %d, want 0; output:\n%s", code, d.out.String())
	}
	if n := strings.Count(d.out.String(), "task finished"); n != 1 {
		t.Errorf("the daemon logged \"task finished\" %d times for one task, want 1:\n%s", n, d.out.String())
	}
	if got := f.Calls("Declare"); got != 1 {
		t.Fatalf("Declare calls = %d, want 1", got)
	}
	if got := f.Calls("FetchTask"); got < 2 {
		t.Fatalf("FetchTask calls = %d, want >= 2", got)
	}
	if got := f.Calls("Register"); got != 1 {
		t.Fatalf("Register calls = %d, want 1", got)
	}
}

func TestE2EUnregisteredExitsNonZero(t *testing.T) {
	parallel(t)
	f := forgetest.New(t, forgetest.WithRegistrationToken("reg-token"))
	n := newNode(t, "")
	registered(t, f, n, "e2e-gone")
	d := n.startDaemon()
	waitFor(t, "the first FetchTask", 15*time.Second, func() bool { return f.Calls("FetchTask") > 0 })
	f.DeleteRunner(f.Runners()[0].UUID)
	code := d.wait(t, 15*time.Second)
	if code == 0 || !strings.Contains(d.out.String(), "register again") {
		t.Fatalf("daemon after deletion: exit %d, output:\n%s", code, d.out.String())
	}
}

// TestE2EUnregisteredAtStart: a runner deleted while the daemon was down
// gets Gitea's unregistered answer (HTTP 500, code unknown) to Declare; the
// daemon must exit non-zero at once, not wait for the forge forever.
func TestE2EUnregisteredAtStart(t *testing.T) {
	parallel(t)
	f := forgetest.New(t, forgetest.WithRegistrationToken("reg-token"))
	n := newNode(t, "")
	registered(t, f, n, "e2e-gone-at-start")
	f.DeleteRunner(f.Runners()[0].UUID)
	d := n.startDaemon()
	code := d.wait(t, 20*time.Second)
	out := d.out.String()
	if code == 0 || !strings.Contains(out, "register again") || strings.Contains(out, "did not answer Declare") {
		t.Fatalf("daemon of a deleted runner: exit %d, output:\n%s", code, out)
	}
	if got := f.Calls("Declare"); got != 1 {
		t.Fatalf("Declare calls = %d, want 1 (no retry after the forge said unregistered)", got)
	}
}

func TestE2EOnceRunsOneJob(t *testing.T) {
	parallel(t)
	f := forgetest.New(t, forgetest.WithRegistrationToken("reg-token"))
	n := newNode(t, "")
	registered(t, f, n, "e2e-once")
	payload := []byte("on: push\njobs:\n  a:\n    runs-on: forgeload\n    steps:\n      - run: echo one\n")
	first := f.QueueJob(forgetest.Job{RunsOn: []string{"forgeload"}, Payload: payload})
	second := f.QueueJob(forgetest.Job{RunsOn: []string{"forgeload"}, Payload: payload})
	d := n.startDaemon("--once")
	if code := d.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("daemon --once exit %d:\n%s", code, d.out.String())
	}
	if v := f.Task(first); v.Result != runnerv1.Result_RESULT_SUCCESS {
		t.Fatalf("first task result %v", v.Result)
	}
	if v := f.Task(second); v.Picked {
		t.Fatal("--once picked a second task")
	}
}

func TestE2EShutdownDrainsThenCancels(t *testing.T) {
	parallel(t)
	f := forgetest.New(t, forgetest.WithRegistrationToken("reg-token"))
	payload := func(secs int) []byte {
		return []byte(fmt.Sprintf("on: push\njobs:\n  a:\n    runs-on: forgeload\n    steps:\n      - run: echo begin; sleep %d; echo end\n      - if: always()\n        run: echo always\n", secs))
	}
	started := func(id int64) func() bool {
		return func() bool { return strings.Contains(strings.Join(f.Task(id).Log, "\n"), "begin") }
	}

	// Within shutdown_timeout: the job finishes and succeeds.
	n := newNode(t, "  shutdown_timeout: 30s\n")
	registered(t, f, n, "e2e-drain")
	d := n.startDaemon()
	id := f.QueueJob(forgetest.Job{RunsOn: []string{"forgeload"}, Payload: payload(2)})
	waitFor(t, "job start", 20*time.Second, started(id))
	d.signal(t, syscall.SIGTERM)
	if code := d.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("drain exit %d:\n%s", code, d.out.String())
	}
	if v := f.Task(id); v.Result != runnerv1.Result_RESULT_SUCCESS || !strings.Contains(strings.Join(v.Log, "\n"), "\nend\n") {
		t.Fatalf("drained job: %v\n%s", v.Result, strings.Join(v.Log, "\n"))
	}

	// Past shutdown_timeout: the job is cancelled, and its logs are flushed.
	n2 := newNode(t, "  shutdown_timeout: 1s\n")
	registered(t, f, n2, "e2e-cancel")
	d2 := n2.startDaemon()
	id2 := f.QueueJob(forgetest.Job{RunsOn: []string{"forgeload"}, Payload: payload(60)})
	waitFor(t, "job start", 20*time.Second, started(id2))
	d2.signal(t, syscall.SIGTERM)
	if code := d2.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("cancel exit %d:\n%s", code, d2.out.String())
	}
	v := f.Task(id2)
	if v.Result != runnerv1.Result_RESULT_CANCELLED || !v.Archived {
		t.Fatalf("cancelled job: result %v archived %v\n%s", v.Result, v.Archived, strings.Join(v.Log, "\n"))
	}
	for _, row := range v.Log {
		if row == "end" {
			t.Fatal("the job ran to its end despite the shutdown deadline")
		}
	}
}

func TestEffectiveLabels(t *testing.T) {
	parallel(t)
	tests := []struct {
		configured, registered, want []string
	}{
		{[]string{"forgeload"}, []string{"perf", "gpu"}, []string{"perf", "gpu"}}, // default config: keep what register chose
		{[]string{"big"}, []string{"perf"}, []string{"big"}},                      // the admin changed the config: it wins
		{[]string{"forgeload"}, nil, []string{"forgeload"}},                       // an old registration without labels
	}
	for _, tt := range tests {
		if got := effectiveLabels(tt.configured, tt.registered); strings.Join(got, ",") != strings.Join(tt.want, ",") {
			t.Errorf("effectiveLabels(%v, %v) = %v, want %v", tt.configured, tt.registered, got, tt.want)
		}
	}
}

// TestE2ESecondSignalCancelsAtOnce: with a long shutdown_timeout, the first
// SIGTERM drains and a second one cancels the running job at once; it still
// reports CANCELLED with its logs.
func TestE2ESecondSignalCancelsAtOnce(t *testing.T) {
	parallel(t)
	f := forgetest.New(t, forgetest.WithRegistrationToken("reg-token"))
	n := newNode(t, "  shutdown_timeout: 10m\n")
	registered(t, f, n, "e2e-second-signal")
	d := n.startDaemon()
	id := f.QueueJob(forgetest.Job{RunsOn: []string{"forgeload"}, Payload: []byte("on: push\njobs:\n  a:\n    runs-on: forgeload\n    steps:\n      - run: echo begin; sleep 120\n")})
	// The step's own line, not the echo of its command ("[bash] echo begin; …").
	waitFor(t, "job start", 20*time.Second, func() bool { return slices.Contains(f.Task(id).Log, "begin") })
	d.signal(t, syscall.SIGTERM)
	waitFor(t, "the drain message", 30*time.Second, func() bool { return strings.Contains(d.out.String(), "send the signal again") })
	d.signal(t, syscall.SIGTERM)
	if code := d.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("exit %d after two signals:\n%s", code, d.out.String())
	}
	if v := f.Task(id); v.Result != runnerv1.Result_RESULT_CANCELLED || !v.Archived {
		t.Fatalf("job after the second signal: %v archived=%v", v.Result, v.Archived)
	}
}

// TestE2EDaemonWaitsForForge starts the daemon while the forge refuses
// connections: it must wait with backoff, not exit, and serve once the
// forge is back. A registration file others can read is tightened to 0600.
func TestE2EDaemonWaitsForForge(t *testing.T) {
	parallel(t)
	f := forgetest.New(t, forgetest.WithRegistrationToken("reg-token"))
	n := newNode(t, "")
	registered(t, f, n, "e2e-wait")
	if err := os.Chmod(n.file, 0o644); err != nil {
		t.Fatal(err)
	}
	f.Down()
	d := n.startDaemon()
	waitFor(t, "a Declare retry in the log", 20*time.Second, func() bool { return strings.Contains(d.out.String(), "did not answer Declare") })
	f.Up()
	id := f.QueueJob(forgetest.Job{RunsOn: []string{"forgeload"}, Payload: []byte("on: push\njobs:\n  a:\n    runs-on: forgeload\n    steps:\n      - run: echo after-the-outage\n")})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	v, err := f.WaitTask(ctx, id, func(v forgetest.TaskView) bool { return v.Done })
	if err != nil || v.Result != runnerv1.Result_RESULT_SUCCESS {
		t.Fatalf("job after the forge came back: %v %v\n%s", v.Result, err, d.out.String())
	}
	if fi, err := os.Stat(n.file); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf(".runner mode after start = %v (%v), want 0600", fi.Mode().Perm(), err)
	}
}

// TestE2EConfigBounds: limits that cannot be honoured, and a .runner token
// with a line break, stop the daemon at start with exit 2 and the fix.
func TestE2EConfigBounds(t *testing.T) {
	parallel(t)
	for _, tt := range []struct{ extra, want string }{
		{"  capacity: 100000000\n", "runner.capacity: 100000000 is above the limit of 1000"},
		{"  report_interval: 1ns\n", "runner.report_interval: 1ns is outside 100ms to 1m0s"},
		{"  shutdown_timeout: 100000h\n", "runner.shutdown_timeout: 100000h0m0s is above the 24h0m0s limit"},
	} {
		n := newNode(t, tt.extra)
		if code, out := n.forgeload("daemon"); code != ExitBadInput || !strings.Contains(out, tt.want) {
			t.Errorf("daemon with %q: exit %d, output:\n%s", strings.TrimSpace(tt.extra), code, out)
		}
	}
	n := newNode(t, "")
	reg := `{"uuid": "u", "token": "secret-part\nX-Injected: 1", "address": "http://127.0.0.1:1"}`
	if err := os.WriteFile(n.file, []byte(reg), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out := n.forgeload("daemon")
	if code != ExitBadInput || !strings.Contains(out, "holds a space, line break or control character") || strings.Contains(out, "secret-part") {
		t.Errorf("daemon with a token holding a newline: exit %d, output:\n%s", code, out)
	}
}

// reapContainers removes the Docker containers, networks and volumes of the
// node's runner, which a daemon killed at the end of a test leaves behind
// (its next start would remove them, but a test's runner never starts
// again). Without a registration or a Docker Engine there is nothing to do.
func (n *node) reapContainers() {
	reg, err := config.LoadRegistration(n.file)
	if err != nil || reg.UUID == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	eng, err := container.New(ctx, container.Options{Owner: reg.UUID})
	if err != nil {
		return
	}
	defer eng.Close()
	_, _ = eng.Reap(ctx, "")
}
