package cmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExecResultsAndStepNames runs a workflow with a load step through
// `forgeload exec`: each step's name and result is printed as it ends
// (the names were never printed), the step's report.html and result.json
// are written under --results-dir and their paths printed (exec skipped
// the report without a word), html_output writes the report into the
// workspace, and dashboard: true is answered with a reason rather than
// ignored.
func TestExecResultsAndStepNames(t *testing.T) {
	parallel(t)
	srv, _ := loadTarget(t)
	dir := t.TempDir()
	results := filepath.Join(dir, "results")
	wf := filepath.Join(dir, "wf.yml")
	text := `on: push
jobs:
  perf:
    runs-on: forgeload
    steps:
      - name: Load the API
        id: api
        uses: forgeload/load@v1
        with:
          target: ` + srv.URL + `/
          total: 5
          html_output: api-report.html
          dashboard: true
          thresholds: 'http_req_failed:rate < 1%'
      - name: Check the report
        run: test -s api-report.html && echo report in workspace
`
	if err := os.WriteFile(wf, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runMain(t, "exec", "--results-dir", results, wf)
	if code != ExitOK {
		t.Fatalf("exec: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, want := range []string{
		"[perf] ■ step 1 Load the API: success",
		"[perf] ■ step 2 Check the report: success",
		"report in workspace",
		"report: api-report.html (html_output, in the workspace)",
		"dashboard: true is not served in a job",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("exec output lacks %q:\n%s", want, stdout)
		}
	}
	report := announced(t, strings.ReplaceAll(stdout, "[perf] ", ""), "report")
	result := announced(t, strings.ReplaceAll(stdout, "[perf] ", ""), "result")
	if !strings.HasPrefix(report, results+string(filepath.Separator)+"exec-") || filepath.Base(filepath.Dir(report)) != "forgeload-perf-api" {
		t.Errorf("report at %s, want under %s/exec-*/forgeload-perf-api", report, results)
	}
	if b, err := os.ReadFile(report); err != nil || !strings.Contains(string(b), "<html") {
		t.Errorf("report %s: %v", report, err)
	}
	var sum struct {
		Requests int64 `json:"requests"`
	}
	if b, err := os.ReadFile(result); err != nil || json.Unmarshal(b, &sum) != nil || sum.Requests != 5 {
		t.Errorf("result %s: %v, %+v, want 5 requests", result, err, sum)
	}
}
