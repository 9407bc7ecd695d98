package cmd

import (
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	runnerv1 "gitea.dev/actions-proto-go/runner/v1"

	"github.com/forgeload/forgeload/internal/pkg/forgetest"
)

// TestE2EMetrics scrapes a real daemon after it ran a load job: the poll,
// job, report and load metrics must show what happened (the load series
// under the workflow job, step and endpoint), and /healthz and /readyz
// must answer.
func TestE2EMetrics(t *testing.T) {
	parallel(t)
	tg := newTarget(t)
	f := forgetest.New(t, forgetest.WithRegistrationToken("reg-token"))
	n := newNode(t, "metrics:\n  enabled: true\n  addr: 127.0.0.1:0\n")
	registered(t, f, n, "e2e-metrics")
	// Gitea can take a while over a report call (commit statuses, webhooks);
	// a job end must abort none.
	slowReports(f, 100*time.Millisecond)
	d := n.startDaemon()
	base := metricsBase(t, d)
	// Workers to spare and a graceful_shutdown: on a loaded machine no
	// arrival waits past the end and is dropped, so the counts are exact.
	id := f.QueueJob(forgetest.Job{RunsOn: []string{"forgeload"}, Payload: []byte("on: push\njobs:\n  perf:\n    runs-on: forgeload\n    steps:\n      - name: Smoke test\n        uses: forgeload/load@v1\n        with:\n          target: " + tg.URL + "/\n          rate: 100\n          duration: 2s\n          concurrency: 20\n          graceful_shutdown: 30s\n          validity: warn\n")})
	if v := waitDone(t, f, id, d); v.Result != runnerv1.Result_RESULT_SUCCESS {
		t.Fatalf("job %v:\n%s", v.Result, strings.Join(v.Log, "\n"))
	}
	get := func(path string) (int, string) { return httpGet(t, base+path) }
	if code, _ := get("/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz = %d", code)
	}
	if code, body := get("/readyz"); code != http.StatusOK {
		t.Fatalf("/readyz = %d %s", code, body)
	}
	// The forge sees the final report a moment before the daemon counts
	// the job and frees its slot, so wait for both rather than racing them.
	var body string
	waitFor(t, "the finished job in /metrics", 30*time.Second, func() bool {
		_, body = get("/metrics")
		return strings.Contains(body, `forgeload_job_total{status="success"} 1`) && strings.Contains(body, "forgeload_job_running 0")
	})
	for _, want := range []string{
		`forgeload_job_total{status="success"} 1`,
		`forgeload_load_requests_total{endpoint="GET /",protocol="http",result="ok",step="Smoke test",workflow_job="perf"} 200`,
		`forgeload_load_request_duration_seconds_count{endpoint="GET /",step="Smoke test",workflow_job="perf"} 200`,
		`forgeload_load_inflight{step="Smoke test",workflow_job="perf"} 0`,
		`forgeload_load_dropped_total{step="Smoke test",workflow_job="perf"} 0`,
		`forgeload_capacity 1`,
		`forgeload_job_capacity_utilization_ratio 0`,
		`forgeload_state{state="idle"} 1`,
		`forgeload_job_running 0`,
		`forgeload_load_target_rate{step="Smoke test",workflow_job="perf"} 0`,
		`forgeload_report_log_buffer_rows 0`,
		`forgeload_info{name="e2e-metrics",version="dev"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	// A healthy forge: no client error at all (a job end used to abort
	// its heartbeat, counted as one error per job).
	if m := regexp.MustCompile(`forgeload_client_errors_total\{[^}]*\} [1-9][0-9]*`).FindString(body); m != "" {
		t.Errorf("/metrics counts client errors on a healthy forge: %s", m)
	}
	if !regexp.MustCompile(`forgeload_poll_fetch_total\{result="task"\} [1-9]`).MatchString(body) {
		t.Error("/metrics shows no fetched task")
	}
	// Every report call is timed, and each took at least the forge's
	// 100 ms latency.
	for _, rpc := range []string{"log", "state"} {
		calls := metricSum(body, "forgeload_report_"+rpc+"_total")
		count := metricSum(body, "forgeload_report_"+rpc+"_duration_seconds_count")
		sum := metricSum(body, "forgeload_report_"+rpc+"_duration_seconds_sum")
		if calls == 0 || count != calls || sum < 0.1*count {
			t.Errorf("report_%s: %v calls, duration histogram count %v sum %vs; want the count equal to the calls and at least 0.1 s each", rpc, calls, count, sum)
		}
	}
	for _, m := range []string{"UpdateTask", "UpdateLog"} {
		if n := f.Cancelled(m); n != 0 {
			t.Errorf("the forge saw %d aborted %s calls, want 0", n, m)
		}
	}
	if t.Failed() {
		t.Logf("/metrics:\n%s", body)
	}
}

// TestE2ELoadSeriesRetention: a real daemon with a short
// metrics.load_retention shows a load step's series under its workflow job
// and step while it runs, and deletes them once the step ended and the
// retention is over, while the daemon's other series stay.
func TestE2ELoadSeriesRetention(t *testing.T) {
	parallel(t)
	tg := newTarget(t)
	f := forgetest.New(t, forgetest.WithRegistrationToken("reg-token"))
	n := newNode(t, "metrics:\n  enabled: true\n  addr: 127.0.0.1:0\n  load_retention: 2s\n")
	registered(t, f, n, "e2e-load-retention")
	d := n.startDaemon()
	base := metricsBase(t, d)
	id := f.QueueJob(forgetest.Job{RunsOn: []string{"forgeload"}, Payload: []byte("on: push\njobs:\n  perf:\n    runs-on: forgeload\n    steps:\n      - id: soak\n        uses: forgeload/load@v1\n        with:\n          target: " + tg.URL + "/\n          rate: 20\n          duration: 3s\n          validity: warn\n")})
	const series = `forgeload_load_target_rate{step="soak",workflow_job="perf"}`
	waitFor(t, "the running step's series in /metrics", 60*time.Second, func() bool {
		_, body := httpGet(t, base+"/metrics")
		return strings.Contains(body, series)
	})
	if v := waitDone(t, f, id, d); v.Result != runnerv1.Result_RESULT_SUCCESS {
		t.Fatalf("job %v:\n%s", v.Result, strings.Join(v.Log, "\n"))
	}
	var body string
	waitFor(t, "the step's series to go after metrics.load_retention", 30*time.Second, func() bool {
		_, body = httpGet(t, base+"/metrics")
		return !strings.Contains(body, `workflow_job="perf"`)
	})
	if !strings.Contains(body, `forgeload_job_total{status="success"} 1`) {
		t.Errorf("/metrics lost the job's count with its load series:\n%s", body)
	}
}

// TestE2EMetricsBeforeForge: /metrics, /healthz and /readyz exist before
// the forge first answers; /readyz says 503 with the reason until it does.
// A taken metrics port fails start-up at once, even with the forge down.
func TestE2EMetricsBeforeForge(t *testing.T) {
	parallel(t)
	f := forgetest.New(t, forgetest.WithRegistrationToken("reg-token"))
	n := newNode(t, "metrics:\n  enabled: true\n  addr: 127.0.0.1:0\n")
	registered(t, f, n, "e2e-metrics-early")
	f.Down()
	d := n.startDaemon()
	base := metricsBase(t, d)
	if code, _ := httpGet(t, base+"/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz with the forge down = %d, want 200", code)
	}
	if code, body := httpGet(t, base+"/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "Declare") {
		t.Fatalf("/readyz with the forge down = %d %q, want 503 naming Declare", code, body)
	}
	if code, body := httpGet(t, base+"/metrics"); code != http.StatusOK || !strings.Contains(body, "forgeload_capacity 1") {
		t.Fatalf("/metrics with the forge down = %d, body:\n%s", code, body)
	}
	// metrics.jobs_page is off by default: no jobs page.
	if code, _ := httpGet(t, base+"/jobs"); code != http.StatusNotFound {
		t.Fatalf("/jobs without metrics.jobs_page = %d, want 404", code)
	}
	f.Up()
	waitFor(t, "/readyz to turn 200 once the forge answers", 30*time.Second, func() bool {
		code, _ := httpGet(t, base+"/readyz")
		return code == http.StatusOK
	})

	// A port in use fails start-up while the forge is still down.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	f2 := forgetest.New(t, forgetest.WithRegistrationToken("reg-token"))
	n2 := newNode(t, "metrics:\n  enabled: true\n  addr: "+ln.Addr().String()+"\n")
	registered(t, f2, n2, "e2e-metrics-busy")
	f2.Down()
	d2 := n2.startDaemon()
	if code := d2.wait(t, 20*time.Second); code == 0 || !strings.Contains(d2.out.String(), "metrics.addr") {
		t.Fatalf("daemon on a taken metrics port: exit %d, output:\n%s", code, d2.out.String())
	}
}

// TestE2EJobsPage: with metrics.jobs_page, the real daemon's /jobs lists a
// running load step, its live page's request count advances, nothing secret
// shows, and once the job ends it is gone.
func TestE2EJobsPage(t *testing.T) {
	parallel(t)
	tg := newTarget(t)
	f := forgetest.New(t, forgetest.WithRegistrationToken("reg-token"))
	n := newNode(t, "metrics:\n  enabled: true\n  addr: 127.0.0.1:0\n  jobs_page: true\n")
	registered(t, f, n, "e2e-jobs-page")
	d := n.startDaemon()
	base := metricsBase(t, d)
	if code, body := httpGet(t, base+"/jobs"); code != http.StatusOK || !strings.Contains(body, `id="none"`) {
		t.Fatalf("/jobs with nothing running = %d:\n%s", code, body)
	}
	const secret = "s3cr3t-jobs-page-key"
	id := f.QueueJob(forgetest.Job{
		RunsOn:  []string{"forgeload"},
		Secrets: map[string]string{"API_KEY": secret},
		// Long enough to be watched; the test cancels it.
		Payload: []byte("on: push\njobs:\n  perf:\n    runs-on: forgeload\n    steps:\n      - id: soak\n        uses: forgeload/load@v1\n        with:\n          target: " + tg.URL + "/?key=${{ secrets.API_KEY }}\n          rate: 20\n          duration: 5m\n"),
	})

	var list string
	waitFor(t, "the load step on /jobs", 60*time.Second, func() bool {
		_, list = httpGet(t, base+"/jobs")
		return strings.Contains(list, `class="step">soak<`)
	})
	link := regexp.MustCompile(`href="(jobs/[0-9]+/)"`).FindStringSubmatch(list)
	if link == nil || !strings.Contains(list, `class="job">perf<`) {
		t.Fatalf("/jobs lacks the job or its link:\n%s", list)
	}
	page := base + "/" + link[1]
	requests := regexp.MustCompile(`data-k="requests" data-v="([0-9]+)"`)
	count := func() (int, string) {
		code, body := httpGet(t, page)
		if code != http.StatusOK {
			t.Fatalf("%s = %d", page, code)
		}
		if strings.Contains(body, secret) {
			t.Fatalf("%s shows the secret", page)
		}
		m := requests.FindStringSubmatch(body)
		if m == nil {
			return 0, body
		}
		v, _ := strconv.Atoi(m[1])
		return v, body
	}
	first := 0
	waitFor(t, "requests on the live page", 60*time.Second, func() bool { first, _ = count(); return first > 0 })
	waitFor(t, "the live request count to advance", 60*time.Second, func() bool { v, _ := count(); return v > first })

	f.Cancel(id)
	if v := waitDone(t, f, id, d); v.Result != runnerv1.Result_RESULT_CANCELLED {
		t.Fatalf("job %v, want cancelled:\n%s", v.Result, strings.Join(v.Log, "\n"))
	}
	waitFor(t, "the ended step to leave /jobs", 30*time.Second, func() bool {
		_, list = httpGet(t, base+"/jobs")
		return strings.Contains(list, `id="none"`)
	})
	if code, _ := httpGet(t, page); code != http.StatusNotFound {
		t.Errorf("%s after the job = %d, want 404", page, code)
	}
}

// metricsBase waits for the daemon to log its metrics address and returns
// it as http://host:port.
func metricsBase(t *testing.T, d *daemon) string {
	t.Helper()
	var base string
	addrRE := regexp.MustCompile(`serving metrics on (http://[0-9.:]+)/metrics`)
	waitFor(t, "the metrics address in the log", 20*time.Second, func() bool {
		m := addrRE.FindStringSubmatch(d.out.String())
		if m != nil {
			base = m[1]
		}
		return m != nil
	})
	return base
}

// metricSum adds up the values of every sample of metric name (all label
// sets) in a Prometheus text body.
func metricSum(body, name string) float64 {
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `(?:\{[^}]*\})? (\S+)$`)
	var sum float64
	for _, m := range re.FindAllStringSubmatch(body, -1) {
		v, err := strconv.ParseFloat(m[1], 64)
		if err == nil {
			sum += v
		}
	}
	return sum
}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
