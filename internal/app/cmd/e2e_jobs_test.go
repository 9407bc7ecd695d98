package cmd

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	runnerv1 "gitea.dev/actions-proto-go/runner/v1"

	"github.com/forgeload/forgeload/internal/pkg/forgetest"
)

// target is a local load target counting requests and the time of the last.
type target struct {
	*httptest.Server
	n, last atomic.Int64
}

func newTarget(t *testing.T) *target {
	t.Helper()
	tg := &target{}
	tg.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		tg.n.Add(1)
		tg.last.Store(time.Now().UnixNano())
		_, _ = w.Write([]byte("ok\n"))
	}))
	t.Cleanup(tg.Close)
	return tg
}

func waitDone(t *testing.T, f *forgetest.Forge, id int64, d *daemon) forgetest.TaskView {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	v, err := f.WaitTask(ctx, id, func(v forgetest.TaskView) bool { return v.Done && v.Archived })
	if err != nil {
		t.Fatalf("task %d not done: %v; daemon output:\n%s", id, err, d.out.String())
	}
	return v
}

// TestE2EPerfJobsThroughDaemon drives the real daemon with a sequence of
// jobs: broken ones fail with their message and the daemon keeps polling;
// a perf job with checkout, run and load succeeds with its log rows, step
// ranges and outputs; a failing threshold fails its job.
func TestE2EPerfJobsThroughDaemon(t *testing.T) {
	parallel(t)
	tg := newTarget(t)
	f := forgetest.New(t, forgetest.WithRegistrationToken("reg-token"))
	if _, err := f.AddRepo("team/api", map[string]string{
		// graceful_shutdown: arrivals a loaded machine left waiting at the
		// end are sent late, not dropped, so the count below is exact.
		"perf/api.yaml": "target: " + tg.URL + "/items\nrate: 100\nduration: 2s\nconcurrency: 8\ngraceful_shutdown: 30s\nthresholds:\n  - \"http_req_failed:rate < 1%\"\n",
	}); err != nil {
		t.Fatal(err)
	}
	n := newNode(t, "load:\n  progress_interval: 500ms\n")
	registered(t, f, n, "e2e-perf")
	d := n.startDaemon()
	job := func(payload string) int64 {
		return f.QueueJob(forgetest.Job{RunsOn: []string{"forgeload"}, Payload: []byte(payload)})
	}

	bad := []struct{ payload, want string }{
		{"jobs: [broken", "workflow line 1: invalid YAML"},
		{"on: push\njobs:\n  a:\n    runs-on: forgeload\n    steps: [{run: echo}]\n  b:\n    runs-on: forgeload\n    steps: [{run: echo}]\n", "exactly one"},
		{"on: push\njobs:\n  a:\n    runs-on: forgeload\n    steps:\n      - uses: acme/setup-thing\n", `step 1 "Run acme/setup-thing" uses "acme/setup-thing": a uses: reference needs a version after @ (owner/repo@v1); add the ref`},
		{"on: push\njobs:\n  a:\n    runs-on: forgeload\n    steps:\n      - run: echo ${{ nosuch.thing }}\n", `unknown context "nosuch"`},
	}
	for _, b := range bad {
		v := waitDone(t, f, job(b.payload), d)
		if v.Result != runnerv1.Result_RESULT_FAILURE || !strings.Contains(strings.Join(v.Log, "\n"), b.want) {
			t.Fatalf("bad job %q: result %v, log lacks %q:\n%s", b.payload, v.Result, b.want, strings.Join(v.Log, "\n"))
		}
	}

	id := job(`
on: push
jobs:
  perf:
    runs-on: forgeload
    outputs:
      p99: ${{ steps.api.outputs.p99_ms }}
      requests: ${{ steps.api.outputs.requests }}
    steps:
      - uses: actions/checkout@v4
      - run: grep -c rate perf/api.yaml
      - id: api
        uses: forgeload/load@v1
        with:
          config: perf/api.yaml
          thresholds: |
            http_req_duration:p99 < 30s
      - run: echo "p99=${{ steps.api.outputs.p99_ms }} passed=${{ steps.api.outputs.thresholds_passed }}"
`)
	v := waitDone(t, f, id, d)
	log := strings.Join(v.Log, "\n")
	if v.Result != runnerv1.Result_RESULT_SUCCESS {
		t.Fatalf("perf job: %v\n%s", v.Result, log)
	}
	if got := tg.n.Load(); got != 200 {
		t.Fatalf("target saw %d requests, want 200", got)
	}
	for i, s := range v.Steps {
		if s.Result != runnerv1.Result_RESULT_SUCCESS || s.LogLength == 0 {
			t.Fatalf("step %d: %+v", i, s)
		}
		if i > 0 && s.LogIndex < v.Steps[i-1].LogIndex+v.Steps[i-1].LogLength {
			t.Fatalf("step %d starts at row %d, inside step %d", i, s.LogIndex, i-1)
		}
	}
	loadRows := strings.Join(v.Log[v.Steps[2].LogIndex:v.Steps[2].LogIndex+v.Steps[2].LogLength], "\n")
	for _, want := range []string{"/100.0 req/s", "Load test summary", "Requests                  200", "Thresholds: PASS"} {
		if !strings.Contains(loadRows, want) {
			t.Fatalf("load step rows lack %q:\n%s", want, loadRows)
		}
	}
	if v.Outputs["requests"] != "200" || v.Outputs["p99"] == "" {
		t.Fatalf("job outputs %v", v.Outputs)
	}
	if !strings.Contains(log, "passed=true") {
		t.Fatalf("the step after the load step did not see its outputs:\n%s", log)
	}

	id = job("on: push\njobs:\n  perf:\n    runs-on: forgeload\n    steps:\n      - uses: forgeload/load@v1\n        with:\n          target: " + tg.URL + "/\n          total: 20\n          thresholds: http_req_duration:max < 1ns\n")
	if v := waitDone(t, f, id, d); v.Result != runnerv1.Result_RESULT_FAILURE || v.Steps[0].Result != runnerv1.Result_RESULT_FAILURE {
		t.Fatalf("threshold job: %v\n%s", v.Result, strings.Join(v.Log, "\n"))
	}
}

// TestE2ECancelMidLoad presses cancel in the fake forge while the daemon
// runs a load step: the target stops seeing requests within about 1 s (5 s
// allowed on a loaded machine), always()
// steps run, and the task ends CANCELLED.
func TestE2ECancelMidLoad(t *testing.T) {
	parallel(t)
	tg := newTarget(t)
	f := forgetest.New(t, forgetest.WithRegistrationToken("reg-token"))
	n := newNode(t, "")
	registered(t, f, n, "e2e-cancel-load")
	// The default report interval (1s) is what bounds the cancel here.
	d := n.startDaemon()
	id := f.QueueJob(forgetest.Job{RunsOn: []string{"forgeload"}, Payload: []byte("on: push\njobs:\n  perf:\n    runs-on: forgeload\n    steps:\n      - uses: forgeload/load@v1\n        with:\n          target: " + tg.URL + "/\n          rate: 100\n          duration: 60s\n      - if: always()\n        run: echo cleanup-ran\n")})
	waitFor(t, "load reaching the target", 30*time.Second, func() bool { return tg.n.Load() > 100 })
	cancelAt := time.Now()
	f.Cancel(id)
	v := waitDone(t, f, id, d)
	// About a second: the 1 s report interval notices the cancel. 5 s
	// leaves room for a 2-core machine at a load average of 20; a load that
	// ran on for its 60 s fails it.
	if lag := time.Unix(0, tg.last.Load()).Sub(cancelAt); lag > 5*time.Second {
		t.Fatalf("requests went on %s after cancel, want about 1 s (5 s allowed)", lag)
	}
	log := strings.Join(v.Log, "\n")
	if v.Result != runnerv1.Result_RESULT_CANCELLED || !strings.Contains(log, "cleanup-ran") {
		t.Fatalf("cancelled job: %v\n%s", v.Result, log)
	}
	// The forge takes no upload from a cancelled task: said once, plainly.
	if strings.Count(log, "the forge accepts no upload from a cancelling task") != 1 || strings.Contains(log, "::error::forgeload/load: the report was not uploaded") {
		t.Errorf("cancelled job's log does not say once, without ::error::, that the report could not be uploaded:\n%s", log)
	}
}

// TestE2EForgeOutageLosesNothing refuses every connection to the forge for
// 10 s while the daemon runs a job that logs steadily: the forge must end
// with exactly the rows the job produced, in order, and a SUCCESS.
func TestE2EForgeOutageLosesNothing(t *testing.T) {
	parallelLong(t, 18)
	if testing.Short() {
		t.Skip("a 10 s outage")
	}
	f := forgetest.New(t, forgetest.WithRegistrationToken("reg-token"))
	n := newNode(t, "")
	registered(t, f, n, "e2e-outage")
	d := n.startDaemon()
	const lines = 300
	id := f.QueueJob(forgetest.Job{RunsOn: []string{"forgeload"}, Payload: []byte(fmt.Sprintf(
		"on: push\njobs:\n  a:\n    runs-on: forgeload\n    steps:\n      - run: for i in $(seq 1 %d); do echo \"row-$i\"; sleep 0.05; done\n", lines))})
	waitFor(t, "the first rows", 30*time.Second, func() bool {
		return strings.Contains(strings.Join(f.Task(id).Log, "\n"), "row-20\n")
	})
	f.Down()
	<-time.After(10 * time.Second) // the outage's length is what is under test, not a wait for an event
	f.Up()
	v := waitDone(t, f, id, d)
	if v.Result != runnerv1.Result_RESULT_SUCCESS {
		t.Fatalf("result %v after the outage", v.Result)
	}
	var rows []string
	for _, r := range v.Log {
		if strings.HasPrefix(r, "row-") {
			rows = append(rows, r)
		}
	}
	if len(rows) != lines {
		t.Fatalf("the forge has %d row lines, want %d", len(rows), lines)
	}
	for i, r := range rows {
		if want := fmt.Sprintf("row-%d", i+1); r != want {
			t.Fatalf("row %d = %q, want %q (gap, duplicate or reorder)", i, r, want)
		}
	}
}

// TestE2EPolicyAndSecretsThroughDaemon: a target the runner's config
// denies receives nothing and fails the step with the rule; a secret the
// job prints in two halves never reaches the forge.
func TestE2EPolicyAndSecretsThroughDaemon(t *testing.T) {
	parallel(t)
	l, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("no 127.0.0.2 here: %v", err)
	}
	var hits atomic.Int64
	denied := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	denied.Listener = l
	denied.Start()
	defer denied.Close()

	f := forgetest.New(t, forgetest.WithRegistrationToken("reg-token"))
	n := newNode(t, "load:\n  deny_targets: [127.0.0.2/32]\n")
	registered(t, f, n, "e2e-policy")
	d := n.startDaemon()
	id := f.QueueJob(forgetest.Job{
		RunsOn:  []string{"forgeload"},
		Secrets: map[string]string{"API_KEY": "sup3r-s3cret-v4lue"},
		Payload: []byte("on: push\njobs:\n  a:\n    runs-on: forgeload\n    steps:\n      - run: |\n          printf 'key=sup3r-s3c'\n          sleep 0.3\n          printf 'ret-v4lue\\n'\n      - uses: forgeload/load@v1\n        with:\n          target: " + denied.URL + "/\n          rate: 10\n          duration: 1s\n"),
	})
	v := waitDone(t, f, id, d)
	log := strings.Join(v.Log, "\n")
	if strings.Contains(log, "sup3r-s3cret-v4lue") {
		t.Fatalf("the secret reached the forge:\n%s", log)
	}
	if !strings.Contains(log, "key=***") {
		t.Fatalf("the masked line is missing:\n%s", log)
	}
	if v.Result != runnerv1.Result_RESULT_FAILURE || !strings.Contains(log, `denied by load.deny_targets rule "127.0.0.2/32"`) {
		t.Fatalf("denied target: result %v\n%s", v.Result, log)
	}
	if hits.Load() != 0 {
		t.Fatalf("the denied target saw %d requests", hits.Load())
	}
}

// TestE2EPolicyHolesThroughDaemon: the spellings that used to reach a denied
// loopback service or the forge itself (the unspecified address, which Linux
// connects to this host; numeric IPv4 forms the resolver would have taken as
// names) are refused before anything is sent, each with its reason.
func TestE2EPolicyHolesThroughDaemon(t *testing.T) {
	parallel(t)
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	defer srv.Close()
	_, port, err := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}

	f := forgetest.New(t, forgetest.WithRegistrationToken("reg-token"))
	_, forgePort, err := net.SplitHostPort(strings.TrimPrefix(f.URL(), "http://"))
	if err != nil {
		t.Fatal(err)
	}
	n := newNode(t, "load:\n  deny_targets: [127.0.0.1/32]\n")
	registered(t, f, n, "e2e-holes")
	d := n.startDaemon()

	cases := []struct{ target, want string }{
		{"http://0.0.0.0:" + port + "/", "which no setting lifts: unspecified"},
		{"http://[::]:" + port + "/", "which no setting lifts: unspecified"},
		{"http://[::ffff:0.0.0.0]:" + port + "/", "which no setting lifts: unspecified"},
		{"http://0.0.0.0:" + forgePort + "/", "which no setting lifts"},
		{"http://0x7f000001:" + port + "/", "is an IP address written as a number"},
		{"http://2130706433:" + port + "/", "is an IP address written as a number"},
		{"http://127.1:" + port + "/", "is an IP address written as a number"},
	}
	var steps strings.Builder
	for _, c := range cases {
		fmt.Fprintf(&steps, "      - uses: forgeload/load@v1\n        continue-on-error: true\n        with:\n          target: %s\n          rate: 10\n          duration: 1s\n", c.target)
	}
	id := f.QueueJob(forgetest.Job{
		RunsOn:  []string{"forgeload"},
		Payload: []byte("on: push\njobs:\n  a:\n    runs-on: forgeload\n    steps:\n" + steps.String()),
	})
	v := waitDone(t, f, id, d)
	log := strings.Join(v.Log, "\n")
	for _, c := range cases {
		found := false
		for _, line := range v.Log {
			if strings.Contains(line, c.want) && strings.Contains(line, strings.TrimSuffix(strings.TrimPrefix(c.target, "http://"), "/")) {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("target %s: no log line with %q and the target:\n%s", c.target, c.want, log)
		}
	}
	if hits.Load() != 0 {
		t.Fatalf("the denied loopback service saw %d requests", hits.Load())
	}
}

// TestE2EReportIntervalGovernsLogUploads: with runner.report_interval 2s,
// a step that logs a row every 0.1 s for about 8 s is uploaded about once
// per 2 s, not once per second: between the forge first holding a row of
// the step and holding its last row (no step change in between), the
// UpdateLog calls number at most elapsed/2s + 1 (the call that brought the
// first row is not counted; one more for a timer phase that splits the
// window), and at least 2, so the step's rows did go out while it ran. The
// step sleeps 4 s after its last row so that its end's UpdateLog, sent at
// once, falls after the window. At one call per second the count is ~6.
func TestE2EReportIntervalGovernsLogUploads(t *testing.T) {
	parallelLong(t, 12)
	f := forgetest.New(t, forgetest.WithRegistrationToken("reg-token"))
	n := newNode(t, "  report_interval: 2s\n")
	registered(t, f, n, "e2e-report-interval")
	d := n.startDaemon()
	id := f.QueueJob(forgetest.Job{RunsOn: []string{"forgeload"}, Payload: []byte(
		"on: push\njobs:\n  a:\n    runs-on: forgeload\n    steps:\n      - run: |\n          end=$(($(date +%s) + 8))\n          while [ $(date +%s) -lt $end ]; do echo tick; sleep 0.1; done\n          echo last-tick\n          sleep 4\n")})
	has := func(row string) func() bool {
		return func() bool { return slices.Contains(f.Task(id).Log, row) }
	}
	waitFor(t, "the step's first row on the forge", 30*time.Second, has("tick"))
	c0, t0 := f.Calls("UpdateLog"), time.Now()
	waitFor(t, "the step's last row on the forge", 60*time.Second, has("last-tick"))
	c1, elapsed := f.Calls("UpdateLog"), time.Since(t0)
	if v := waitDone(t, f, id, d); v.Result != runnerv1.Result_RESULT_SUCCESS {
		t.Fatalf("job %v:\n%s", v.Result, strings.Join(v.Log, "\n"))
	}
	calls := c1 - c0
	most := int64(elapsed/(2*time.Second)) + 1
	if calls > most || calls < 2 {
		t.Fatalf("%d UpdateLog calls in %s of steady logging with report_interval 2s; want 2 to %d (one per 2 s)", calls, elapsed.Round(time.Millisecond), most)
	}
	t.Logf("%d UpdateLog calls in %s", calls, elapsed.Round(time.Millisecond))
}

// TestE2EJobEndAbortsNoReportCall: a forge slow to answer report calls (2 s
// each, longer than the 1 s report interval, so the heartbeat and the log
// upload are both in flight when the job's last step ends) must see none of
// them abandoned at a normal job end: Gitea logs an aborted call as
// "context canceled" and may drop the work it started for it.
func TestE2EJobEndAbortsNoReportCall(t *testing.T) {
	parallel(t)
	f := forgetest.New(t, forgetest.WithRegistrationToken("reg-token"))
	n := newNode(t, "")
	registered(t, f, n, "e2e-no-abort")
	slowReports(f, 2*time.Second)
	d := n.startDaemon()
	id := f.QueueJob(forgetest.Job{RunsOn: []string{"forgeload"}, Payload: []byte(
		"on: push\njobs:\n  a:\n    runs-on: forgeload\n    steps:\n      - run: echo first; sleep 1; echo second\n      - run: echo third\n")})
	v := waitDone(t, f, id, d)
	if v.Result != runnerv1.Result_RESULT_SUCCESS || !slices.Contains(v.Log, "third") {
		t.Fatalf("job %v:\n%s", v.Result, strings.Join(v.Log, "\n"))
	}
	waitFor(t, "the task's end in the daemon log", 20*time.Second, func() bool { return strings.Contains(d.out.String(), "task finished") })
	for _, m := range []string{"UpdateTask", "UpdateLog"} {
		if c := f.Cancelled(m); c != 0 {
			t.Errorf("the forge saw %d of %d %s calls abandoned by the runner, want none; daemon output:\n%s", c, f.Calls(m), m, d.out.String())
		}
	}
}

// slowReports makes f wait latency before it answers each UpdateTask and
// UpdateLog, as a busy Gitea does (commit statuses, webhooks).
func slowReports(f *forgetest.Forge, latency time.Duration) {
	for _, m := range []string{"UpdateTask", "UpdateLog"} {
		f.SetFault(m, forgetest.Fault{Latency: latency})
	}
}
