package cmd

import (
	"archive/zip"
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	runnerv1 "gitea.dev/actions-proto-go/runner/v1"

	"github.com/forgeload/forgeload/internal/pkg/forgetest"
)

// resultZip is a load step's artifact holding the result.json that
// writeResult writes for latencies from base.
func resultZip(t *testing.T, base time.Duration) []byte {
	t.Helper()
	data, err := os.ReadFile(writeResult(t, t.TempDir(), "result.json", base))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	w, err := zw.Create("result.json")
	if err == nil {
		_, err = w.Write(data)
	}
	if err == nil {
		err = zw.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestE2EBaselineHistory: a load step's baseline is the median of the
// same job's and step's results in the newest successful runs of the same
// workflow on the branch, named in the log and the job summary; a newer
// run of another workflow with a step of the same id is not one of them
// (its result would fail the threshold).
func TestE2EBaselineHistory(t *testing.T) {
	parallel(t)
	tg := newTarget(t)
	f := forgetest.New(t, forgetest.WithRegistrationToken("reg-token"))
	for i, base := range []time.Duration{200, 240, 220, 210, 230} {
		f.SeedRun(forgetest.Run{ID: int64(i + 1), Workflow: "load.yaml", Jobs: []forgetest.RunJob{{ID: "perf",
			Artifacts: map[string][]byte{"forgeload-perf-api": resultZip(t, base*time.Millisecond)}}}})
	}
	f.SeedRun(forgetest.Run{ID: 6, Workflow: "other.yaml", Jobs: []forgetest.RunJob{{ID: "perf",
		Artifacts: map[string][]byte{"forgeload-perf-api": resultZip(t, 0)}}}})
	n := newNode(t, "")
	registered(t, f, n, "e2e-history")
	d := n.startDaemon()
	payload := "on: push\njobs:\n  perf:\n    runs-on: forgeload\n    steps:\n      - id: api\n        uses: forgeload/load@v1\n        with:\n          target: " + tg.URL + "/\n          total: 40\n          concurrency: 4\n          baseline: main\n          thresholds: http_req_duration:p99 < baseline * 1.10\n"
	id := f.QueueJob(forgetest.Job{RunsOn: []string{"forgeload"}, Payload: []byte(payload),
		Context: map[string]any{"run_id": "7", "ref": "refs/heads/feature"}})
	v := waitDone(t, f, id, d)
	log := strings.Join(v.Log, "\n")
	if v.Result != runnerv1.Result_RESULT_SUCCESS {
		t.Errorf("run against a history of slower runs: %v, want success:\n%s", v.Result, log)
	}
	for _, want := range []string{
		`baseline: the median of the forgeload-perf-api results of runs 5, 4, 3, 2 and 1 (workflow "load.yaml", branch "main")`,
		"Comparison: median of 5 runs (run 1 on main, run 2 on main, run 3 on main, run 4 on main, run 5 on main) → this run",
		"× MAD",
	} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
	if strings.Contains(log, "run 6") {
		t.Errorf("the baseline took run 6, of another workflow:\n%s", log)
	}
	if s := f.Summaries()[id]; !strings.Contains(s, "#### Compared with median of 5 runs (run 1 on main") {
		t.Errorf("job summary does not name the runs:\n%s", s)
	}
}

// TestE2EArtifactsPerJob: two legs of a matrix in one run each keep their
// load step's artifact (the forge keeps one per run and name), and a later
// run of one leg finds its own as the baseline.
func TestE2EArtifactsPerJob(t *testing.T) {
	parallel(t)
	tg := newTarget(t)
	f := forgetest.New(t, forgetest.WithRegistrationToken("reg-token"))
	n := newNode(t, "")
	registered(t, f, n, "e2e-per-job")
	d := n.startDaemon()
	// The forge sends each leg with its matrix values as one-element lists.
	leg := func(os, run, ref string) int64 {
		return f.QueueJob(forgetest.Job{RunsOn: []string{"forgeload"}, Payload: []byte("on: push\njobs:\n  perf:\n    runs-on: forgeload\n    strategy:\n      matrix:\n        os: [" + os + "]\n    steps:\n      - id: api\n        uses: forgeload/load@v1\n        with:\n          target: " + tg.URL + "/\n          total: 20\n          baseline: main\n          thresholds: http_req_duration:p99 < baseline * 100\n"),
			Context: map[string]any{"run_id": run, "ref": ref}})
	}
	for _, id := range []int64{leg("linux", "1", "refs/heads/main"), leg("windows", "1", "refs/heads/main")} {
		if v := waitDone(t, f, id, d); v.Result != runnerv1.Result_RESULT_SUCCESS {
			t.Fatalf("leg: %v\n%s", v.Result, strings.Join(v.Log, "\n"))
		}
	}
	names := map[string]bool{}
	for _, a := range f.Artifacts() {
		names[a.Name] = a.Confirmed
	}
	if len(names) != 2 || !names["forgeload-perf-api-linux"] || !names["forgeload-perf-api-windows"] {
		t.Fatalf("artifacts of one run's two legs = %v, want forgeload-perf-api-linux and -windows, both confirmed", names)
	}
	v := waitDone(t, f, leg("windows", "2", "refs/heads/feature"), d)
	if log := strings.Join(v.Log, "\n"); !strings.Contains(log, "baseline: the forgeload-perf-api-windows result of run 1") {
		t.Errorf("the windows leg of a later run did not find its own baseline: %v\n%s", v.Result, log)
	}
}

// TestE2EPullRequestComment: on a pull_request event, a load step with a
// baseline posts its comparison as one comment on the pull request
// through the forge's API with the job's token, and the next run of the
// pull request updates that comment instead of adding one.
func TestE2EPullRequestComment(t *testing.T) {
	parallel(t)
	tg := newTarget(t)
	f := forgetest.New(t, forgetest.WithRegistrationToken("reg-token"))
	for i, base := range []time.Duration{200, 240, 220} {
		f.SeedRun(forgetest.Run{ID: int64(i + 1), Jobs: []forgetest.RunJob{{ID: "perf",
			Artifacts: map[string][]byte{"forgeload-perf-api": resultZip(t, base*time.Millisecond)}}}})
	}
	n := newNode(t, "")
	registered(t, f, n, "e2e-pr-comment")
	d := n.startDaemon()
	payload := "on: pull_request\njobs:\n  perf:\n    runs-on: forgeload\n    steps:\n      - id: api\n        uses: forgeload/load@v1\n        with:\n          target: " + tg.URL + "/\n          total: 20\n          baseline: main\n          thresholds: http_req_duration:p99 < baseline * 1.10\n"
	for _, run := range []string{"10", "11"} {
		id := f.QueueJob(forgetest.Job{RunsOn: []string{"forgeload"}, Payload: []byte(payload), Context: map[string]any{
			"run_id": run, "ref": "refs/pull/7/head", "event_name": "pull_request",
			"event": map[string]any{"number": 7, "pull_request": map[string]any{"number": 7}},
		}})
		v := waitDone(t, f, id, d)
		log := strings.Join(v.Log, "\n")
		want := "comparison posted as comment 1 on pull request #7"
		if run == "11" {
			want = "comparison updated in comment 1 on pull request #7"
		}
		if v.Result != runnerv1.Result_RESULT_SUCCESS || !strings.Contains(log, want) {
			t.Fatalf("run %s: %v, want success and %q:\n%s", run, v.Result, want, log)
		}
	}
	cs := f.Comments("forgeload/demo", 7)
	if len(cs) != 1 || cs[0].Edits != 1 || cs[0].Author != forgetest.ActionsUser {
		t.Fatalf("comments on pull request 7 = %+v, want one, posted by the job's token and edited once", cs)
	}
	for _, want := range []string{"<!-- forgeload:forgeload-perf-api -->", "### forgeload: perf / api: PASS", "#### Compared with median of 3 runs (run 1 on main", "| p99 |", "Run 11,"} {
		if !strings.Contains(cs[0].Body, want) {
			t.Errorf("comment lacks %q:\n%s", want, cs[0].Body)
		}
	}
}
