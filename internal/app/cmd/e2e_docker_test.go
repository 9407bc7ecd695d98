package cmd

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	runnerv1 "gitea.dev/actions-proto-go/runner/v1"

	"github.com/forgeload/forgeload/internal/pkg/config"
	"github.com/forgeload/forgeload/internal/pkg/container"
	"github.com/forgeload/forgeload/internal/pkg/container/containertest"
	"github.com/forgeload/forgeload/internal/pkg/forgetest"
)

// dockerNode is a registered node whose daemon uses the Docker Engine, and
// an Engine handle with the daemon's owner label, to look for leftovers.
type dockerNode struct {
	*node
	f   *forgetest.Forge
	eng *container.Engine
	img string
}

func newDockerNode(t *testing.T, name, extra string) *dockerNode {
	t.Helper()
	img := containertest.Image(t)
	f := forgetest.New(t, forgetest.WithRegistrationToken("reg-token"))
	// extra comes first, so that indented keys continue the runner section;
	// images are never pulled unless extra has a container section.
	section := "container:\n  pull_policy: never\n"
	if strings.Contains(extra, "container:") {
		section = ""
	}
	n := newNode(t, extra+"load:\n  progress_interval: 1s\n"+section)
	registered(t, f, n, name)
	reg, err := config.LoadRegistration(n.file)
	if err != nil {
		t.Fatal(err)
	}
	eng := containertest.EngineFor(t, reg.UUID)
	return &dockerNode{node: n, f: f, eng: eng, img: img}
}

// objects lists the daemon's containers, networks and volumes.
func (n *dockerNode) objects(t *testing.T) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	objs, err := n.eng.Objects(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func (n *dockerNode) waitNoObjects(t *testing.T, within time.Duration, d *daemon) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		objs := n.objects(t)
		if len(objs) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s these are still there: %v\ndaemon output:\n%s", within, objs, d.out.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// serviceJob is a perf job with one service, api, built from the test image,
// and a load step against it. Its health check runs every 2 s: each run of
// it is a docker exec, about 0.09 s of the Engine's CPU, for as long as the
// service lives, and at 500 ms the checks cost more CPU than the load.
func serviceJob(img, cpus, path, thresholds string) string {
	return fmt.Sprintf(`
on: push
jobs:
  perf:
    runs-on: forgeload
    services:
      api:
        image: %s
        ports: ["8080"]
        options: --health-cmd "/sut check" --health-interval 2s --health-retries 15 --cpus %s --memory 128m
    steps:
      - id: load
        uses: forgeload/load@v1
        with:
          target: http://127.0.0.1:${{ job.services.api.ports['8080'] }}%s
          rate: 40
          concurrency: 8
          duration: 4s
          validity: warn
          thresholds: |
%s
      - run: echo "cpu=${{ steps.load.outputs.sut_cpu_max }} mem=${{ steps.load.outputs.sut_mem_max_mb }}"
        if: always()
`, img, cpus, path, thresholds)
}

// servicesExample is examples/services.yml with two changes that keep it
// about the service rather than the machine: its p99 gate is raised to
// 30s (a 2-core box at a load average of 20 takes it past 500 ms), and
// requests still in flight at the end get 30 s to finish (a busy machine
// stalled eight of them for over a second once, and the default 1 s
// graceful stop cancelled them: 3% errors against the 1% gate), and its
// validity only warns (a generator starved for seconds on such a box
// makes the run INVALID, rightly, which is not what this test is about).
func servicesExample(t *testing.T) string {
	t.Helper()
	return editedExample(t, "services.yml",
		[2]string{"http_req_duration:p99 < 500ms", "http_req_duration:p99 < 30s"},
		[2]string{"          duration: 10s   #", "          graceful_shutdown: 30s\n          validity: warn\n          duration: 10s   #"})
}

// editedExample returns examples/name with each change's first text
// replaced by its second, once; it fails the test when the example no
// longer has a text to replace.
func editedExample(t *testing.T, name string, changes ...[2]string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "examples", name))
	if err != nil {
		t.Fatal(err)
	}
	example := string(b)
	for _, c := range changes {
		if !strings.Contains(example, c[0]) {
			t.Fatalf("examples/%s no longer has %q; update this test", name, c[0])
		}
		example = strings.Replace(example, c[0], c[1], 1)
	}
	return example
}

// A job with a health-checked service and a load step against it passes
// its latency and sut_cpu thresholds, with the service's CPU and memory in
// the progress lines, the summary and the outputs; the same job against an
// endpoint that burns CPU fails on sut_cpu with the numbers in the log.
// Nothing is left behind.
func TestE2EServiceLoadWithSUTThresholds(t *testing.T) {
	parallelLong(t, 21)
	n := newDockerNode(t, "e2e-sut", "")
	d := n.startDaemon()

	// examples/services.yml as servicesExample adapts it; the SUT gates
	// are the ones under test here.
	example := servicesExample(t)
	id := n.f.QueueJob(forgetest.Job{RunsOn: []string{"forgeload"}, Payload: []byte(example), Vars: map[string]string{"API_IMAGE": n.img}})
	v := waitDone(t, n.f, id, d)
	log := strings.Join(v.Log, "\n")
	if v.Result != runnerv1.Result_RESULT_SUCCESS {
		t.Fatalf("examples/services.yml: %v\n%s", v.Result, log)
	}
	for _, want := range []string{"service api is ready: 8080/tcp on 127.0.0.1:", "  sut api cpu ", "SUT api CPU peak / mean", "SUT api memory peak / mean", "(limit 256.0 MiB)", "PASS  sut_cpu:max < 80%", "PASS  sut_mem:max < 200MB"} {
		if !strings.Contains(log, want) {
			t.Fatalf("log lacks %q:\n%s", want, log)
		}
	}
	if !regexp.MustCompile(`SUT api sampled +\d+ readings? covering \d+\.\d s of the run's \d+\.\d s`).MatchString(log) {
		t.Fatalf("the summary does not say how much of the run the service's readings cover:\n%s", log)
	}
	if !regexp.MustCompile(`api CPU peak \d+\.\d% \(\d+\.\d{3} cores\), memory peak \d+\.\d MiB`).MatchString(log) {
		t.Fatalf("the sut outputs are not in the next step's log:\n%s", log)
	}
	n.waitNoObjects(t, 30*time.Second, d)

	// A small CPU limit, so that the service reaches it even on a busy
	// machine: eight requests in flight want far more than 0.1 core. The
	// bound is low too: a 2-core machine running the whole suite beside a
	// process that burns a core gave the service only 49% of its 0.1 core
	// at peak, and once, with the load stalled for two of its four
	// seconds, 10%.
	id = n.f.QueueJob(forgetest.Job{RunsOn: []string{"forgeload"}, Payload: []byte(serviceJob(n.img, "0.1", "/burn?ms=20",
		"            sut_cpu:max < 5%"))})
	v = waitDone(t, n.f, id, d)
	log = strings.Join(v.Log, "\n")
	if v.Result != runnerv1.Result_RESULT_FAILURE {
		t.Fatalf("CPU-burning job: %v, want failure\n%s", v.Result, log)
	}
	if !regexp.MustCompile(`thresholds failed: sut_cpu:max < 5% \(got \d+\.\d%\)`).MatchString(log) {
		t.Fatalf("log lacks the failed sut_cpu threshold with its number:\n%s", log)
	}
	n.waitNoObjects(t, 30*time.Second, d)
}

// A service that never becomes healthy, a missing image and a bad option
// each fail the job with a clear message, and leave no container, network
// or volume.
func TestE2EServiceFailuresLeaveNothing(t *testing.T) {
	parallel(t)
	// The never-healthy service's volume is listed, so it is created, and
	// must be removed with the job.
	n := newDockerNode(t, "e2e-svc-fail", "container:\n  pull_policy: never\n  valid_volumes: ['data-*']\n")
	d := n.startDaemon()
	job := func(service string) string {
		return "on: push\njobs:\n  a:\n    runs-on: forgeload\n    services:\n      api:\n" + service + "    steps:\n      - run: echo never-runs\n"
	}
	for _, tc := range []struct{ name, service, want string }{
		{"never healthy", fmt.Sprintf("        image: %s\n        volumes: [data-%%s:/data]\n        options: --health-cmd \"echo db not ready; exit 1\" --health-interval 300ms --health-retries 2\n", n.img),
			`service api (` + n.img + `) is unhealthy; last health check output: db not ready`},
		{"missing image", "        image: forgeload-test-missing:none\n",
			"service api: image forgeload-test-missing:none: image not found on the Docker Engine, and the runner's pull policy is never"},
		{"bad option", fmt.Sprintf("        image: %s\n        options: --cpus 1 --privileged\n", n.img),
			"services.api: options: --privileged is not allowed"},
		{"host path", fmt.Sprintf("        image: %s\n        options: -v %s:/r\n", n.img, n.file),
			"services.api: volumes[0]: \"" + n.file + ":/r\": host path " + n.file + " is not allowed on this runner"},
		{"unlisted named volume", fmt.Sprintf("        image: %s\n        volumes: [forgeload-data:/data]\n", n.img),
			"services.api: volumes[0]: \"forgeload-data:/data\": named volume forgeload-data is not allowed on this runner"},
		{"capability", fmt.Sprintf("        image: %s\n        options: --cap-add SYS_ADMIN\n", n.img),
			"services.api: options: --cap-add SYS_ADMIN is not allowed on this runner: a capability widens what the container can do to the host; the runner's admin can allow it by adding SYS_ADMIN to container.allowed_capabilities"},
	} {
		service := tc.service
		if strings.Contains(service, "%s") {
			service = fmt.Sprintf(service, "x")
		}
		v := waitDone(t, n.f, n.f.QueueJob(forgetest.Job{RunsOn: []string{"forgeload"}, Payload: []byte(job(service))}), d)
		log := strings.Join(v.Log, "\n")
		if v.Result != runnerv1.Result_RESULT_FAILURE || !strings.Contains(log, tc.want) || strings.Contains(log, "never-runs\n") {
			t.Fatalf("%s: result %v, log lacks %q (or ran the step):\n%s", tc.name, v.Result, tc.want, log)
		}
		if tc.name == "never healthy" && !strings.Contains(log, "api | sut: listening on :8080") {
			t.Fatalf("%s: the service's log is not in the job log:\n%s", tc.name, log)
		}
		n.waitNoObjects(t, 30*time.Second, d)
	}
}

// A job cancelled mid-step, and a daemon stopped with SIGTERM, remove every
// container within seconds; a daemon killed with -9 leaves them, and its
// next start removes them.
func TestE2EContainersRemovedOnCancelSignalAndRestart(t *testing.T) {
	parallelLong(t, 14)
	n := newDockerNode(t, "e2e-svc-stop", "  shutdown_timeout: 0s\n")
	payload := fmt.Sprintf("on: push\njobs:\n  a:\n    runs-on: forgeload\n    services:\n      api:\n        image: %s\n    steps:\n      - run: sleep 60 & echo step-started pids=$$,$!; wait\n", n.img)
	// The step's output, not the echo of its command, which comes first.
	startedLine := regexp.MustCompile(`step-started pids=(\d+),(\d+)`)
	started := func(id int64, d *daemon) {
		waitFor(t, "the step to start", 60*time.Second, func() bool {
			return startedLine.MatchString(strings.Join(n.f.Task(id).Log, "\n"))
		})
		if objs := n.objects(t); len(objs) != 2 {
			t.Fatalf("while the job runs: %v, want its container and network\n%s", objs, d.out.String())
		}
	}

	d := n.startDaemon()
	id := n.f.QueueJob(forgetest.Job{RunsOn: []string{"forgeload"}, Payload: []byte(payload)})
	started(id, d)
	n.f.Cancel(id)
	if v := waitDone(t, n.f, id, d); v.Result != runnerv1.Result_RESULT_CANCELLED {
		t.Fatalf("cancelled job: %v", v.Result)
	}
	n.waitNoObjects(t, 30*time.Second, d)

	id = n.f.QueueJob(forgetest.Job{RunsOn: []string{"forgeload"}, Payload: []byte(payload)})
	started(id, d)
	d.signal(t, syscall.SIGTERM)
	d.wait(t, 30*time.Second)
	n.waitNoObjects(t, 30*time.Second, d)

	d = n.startDaemon()
	id = n.f.QueueJob(forgetest.Job{RunsOn: []string{"forgeload"}, Payload: []byte(payload)})
	started(id, d)
	d.signal(t, syscall.SIGKILL)
	d.wait(t, 30*time.Second)
	if objs := n.objects(t); len(objs) == 0 {
		t.Fatal("kill -9 left nothing behind; the restart test would prove nothing")
	}
	// The step's shell and its sleep outlive the daemon, as they would
	// outside a systemd unit or a container; the next daemon stops them.
	m := startedLine.FindStringSubmatch(strings.Join(n.f.Task(id).Log, "\n"))
	if m == nil {
		t.Fatalf("the step printed no pids:\n%s", strings.Join(n.f.Task(id).Log, "\n"))
	}
	var pids []int
	for _, s := range m[1:] {
		pid, _ := strconv.Atoi(s)
		if !processRuns(pid) {
			t.Fatalf("process %d of the step ended with the daemon; the restart test would prove nothing", pid)
		}
		pids = append(pids, pid)
	}
	t.Cleanup(func() { // if the test failed: the step's processes, if still the same
		for _, pid := range pids {
			if cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); bytes.Contains(cmd, []byte("step-0.sh")) || bytes.Equal(cmd, []byte("sleep\x0060\x00")) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	d = n.startDaemon()
	n.waitNoObjects(t, 30*time.Second, d)
	waitFor(t, "the reaper's log lines", 30*time.Second, func() bool {
		out := d.out.String()
		return strings.Contains(out, "left behind by an earlier run of this runner") &&
			strings.Contains(out, "stopped 2 processes that steps of an earlier run of this runner left running")
	})
	for _, pid := range pids {
		waitFor(t, fmt.Sprintf("the step's process %d to end", pid), 10*time.Second, func() bool { return !processRuns(pid) })
	}
}

// processRuns reports whether pid is a running process (a zombie has
// ended: its parent has just not reaped it).
func processRuns(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
}

// A container: job runs its run: steps in the container, with the checked
// out workspace, env and GITHUB_* files, and cannot read the runner's
// .runner file; a docker:// label does the same for runs-on.
func TestE2EJobContainer(t *testing.T) {
	parallel(t)
	img := containertest.Image(t)
	n := newDockerNode(t, "e2e-jobctr", "  labels: [forgeload, boxed:docker://"+img+"]\n")
	if _, err := n.f.AddRepo("team/app", map[string]string{"hello.txt": "hello from the repo\n"}); err != nil {
		t.Fatal(err)
	}
	d := n.startDaemon()
	id := n.f.QueueJob(forgetest.Job{RunsOn: []string{"forgeload"}, Payload: []byte(fmt.Sprintf(`
on: push
jobs:
  a:
    runs-on: forgeload
    container:
      image: %s
      env: {FROM_CONTAINER_KEY: yes}
    env: {FROM_JOB: job-env}
    steps:
      - uses: actions/checkout@v4
      - id: s
        run: |
          cat hello.txt
          test -x /sut && echo "in the image: $FROM_JOB, path $PATH"
          echo "where=$(pwd)" >> "$GITHUB_OUTPUT"
          echo "made in the container" > made.txt
      - run: cat %s
        continue-on-error: true
      - run: echo "output=${{ steps.s.outputs.where }}"; cat made.txt
`, img, n.file))})
	v := waitDone(t, n.f, id, d)
	log := strings.Join(v.Log, "\n")
	if v.Result != runnerv1.Result_RESULT_SUCCESS {
		t.Fatalf("container job: %v\n%s", v.Result, log)
	}
	for _, want := range []string{"hello from the repo", "in the image: job-env, path /bin\n", "/workspace", "made in the container", "cat: can't open '" + n.file + "': No such file or directory"} {
		if !strings.Contains(log, want) {
			t.Fatalf("log lacks %q:\n%s", want, log)
		}
	}
	if v.Steps[2].Result != runnerv1.Result_RESULT_FAILURE {
		t.Fatalf("reading .runner in the container: %v, want failure\n%s", v.Steps[2].Result, log)
	}

	id = n.f.QueueJob(forgetest.Job{RunsOn: []string{"boxed"}, Payload: []byte("on: push\njobs:\n  a:\n    runs-on: boxed\n    steps:\n      - run: test -x /sut && echo in-the-label-image\n")})
	if v := waitDone(t, n.f, id, d); v.Result != runnerv1.Result_RESULT_SUCCESS || !strings.Contains(strings.Join(v.Log, "\n"), "in-the-label-image") {
		t.Fatalf("docker:// label job: %v\n%s", v.Result, strings.Join(v.Log, "\n"))
	}
	n.waitNoObjects(t, 30*time.Second, d)
}

// With no Docker Engine reachable, register refuses docker:// labels; the
// daemon does not offer them, says why, and keeps running host jobs, while
// a job with services fails with the reason.
func TestE2ENoDockerEngine(t *testing.T) {
	parallel(t)
	f := forgetest.New(t, forgetest.WithRegistrationToken("reg-token"))
	noDocker := "container:\n  docker_host: unix:///nonexistent/docker.sock\n"
	n := newNode(t, noDocker)
	code, out := n.forgeload("register", "--no-interactive", "--instance", f.URL(), "--token", "reg-token", "--name", "nodocker", "--labels", "forgeload,boxed:docker://busybox")
	if code == 0 || !strings.Contains(out, "--labels: boxed:docker://busybox run jobs in a container, and no Docker Engine is reachable") {
		t.Fatalf("register with a docker:// label and no Engine: exit %d\n%s", code, out)
	}

	n = newNode(t, "  labels: [forgeload, boxed:docker://busybox]\n"+noDocker)
	if code, out := n.forgeload("register", "--no-interactive", "--instance", f.URL(), "--token", "reg-token", "--name", "nodocker", "--labels", "forgeload"); code != 0 {
		t.Fatalf("register exit %d:\n%s", code, out)
	}
	d := n.startDaemon()
	waitFor(t, "the refusal line", 30*time.Second, func() bool {
		return strings.Contains(d.out.String(), `runner label \"boxed:docker://busybox\" is not offered: it runs jobs in a container, and no Docker Engine is reachable`)
	})
	host := f.QueueJob(forgetest.Job{RunsOn: []string{"forgeload"}, Payload: []byte("on: push\njobs:\n  a:\n    runs-on: forgeload\n    steps:\n      - run: echo host-job-ran\n")})
	if v := waitDone(t, f, host, d); v.Result != runnerv1.Result_RESULT_SUCCESS {
		t.Fatalf("host job: %v\n%s", v.Result, strings.Join(v.Log, "\n"))
	}
	svc := f.QueueJob(forgetest.Job{RunsOn: []string{"forgeload"}, Payload: []byte("on: push\njobs:\n  a:\n    runs-on: forgeload\n    services:\n      db: {image: busybox}\n    steps:\n      - run: echo never\n")})
	if v := waitDone(t, f, svc, d); v.Result != runnerv1.Result_RESULT_FAILURE || !strings.Contains(strings.Join(v.Log, "\n"), "need a Docker Engine, and this runner has none (no Docker Engine is reachable at unix:///nonexistent/docker.sock") {
		t.Fatalf("service job: %v\n%s", v.Result, strings.Join(v.Log, "\n"))
	}
	for _, r := range f.Runners() {
		if r.Name == "nodocker" && strings.Join(r.Labels, ",") != "forgeload" {
			t.Fatalf("declared labels %v, want only forgeload", r.Labels)
		}
	}
}

// forgeload exec runs examples/services.yml (as servicesExample adapts
// it) on this machine's Docker Engine, and removes its containers when it
// returns.
func TestE2EExecServicesExample(t *testing.T) {
	parallelLong(t, 10)
	img := containertest.Image(t)
	root := repoRoot(t)
	wf := filepath.Join(t.TempDir(), "services.yml")
	if err := os.WriteFile(wf, []byte(servicesExample(t)), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binPath, "exec", "--results-dir", t.TempDir(), "--var", "API_IMAGE="+img, wf)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+t.TempDir(), "FORGELOAD_CONTAINER_PULL_POLICY=never")
	out, err := cmd.CombinedOutput()
	text := string(out)
	if err != nil {
		t.Fatalf("forgeload exec examples/services.yml: %v\n%s", err, text)
	}
	for _, want := range []string{"service api is ready", "SUT api CPU peak / mean", "job perf: success"} {
		if !strings.Contains(text, want) {
			t.Fatalf("output lacks %q:\n%s", want, text)
		}
	}
	pid := cmd.ProcessState.Pid()
	eng, err := container.New(ctx, container.Options{Owner: fmt.Sprintf("forgeload-exec-%d", pid)})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	if objs, err := eng.Objects(ctx, ""); err != nil || len(objs) != 0 {
		t.Fatalf("after exec: %v, %v; want nothing left", objs, err)
	}
}

// A service that stops while the job runs is reported, with its log, at
// the job's end; cmd: replaces the image's command. It lives 4 s, so that
// a busy Docker Engine still sees it running when the job starts, and
// dies well within the step's 10 s.
func TestE2EServiceExitsDuringJob(t *testing.T) {
	parallelLong(t, 12)
	n := newDockerNode(t, "e2e-svc-exit", "")
	d := n.startDaemon()
	payload := fmt.Sprintf(`on: push
jobs:
  a:
    runs-on: forgeload
    services:
      api:
        image: %s
        cmd: [sh, -c, "echo up; sleep 4; echo dying now; exit 5"]
    steps:
      - run: sleep 10
`, n.img)
	v := waitDone(t, n.f, n.f.QueueJob(forgetest.Job{RunsOn: []string{"forgeload"}, Payload: []byte(payload)}), d)
	log := strings.Join(v.Log, "\n")
	for _, want := range []string{"service api (" + n.img + ") stopped during the job (exited with code 5)", "api | dying now"} {
		if !strings.Contains(log, want) {
			t.Fatalf("log lacks %q:\n%s", want, log)
		}
	}
	n.waitNoObjects(t, 30*time.Second, d)
}

// Registry credentials come from the job and never reach the log; an image
// that cannot be pulled fails the job naming it, and leaves nothing.
func TestE2EServiceCredentialsAndPullFailure(t *testing.T) {
	parallel(t)
	n := newDockerNode(t, "e2e-svc-pull", "container:\n  pull_policy: missing\n")
	d := n.startDaemon()
	// A registry address on loopback where nothing listens: the pull is
	// refused at once, and no traffic leaves the machine.
	const image = "127.0.0.1:1/acme/api:1"
	payload := "on: push\njobs:\n  a:\n    runs-on: forgeload\n    services:\n      api:\n        image: " + image +
		"\n        credentials:\n          username: bot\n          password: ${{ secrets.REG_PW }}\n    steps:\n      - run: echo never-runs\n"
	v := waitDone(t, n.f, n.f.QueueJob(forgetest.Job{RunsOn: []string{"forgeload"}, Secrets: map[string]string{"REG_PW": "hunter2-registry"}, Payload: []byte(payload)}), d)
	log := strings.Join(v.Log, "\n")
	if v.Result != runnerv1.Result_RESULT_FAILURE || !strings.Contains(log, "service api: image "+image+": image not found: it is not on the Docker Engine and pulling it failed") {
		t.Fatalf("job: %v, want a failure naming the image:\n%s", v.Result, log)
	}
	if strings.Contains(log, "hunter2") || strings.Contains(d.out.String(), "hunter2") {
		t.Fatalf("the registry password is in the log:\n%s\n%s", log, d.out.String())
	}
	n.waitNoObjects(t, 30*time.Second, d)
}
