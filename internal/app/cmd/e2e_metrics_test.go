package cmd

import (
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	runnerv1 "gitea.dev/actions-proto-go/runner/v1"

	"github.com/forgeload/forgeload/internal/pkg/forgetest"
)

// TestE2EMetrics scrapes a real daemon after it ran a load job: the poll,
// job, report and load metrics must show what happened, and /healthz and
// /readyz must answer.
func TestE2EMetrics(t *testing.T) {
	t.Parallel()
	tg := newTarget(t)
	f := forgetest.New(t, forgetest.WithRegistrationToken("reg-token"))
	n := newNode(t, "metrics:\n  enabled: true\n  addr: 127.0.0.1:0\n")
	registered(t, f, n, "e2e-metrics")
	d := n.startDaemon()
	var base string
	addrRE := regexp.MustCompile(`serving metrics on (http://[0-9.:]+)/metrics`)
	waitFor(t, "the metrics address in the log", 20*time.Second, func() bool {
		m := addrRE.FindStringSubmatch(d.out.String())
		if m != nil {
			base = m[1]
		}
		return m != nil
	})
	id := f.QueueJob(forgetest.Job{RunsOn: []string{"forgeload"}, Payload: []byte("on: push\njobs:\n  perf:\n    runs-on: forgeload\n    steps:\n      - uses: forgeload/load@v1\n        with:\n          target: " + tg.URL + "/\n          rate: 100\n          duration: 2s\n")})
	if v := waitDone(t, f, id, d); v.Result != runnerv1.Result_RESULT_SUCCESS {
		t.Fatalf("job %v:\n%s", v.Result, strings.Join(v.Log, "\n"))
	}
	get := func(path string) (int, string) {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := get("/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz = %d", code)
	}
	if code, body := get("/readyz"); code != http.StatusOK {
		t.Fatalf("/readyz = %d %s", code, body)
	}
	// The forge sees the final report a moment before the daemon counts
	// the job and frees its slot, so wait for both rather than racing them.
	var body string
	waitFor(t, "the finished job in /metrics", 10*time.Second, func() bool {
		_, body = get("/metrics")
		return strings.Contains(body, `forgeload_job_total{result="success"} 1`) && strings.Contains(body, "forgeload_job_running 0")
	})
	for _, want := range []string{
		`forgeload_job_total{result="success"} 1`,
		`forgeload_load_requests_total{protocol="http",result="ok"} 200`,
		`forgeload_load_request_duration_seconds_count 200`,
		`forgeload_capacity 1`,
		`forgeload_job_running 0`,
		`forgeload_load_target_rate 0`,
		`forgeload_report_log_buffer_rows 0`,
		`forgeload_info{name="e2e-metrics",version="dev"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if !regexp.MustCompile(`forgeload_poll_fetch_total\{result="task"\} [1-9]`).MatchString(body) {
		t.Error("/metrics shows no fetched task")
	}
	if t.Failed() {
		t.Logf("/metrics:\n%s", body)
	}
}
