package run

import (
	"context"
	"github.com/forgeload/forgeload/internal/pkg/jobrun"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	runnerv1 "gitea.dev/actions-proto-go/runner/v1"

	"github.com/forgeload/forgeload/internal/pkg/dnstest"
	"github.com/forgeload/forgeload/internal/pkg/forgetest"
	"github.com/forgeload/forgeload/internal/pkg/load/build"
	"github.com/forgeload/forgeload/internal/pkg/load/loadtarget"
	"github.com/forgeload/forgeload/internal/pkg/load/loadtarget/grpctarget"
	"github.com/forgeload/forgeload/internal/pkg/policy"
)

// countingServer is a local load target that counts the requests it sees
// and remembers when it saw the last one.
type countingServer struct {
	*httptest.Server
	n    atomic.Int64
	last atomic.Int64 // unix nanos of the last request
}

func newCountingServer(t *testing.T, listen string, delay time.Duration) *countingServer {
	t.Helper()
	cs := &countingServer{}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cs.n.Add(1)
		cs.last.Store(time.Now().UnixNano())
		if delay > 0 {
			time.Sleep(delay) // the target's simulated service time
		}
		w.Write([]byte("ok\n"))
	})
	srv := httptest.NewUnstartedServer(h)
	if listen != "" {
		l, err := net.Listen("tcp", listen)
		if err != nil {
			t.Skipf("cannot listen on %s: %v", listen, err)
		}
		srv.Listener = l
	}
	srv.Start()
	t.Cleanup(srv.Close)
	cs.Server = srv
	return cs
}

// TestLoadStepSuccessOutputsAndSummary: a passing load step's outputs,
// summary and progress. Its p99 gate is 30s, not a target's real one: on a
// 2-core machine at a load average of 20 a 1 s gate failed, measuring the
// machine (a failing gate is TestLoadStepFailedThresholdFailsStep's, with a
// target slower than its gate by construction); and a graceful_shutdown
// with workers to spare sends, not drops, what a loaded machine left
// waiting at the end, so the count is exact; for the same reason its
// validity only warns (a starved generator is rightly INVALID).
func TestLoadStepSuccessOutputsAndSummary(t *testing.T) {
	t.Parallel()
	target := newCountingServer(t, "", 0)
	h := newHarness(t)
	v := h.run(`
on: push
jobs:
  perf:
    runs-on: forgeload
    outputs:
      p99: ${{ steps.api.outputs.p99_ms }}
    steps:
      - id: api
        uses: forgeload/load@v1
        with:
          target: `+target.URL+`/hello
          rate: 200
          duration: 2s
          concurrency: 50
          graceful_shutdown: 30s
          validity: warn
          thresholds: |
            http_req_duration:p99 < 30s
            http_req_failed:rate < 1%
      - run: echo "requests=${{ steps.api.outputs.requests }} passed=${{ steps.api.outputs.thresholds_passed }} rps=${{ steps.api.outputs.rps }}"
`, Options{Config: jobrun.Config{ProgressInterval: 500 * time.Millisecond, Capabilities: "job-summary"}})
	log := logText(v)
	if v.Result != runnerv1.Result_RESULT_SUCCESS {
		t.Fatalf("result %v; log:\n%s", v.Result, log)
	}
	if got := target.n.Load(); got != 400 {
		t.Fatalf("target saw %d requests, want exactly 400 (200/s for 2s)", got)
	}
	steplog := strings.Join(stepLog(t, v, 0), "\n")
	wantContains(t, "load step log", steplog, "load test: GET "+target.URL+"/hello, 200 req/s")
	if n := strings.Count(steplog, "req/s"); n < 3 {
		t.Fatalf("load step log has %d progress/summary lines with req/s, want progress lines; log:\n%s", n, steplog)
	}
	wantContains(t, "load step log", steplog, "http_req_duration:p99 < 30s")
	wantContains(t, "log", log, "requests=400 passed=true")
	if v.Outputs["p99"] == "" {
		t.Fatalf("job output p99 missing: %v", v.Outputs)
	}
	if _, err := strconv.ParseFloat(v.Outputs["p99"], 64); err != nil {
		t.Fatalf("p99 output %q is not a number", v.Outputs["p99"])
	}
	if s := h.forge.Summaries(); len(s) == 0 {
		t.Fatal("no job summary uploaded")
	}
}

func TestLoadStepConfigFileAndInlineOverride(t *testing.T) {
	t.Parallel()
	target := newCountingServer(t, "", 0)
	h := newHarness(t)
	// The config file sits in the workspace; a run: step writes it there,
	// as a checkout would. Its graceful_shutdown lets the four workers send
	// all 50 arrivals (due within 50 ms) on a loaded machine, not drop
	// those still waiting a second after the last.
	v := h.run(`
on: push
jobs:
  perf:
    runs-on: forgeload
    steps:
      - run: |
          mkdir -p perf
          printf 'target: `+target.URL+`/\nrate: 1000\ntotal: 500\nconcurrency: 4\ngraceful_shutdown: 30s\n' > perf/api.yaml
      - uses: forgeload/load@v1
        with:
          config: perf/api.yaml
          total: 50
`, Options{})
	if v.Result != runnerv1.Result_RESULT_SUCCESS {
		t.Fatalf("result %v; log:\n%s", v.Result, logText(v))
	}
	if got := target.n.Load(); got != 50 {
		t.Fatalf("target saw %d requests, want 50 (the inline total wins)", got)
	}
}

func TestLoadStepFailedThresholdFailsStep(t *testing.T) {
	t.Parallel()
	target := newCountingServer(t, "", 30*time.Millisecond)
	h := newHarness(t)
	v := h.run(`
on: push
jobs:
  perf:
    runs-on: forgeload
    steps:
      - id: api
        uses: forgeload/load@v1
        with:
          target: `+target.URL+`/
          rate: 50
          duration: 1s
          concurrency: 10
          thresholds: http_req_duration:p99 < 1ms
      - if: always()
        run: echo "passed=${{ steps.api.outputs.thresholds_passed }}"
`, Options{})
	if v.Result != runnerv1.Result_RESULT_FAILURE {
		t.Fatalf("result %v, want FAILURE; log:\n%s", v.Result, logText(v))
	}
	if v.Steps[0].Result != runnerv1.Result_RESULT_FAILURE {
		t.Fatalf("load step result %v, want FAILURE", v.Steps[0].Result)
	}
	wantContains(t, "log", logText(v), "1 of 1 thresholds failed: http_req_duration:p99 < 1ms")
	wantContains(t, "log", logText(v), "passed=false")
}

func TestLoadStepBadInput(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	tests := []struct{ with, want string }{
		{"target: http://127.0.0.1:1/\n          rate: fast\n          duration: 1s", `rate: "fast" is not a number`},
		{"target: http://127.0.0.1:1/\n          rate: 10\n          duration: 1s\n          thresholds: http_req_duration:p99 <", "threshold"},
		{"target: http://127.0.0.1:1/\n          rate: 10\n          duration: 1s\n          colour: red", `"colour"`},
		{"config: missing.yaml", "missing.yaml"},
	}
	for _, tt := range tests {
		v := h.run("on: push\njobs:\n  perf:\n    runs-on: forgeload\n    steps:\n      - uses: forgeload/load@v1\n        with:\n          "+tt.with+"\n", Options{})
		if v.Result != runnerv1.Result_RESULT_FAILURE || !strings.Contains(logText(v), tt.want) {
			t.Errorf("with %q: result %v, log does not contain %q:\n%s", tt.with, v.Result, tt.want, logText(v))
		}
	}
}

func TestLoadStepLimits(t *testing.T) {
	t.Parallel()
	target := newCountingServer(t, "", 0)
	h := newHarness(t)
	v := h.run("on: push\njobs:\n  perf:\n    runs-on: forgeload\n    steps:\n      - uses: forgeload/load@v1\n        with:\n          target: "+target.URL+"/\n          rate: 5000\n          duration: 1s\n",
		Options{Config: jobrun.Config{Limits: planLimits(100)}})
	if v.Result != runnerv1.Result_RESULT_FAILURE {
		t.Fatalf("result %v, want FAILURE", v.Result)
	}
	wantContains(t, "log", logText(v), "load.max_rate")
	if got := target.n.Load(); got != 0 {
		t.Fatalf("target saw %d requests, want none", got)
	}
}

func TestLoadStepDeniedTarget(t *testing.T) {
	t.Parallel()
	denied := newCountingServer(t, "127.0.0.2:0", 0)
	h := newHarness(t)
	pol, err := policy.New(context.Background(), policy.Options{Deny: []string{"127.0.0.2/32"}})
	if err != nil {
		t.Fatal(err)
	}
	v := h.run("on: push\njobs:\n  perf:\n    runs-on: forgeload\n    steps:\n      - uses: forgeload/load@v1\n        with:\n          target: "+denied.URL+"/\n          rate: 10\n          duration: 1s\n",
		Options{Config: jobrun.Config{Policy: pol}})
	if v.Result != runnerv1.Result_RESULT_FAILURE {
		t.Fatalf("result %v, want FAILURE", v.Result)
	}
	wantContains(t, "log", logText(v), `is denied by load.deny_targets rule "127.0.0.2/32"`)
	if got := denied.n.Load(); got != 0 {
		t.Fatalf("the denied target saw %d requests", got)
	}
	// The forge's own address is denied by default.
	v = h.run("on: push\njobs:\n  perf:\n    runs-on: forgeload\n    steps:\n      - uses: forgeload/load@v1\n        with:\n          target: "+h.forge.URL()+"/api/actions\n          rate: 10\n          duration: 1s\n", Options{})
	wantContains(t, "log", logText(v), "the forge's own address")
}

// TestLoadStepDNSRebinding makes the target's name resolve to an allowed
// address for the pre-flight check and to a denied one afterwards: the
// step fails with the policy message and the denied address sees nothing.
func TestLoadStepDNSRebinding(t *testing.T) {
	t.Parallel()
	allowed := newCountingServer(t, "127.0.0.1:0", 0)
	_, port, _ := net.SplitHostPort(allowed.Listener.Addr().String())
	denied := newCountingServer(t, "127.0.0.2:"+port, 0)
	var lookups atomic.Int64
	dns := dnstest.Start(t, func(string) netip.Addr {
		if lookups.Add(1) == 1 {
			return netip.MustParseAddr("127.0.0.1")
		}
		return netip.MustParseAddr("127.0.0.2")
	})
	pol, err := policy.New(context.Background(), policy.Options{Deny: []string{"127.0.0.2/32"}, Resolver: dns.Resolver()})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t)
	v := h.run("on: push\njobs:\n  perf:\n    runs-on: forgeload\n    steps:\n      - uses: forgeload/load@v1\n        with:\n          target: http://rebind.test:"+port+"/\n          total: 20\n          concurrency: 2\n          timeout: 2s\n          thresholds: http_req_failed:rate < 1%\n",
		Options{Config: jobrun.Config{Policy: pol, Resolver: dns.Resolver()}})
	if got := denied.n.Load(); got != 0 {
		t.Fatalf("the denied address saw %d requests after the DNS answer changed", got)
	}
	if got := allowed.n.Load(); got != 0 {
		t.Fatalf("the allowed address saw %d requests; the dial should have used the new answer", got)
	}
	if lookups.Load() < 2 {
		t.Fatalf("%d DNS lookups: the dial did not resolve again", lookups.Load())
	}
	if v.Result != runnerv1.Result_RESULT_FAILURE {
		t.Fatalf("result %v, want FAILURE", v.Result)
	}
	wantContains(t, "log", logText(v), "denied by load.deny_targets")
}

func TestLoadStepCancelStopsLoadFast(t *testing.T) {
	t.Parallel()
	target := newCountingServer(t, "", 0)
	h := newHarness(t)
	task := h.fetch(forgetest.Job{Payload: []byte("on: push\njobs:\n  perf:\n    runs-on: forgeload\n    steps:\n      - uses: forgeload/load@v1\n        with:\n          target: " + target.URL + "/\n          rate: 100\n          duration: 60s\n      - if: always()\n        run: echo always-ran\n")})
	done := make(chan error, 1)
	go func() {
		done <- h.runner(Options{ReportInterval: time.Second}).Run(context.Background(), task)
	}()
	deadline := time.Now().Add(20 * time.Second)
	for target.n.Load() < 50 {
		if time.Now().After(deadline) {
			t.Fatal("load never reached the target")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancelAt := time.Now()
	h.forge.Cancel(task.GetId())
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	stopped := time.Unix(0, target.last.Load())
	// The cancel is seen within one report interval (1 s here) and the
	// load stops at once: about 1 s. The bound leaves room for a stall of
	// a loaded machine; a load that ignored the cancel would run its 60 s.
	if lag := stopped.Sub(cancelAt); lag > 5*time.Second {
		t.Fatalf("the target saw requests %s after the cancel, want < 5s", lag)
	} else {
		t.Logf("the load stopped %s after the cancel", lag.Round(time.Millisecond))
	}
	v := h.forge.Task(task.GetId())
	if v.Result != runnerv1.Result_RESULT_CANCELLED {
		t.Fatalf("result %v, want CANCELLED", v.Result)
	}
	wantContains(t, "log", logText(v), "always-ran")
}

func planLimits(maxRate float64) build.Limits { return build.Limits{MaxRate: maxRate} }

// TestLoadStepAuthTokenEndpointIsATarget: the auth block's token endpoint
// is checked by the target policy like the load targets, before anything
// is sent; and a run without an end fails on a runner without
// load.max_duration.
func TestLoadStepAuthTokenEndpointIsATarget(t *testing.T) {
	t.Parallel()
	target := newCountingServer(t, "", 0)
	idp := loadtarget.StartOAuth2(t, 60)
	tokenURL := strings.Replace(idp.URL, "127.0.0.1", "localhost", 1)
	h := newHarness(t)
	pol, err := policy.New(context.Background(), policy.Options{Deny: []string{"localhost"}})
	if err != nil {
		t.Fatal(err)
	}
	v := h.run("on: push\njobs:\n  perf:\n    runs-on: forgeload\n    steps:\n      - uses: forgeload/load@v1\n        with:\n          target: "+target.URL+"/\n          total: 3\n"+
		"          auth: '{type: oauth2_client_credentials, token_url: \""+tokenURL+"\", client_id: svc, client_secret: s3cret}'\n", Options{Config: jobrun.Config{Policy: pol}})
	if v.Result != runnerv1.Result_RESULT_FAILURE {
		t.Fatalf("result %v, want FAILURE", v.Result)
	}
	wantContains(t, "log", logText(v), "load.deny_targets")
	if target.n.Load() != 0 || len(idp.Grants()) != 0 {
		t.Errorf("target saw %d requests and the token endpoint %d: want none", target.n.Load(), len(idp.Grants()))
	}
	if strings.Contains(logText(v), "s3cret") {
		t.Errorf("the log holds the client secret:\n%s", logText(v))
	}

	v = h.run("on: push\njobs:\n  perf:\n    runs-on: forgeload\n    steps:\n      - uses: forgeload/load@v1\n        with:\n          target: "+target.URL+"/\n          rate: 10\n", Options{})
	if v.Result != runnerv1.Result_RESULT_FAILURE {
		t.Fatalf("a run without an end: result %v, want FAILURE", v.Result)
	}
	wantContains(t, "log", logText(v), "has no end")
	if target.n.Load() != 0 {
		t.Errorf("target saw %d requests, want none", target.n.Load())
	}
}

// TestLoadStepTracingEndpointPolicy: the tracing endpoint is a target
// under the policy: a denied one fails the step before any request, an
// allowed one gets the spans and the step log says how many.
func TestLoadStepTracingEndpointPolicy(t *testing.T) {
	t.Parallel()
	target := newCountingServer(t, "127.0.0.1:0", 0)
	otlp := grpctarget.StartOTLP(t)
	_, port, _ := net.SplitHostPort(otlp.HTTPAddr)
	h := newHarness(t)
	pol, err := policy.New(context.Background(), policy.Options{Deny: []string{"127.0.0.2/32"}})
	if err != nil {
		t.Fatal(err)
	}
	job := func(endpoint string) string {
		return "on: push\njobs:\n  perf:\n    runs-on: forgeload\n    steps:\n      - uses: forgeload/load@v1\n        with:\n          target: " + target.URL +
			"/\n          total: 10\n          tracing: '{endpoint: \"" + endpoint + "\", protocol: http, insecure: true}'\n"
	}
	v := h.run(job("127.0.0.2:"+port), Options{Config: jobrun.Config{Policy: pol}})
	if v.Result != runnerv1.Result_RESULT_FAILURE {
		t.Fatalf("result %v, want FAILURE:\n%s", v.Result, logText(v))
	}
	wantContains(t, "log", logText(v), `is denied by load.deny_targets rule "127.0.0.2/32"`)
	if got := target.n.Load(); got != 0 {
		t.Fatalf("the target saw %d requests, want none after the tracing endpoint was refused", got)
	}
	v = h.run(job(otlp.HTTPAddr), Options{Config: jobrun.Config{Policy: pol}})
	if v.Result != runnerv1.Result_RESULT_SUCCESS {
		t.Fatalf("result %v, want SUCCESS:\n%s", v.Result, logText(v))
	}
	wantContains(t, "log", logText(v), "tracing: exported 10 of 10 spans to http://"+otlp.HTTPAddr)
	if n := len(otlp.Spans()); n != 10 {
		t.Errorf("the OTLP receiver has %d spans, want 10", n)
	}
}

// TestLoadStepLogErrorsPolicy: log_errors in the step follows the one
// policy of `forgeload load` (package outcome): the first ten failures
// with their endpoint, status and class, a note, then at most one a
// second. The step used to log the first 100, without the endpoint.
func TestLoadStepLogErrorsPolicy(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
	}))
	t.Cleanup(srv.Close)
	h := newHarness(t)
	v := h.run(`
on: push
jobs:
  perf:
    runs-on: forgeload
    steps:
      - id: api
        uses: forgeload/load@v1
        with:
          target: `+srv.URL+`/
          total: 40
          concurrency: 4
          log_errors: true
`, Options{})
	log := logText(v)
	if v.Steps[0].Result != runnerv1.Result_RESULT_FAILURE {
		t.Fatalf("load step result %v, want FAILURE (nothing measured); log:\n%s", v.Steps[0].Result, log)
	}
	n := strings.Count(log, "request failed: endpoint ")
	// 40 requests take well under the second after which one more would be
	// logged; allow that one on a loaded machine.
	if n < 10 || n > 11 || !strings.Contains(log, "status 500") || !strings.Contains(log, "more requests failed") {
		t.Fatalf("%d failures logged, want the first 10 with endpoint and status, then a note; log:\n%s", n, log)
	}
}
