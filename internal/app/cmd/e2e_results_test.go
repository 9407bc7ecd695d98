package cmd

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	runnerv1 "gitea.dev/actions-proto-go/runner/v1"

	"github.com/forgeload/forgeload/internal/pkg/forgetest"
)

// TestE2ELoadStepUploadsArtifacts runs load jobs through the real daemon:
// the step uploads its HTML report and JSON result as one run artifact,
// whole and named after the step; a forge that refuses uploads fails only
// the upload, loudly, and the step keeps its measured result.
func TestE2ELoadStepUploadsArtifacts(t *testing.T) {
	parallel(t)
	tg := newTarget(t)
	f := forgetest.New(t, forgetest.WithRegistrationToken("reg-token"))
	n := newNode(t, "")
	registered(t, f, n, "e2e-artifacts")
	d := n.startDaemon()
	payload := []byte("on: push\njobs:\n  perf:\n    runs-on: forgeload\n    steps:\n      - id: api\n        uses: forgeload/load@v1\n        with:\n          target: " + tg.URL + "/\n          total: 20\n          thresholds: http_req_failed:rate < 1%\n")

	id := f.QueueJob(forgetest.Job{RunsOn: []string{"forgeload"}, Payload: payload})
	v := waitDone(t, f, id, d)
	log := strings.Join(v.Log, "\n")
	if v.Result != runnerv1.Result_RESULT_SUCCESS {
		t.Fatalf("job: %v\n%s", v.Result, log)
	}
	arts := f.Artifacts()
	if len(arts) != 1 || arts[0].Name != "forgeload-perf-api" || arts[0].TaskID != id || !arts[0].Confirmed || arts[0].Size != int64(len(arts[0].Data)) {
		t.Fatalf("artifacts = %+v, want forgeload-perf-api, whole and confirmed", arts)
	}
	if !strings.Contains(log, `uploaded as run artifact "forgeload-perf-api"`) {
		t.Errorf("log does not say where the report went:\n%s", log)
	}
	zr, err := zip.NewReader(bytes.NewReader(arts[0].Data), int64(len(arts[0].Data)))
	if err != nil {
		t.Fatalf("artifact is not a zip: %v", err)
	}
	files := map[string]string{}
	for _, zf := range zr.File {
		rc, err := zf.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(rc)
		rc.Close()
		files[zf.Name] = string(b)
	}
	var res struct {
		SchemaVersion int   `json:"schema_version"`
		Requests      int64 `json:"requests"`
		Run           struct {
			Job, Step, Runner string
		} `json:"run"`
	}
	if err := json.Unmarshal([]byte(files["result.json"]), &res); err != nil || res.SchemaVersion != 2 || res.Requests != 20 || res.Run.Job != "perf" || res.Run.Step != "api" || res.Run.Runner != "e2e-artifacts" {
		t.Errorf("result.json = %+v (%v), want schema 2, 20 requests, job perf, step api, runner e2e-artifacts", res, err)
	}
	if h := files["report.html"]; !strings.HasPrefix(h, "<!DOCTYPE html>") || !strings.Contains(h, `data-k="requests" data-v="20"`) {
		t.Errorf("report.html is not the report of the run:\n%.500s", h)
	}

	f.RefuseArtifacts(http.StatusInternalServerError)
	id = f.QueueJob(forgetest.Job{RunsOn: []string{"forgeload"}, Payload: payload})
	v = waitDone(t, f, id, d)
	log = strings.Join(v.Log, "\n")
	if v.Result != runnerv1.Result_RESULT_SUCCESS {
		t.Errorf("job with a refused upload: %v, want SUCCESS (the upload is not the result)\n%s", v.Result, log)
	}
	if !strings.Contains(log, "::error::forgeload/load: the report was not uploaded as a run artifact") || !strings.Contains(log, "CreateArtifact: 500") {
		t.Errorf("log does not report the refused upload:\n%s", log)
	}
}

// TestE2EBaselineAcrossRuns runs the same perf step twice through the
// real daemon: the first run on main has no baseline yet and passes with a
// notice; the second, on a branch against a slower target, fetches the
// first run's result through the forge's API and fails on
// "p99 < baseline * 1.10", with the deltas in its log and summary.
func TestE2EBaselineAcrossRuns(t *testing.T) {
	parallel(t)
	var slow atomic.Int64 // the target's service time (ns)
	tg := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		time.Sleep(time.Duration(slow.Load()))
	}))
	t.Cleanup(tg.Close)
	f := forgetest.New(t, forgetest.WithRegistrationToken("reg-token"))
	n := newNode(t, "")
	registered(t, f, n, "e2e-baseline")
	d := n.startDaemon()
	payload := []byte("on: push\njobs:\n  perf:\n    runs-on: forgeload\n    steps:\n      - id: api\n        uses: forgeload/load@v1\n        with:\n          target: " + tg.URL + "/\n          total: 100\n          concurrency: 10\n          baseline: main\n          thresholds: |\n            http_req_duration:p99 < baseline * 1.10\n            http_req_failed:rate < 1%\n")

	first := waitDone(t, f, f.QueueJob(forgetest.Job{RunsOn: []string{"forgeload"}, Payload: payload,
		Context: map[string]any{"run_id": "1", "ref": "refs/heads/main"}}), d)
	log := strings.Join(first.Log, "\n")
	if first.Result != runnerv1.Result_RESULT_SUCCESS || !strings.Contains(log, `::notice::forgeload/load: no baseline yet: no successful run of workflow "load.yaml" on branch "main" has the artifact "forgeload-perf-api"`) || !strings.Contains(log, "SKIP") {
		t.Fatalf("first run: %v, want success with a no-baseline notice and the baseline threshold skipped:\n%s", first.Result, log)
	}

	slow.Store(int64(slowerThan(artifactP99(t, f, first.ID), 500*time.Millisecond)))
	id := f.QueueJob(forgetest.Job{RunsOn: []string{"forgeload"}, Payload: payload,
		Context: map[string]any{"run_id": "2", "ref": "refs/heads/feature"}})
	second := waitDone(t, f, id, d)
	log = strings.Join(second.Log, "\n")
	if second.Result != runnerv1.Result_RESULT_FAILURE {
		t.Errorf("second run against a slower target: %v, want failure on the baseline threshold:\n%s", second.Result, log)
	}
	for _, want := range []string{`baseline: the forgeload-perf-api result of run 1 (workflow "load.yaml", branch "main")`, "FAIL  http_req_duration:p99 < baseline * 1.10", "(baseline ", "Comparison: run 1 on main → this run", "p99"} {
		if !strings.Contains(log, want) {
			t.Errorf("second run's log lacks %q:\n%s", want, log)
		}
	}
	if s := f.Summaries()[id]; !strings.Contains(s, "#### Compared with run 1 on main") {
		t.Errorf("job summary lacks the deltas:\n%s", s)
	}
}

// artifactP99 is the p99 latency in the result.json of the run artifact
// that task id uploaded.
func artifactP99(t *testing.T, f *forgetest.Forge, id int64) time.Duration {
	t.Helper()
	for _, a := range f.Artifacts() {
		if a.TaskID != id {
			continue
		}
		zr, err := zip.NewReader(bytes.NewReader(a.Data), int64(len(a.Data)))
		if err != nil {
			t.Fatalf("artifact %s of task %d is not a zip: %v", a.Name, id, err)
		}
		for _, zf := range zr.File {
			if zf.Name != "result.json" {
				continue
			}
			rc, err := zf.Open()
			if err != nil {
				t.Fatal(err)
			}
			defer rc.Close()
			return resultP99(t, fmt.Sprintf("result.json of task %d", id), rc)
		}
	}
	t.Fatalf("task %d uploaded no artifact with a result.json", id)
	return 0
}

// resultP99 is the p99 latency in a JSON result (what names it).
func resultP99(t *testing.T, what string, r io.Reader) time.Duration {
	t.Helper()
	var res struct {
		Latency struct {
			P99 float64 `json:"p99_ms"`
		} `json:"latency"`
	}
	if err := json.NewDecoder(r).Decode(&res); err != nil || res.Latency.P99 <= 0 {
		t.Fatalf("%s: p99 %v (%v)", what, res.Latency.P99, err)
	}
	return time.Duration(res.Latency.P99 * float64(time.Millisecond))
}

// slowerThan is the service time that makes a target clearly slower than
// in a run whose p99 was p99: at least floor, and three times that p99, so
// that a stall of a loaded machine in the first run (which lifts its p99)
// cannot make the slower run pass a "p99 < baseline * 1.10" threshold.
func slowerThan(p99, floor time.Duration) time.Duration {
	return max(floor, 3*p99)
}
