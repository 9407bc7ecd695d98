package cmd

import (
	"bufio"
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	runnerv1 "gitea.dev/actions-proto-go/runner/v1"

	"github.com/forgeload/forgeload/internal/pkg/forgetest"
)

// TestE2EJobsPageMasksSecrets: a job's secret in an endpoint name (which
// is also the config key endpoints[<name>]) and in a header name never
// shows on the daemon's /jobs list, the step's live page or its event
// stream; the mask does. The secret holds a '+', which html/template
// writes as &#43;.
func TestE2EJobsPageMasksSecrets(t *testing.T) {
	parallel(t)
	tg := newTarget(t)
	f := forgetest.New(t, forgetest.WithRegistrationToken("reg-token"))
	n := newNode(t, "metrics:\n  enabled: true\n  addr: 127.0.0.1:0\n  jobs_page: true\n")
	registered(t, f, n, "e2e-jobs-mask")
	d := n.startDaemon()
	base := metricsBase(t, d)
	const secret = "ep+S3cr3t-Name"
	id := f.QueueJob(forgetest.Job{
		RunsOn:  []string{"forgeload"},
		Secrets: map[string]string{"EP": secret},
		Payload: []byte("on: push\njobs:\n  perf:\n    runs-on: forgeload\n    steps:\n      - id: soak\n        uses: forgeload/load@v1\n        with:\n" +
			"          endpoints: '[{name: \"${{ secrets.EP }}\", url: \"" + tg.URL + "/a\", headers: {\"X-${{ secrets.EP }}\": \"v\"}}]'\n" +
			"          rate: 20\n          duration: 5m\n"),
	})
	leaks := func(what, body string) {
		t.Helper()
		// Any case: header names are canonicalised (X-Ep+s3cr3t-Name).
		for _, form := range []string{secret, strings.ReplaceAll(secret, "+", "&#43;"), "s3cr3t"} {
			if strings.Contains(strings.ToLower(body), strings.ToLower(form)) {
				t.Fatalf("%s shows the secret (as %q):\n%s", what, form, body)
			}
		}
	}
	var list string
	waitFor(t, "the load step on /jobs", 60*time.Second, func() bool {
		_, list = httpGet(t, base+"/jobs")
		return strings.Contains(list, `class="step">soak<`)
	})
	leaks("/jobs", list)
	link := regexp.MustCompile(`href="(jobs/[0-9]+/)"`).FindStringSubmatch(list)
	if link == nil {
		t.Fatalf("/jobs lacks the step's link:\n%s", list)
	}
	page := base + "/" + link[1]
	var body string
	waitFor(t, "the endpoint's row on the live page", 60*time.Second, func() bool {
		_, body = httpGet(t, page)
		return strings.Contains(body, `class="endpoint"`)
	})
	leaks(page, body)
	if !strings.Contains(body, "endpoints[***]") || !strings.Contains(body, `<td class="name">***</td>`) {
		t.Errorf("%s lacks the masked config key and endpoint name:\n%s", page, body)
	}
	leaks(page+"events", firstEvent(t, page+"events", `class="endpoint"`))

	f.Cancel(id)
	if v := waitDone(t, f, id, d); v.Result != runnerv1.Result_RESULT_CANCELLED {
		t.Fatalf("job %v, want cancelled:\n%s", v.Result, strings.Join(v.Log, "\n"))
	}
}

// firstEvent reads the event stream at url until an update holds want and
// returns that update.
func firstEvent(t *testing.T, url, want string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 16<<20)
	var ev strings.Builder
	for sc.Scan() {
		if sc.Text() != "" {
			ev.WriteString(sc.Text() + "\n")
			continue
		}
		if strings.Contains(ev.String(), want) {
			return ev.String()
		}
		ev.Reset()
	}
	t.Fatalf("%s: no update holding %q before the stream ended: %v", url, want, sc.Err())
	return ""
}

// TestE2EClusterCoordinatorLogMasksSecrets: a distributed run that fails
// because a worker's policy refuses its target, whose path holds a job
// secret: the coordinating daemon's own log says the run failed, with the
// worker's error, and never the secret; the job's log masks it too.
func TestE2EClusterCoordinatorLogMasksSecrets(t *testing.T) {
	parallelLong(t, 8)
	rg := newClusterRig(t, "", map[string]string{"w3": "  allow_targets: [\"10.0.0.0/8\"]\n"})
	const secret = "c00rd-S3cret-path"
	payload := "on: push\njobs:\n  perf:\n    runs-on: coord\n    steps:\n      - id: api\n        uses: forgeload/load@v1\n        with:\n" +
		"          target: " + rg.tg.URL + "/${{ secrets.P }}\n          rate: 30\n          duration: 2s\n          validity: warn\n          distributed: '{workers: 3, join_timeout: 10s}'\n"
	id := rg.f.QueueJob(forgetest.Job{RunsOn: []string{"coord"}, Secrets: map[string]string{"P": secret}, Payload: []byte(payload)})
	v := rg.waitDone(t, id)
	log := strings.Join(v.Log, "\n")
	if v.Result != runnerv1.Result_RESULT_FAILURE || !strings.Contains(log, "worker w3 could not run segment") {
		t.Fatalf("job result %v, want failure naming w3's refusal:\n%s\n%s", v.Result, log, rg.logs())
	}
	coord := rg.d["w1"].out.String()
	if !strings.Contains(coord, "distributed load test failed") {
		t.Fatalf("w1's log lacks the failed run:\n%s", coord)
	}
	if strings.Contains(coord, "S3cret") || strings.Contains(log, "S3cret") {
		t.Errorf("the secret is in w1's log or the job's:\n--- w1 ---\n%s\n--- job ---\n%s", coord, log)
	}
	if !strings.Contains(coord, "/***") {
		t.Errorf("w1's log does not show the masked target path:\n%s", coord)
	}
}
