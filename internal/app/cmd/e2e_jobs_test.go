package cmd

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
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
	t.Parallel()
	tg := newTarget(t)
	f := forgetest.New(t, forgetest.WithRegistrationToken("reg-token"))
	if _, err := f.AddRepo("team/api", map[string]string{
		"perf/api.yaml": "target: " + tg.URL + "/items\nrate: 100\nduration: 2s\nconcurrency: 8\nthresholds:\n  - \"http_req_failed:rate < 1%\"\n",
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
		{"jobs: [broken", "parse workflow"},
		{"on: push\njobs:\n  a:\n    runs-on: forgeload\n    steps: [{run: echo}]\n  b:\n    runs-on: forgeload\n    steps: [{run: echo}]\n", "exactly one"},
		{"on: push\njobs:\n  a:\n    runs-on: forgeload\n    steps:\n      - uses: actions/setup-go@v5\n", "forgeload runs run: steps, uses: actions/checkout@<ref> and uses: forgeload/load@<ref>"},
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
            http_req_duration:p99 < 2s
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
// runs a load step: the target stops seeing requests within 2 s, always()
// steps run, and the task ends CANCELLED.
func TestE2ECancelMidLoad(t *testing.T) {
	t.Parallel()
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
	if lag := time.Unix(0, tg.last.Load()).Sub(cancelAt); lag > 2*time.Second {
		t.Fatalf("requests went on %s after cancel, want < 2s", lag)
	}
	if v.Result != runnerv1.Result_RESULT_CANCELLED || !strings.Contains(strings.Join(v.Log, "\n"), "cleanup-ran") {
		t.Fatalf("cancelled job: %v\n%s", v.Result, strings.Join(v.Log, "\n"))
	}
}

// TestE2EForgeOutageLosesNothing refuses every connection to the forge for
// 10 s while the daemon runs a job that logs steadily: the forge must end
// with exactly the rows the job produced, in order, and a SUCCESS.
func TestE2EForgeOutageLosesNothing(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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
