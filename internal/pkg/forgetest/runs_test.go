package forgetest_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/forgeload/forgeload/internal/pkg/forgetest"
)

// TestSeededRunsList: seeded runs are listed as Gitea lists them: newest
// first, with the workflow in path, paged by page and limit.
func TestSeededRunsList(t *testing.T) {
	t.Parallel()
	f := forgetest.New(t)
	for id := int64(1); id <= 4; id++ {
		f.SeedRun(forgetest.Run{ID: id, Workflow: "perf.yml", Jobs: []forgetest.RunJob{{ID: "perf"}}})
	}
	tok := f.Task(f.QueueJob(forgetest.Job{RunsOn: []string{"x"}, Context: map[string]any{"run_id": "9"}})).Token
	list := func(query string) (total int, ids []int64, paths []string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, f.URL()+"/api/v1/repos/forgeload/demo/actions/runs?status=success&"+query, nil)
		req.Header.Set("Authorization", "token "+tok)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var body struct {
			Total int `json:"total_count"`
			Runs  []struct {
				ID   int64  `json:"id"`
				Path string `json:"path"`
			} `json:"workflow_runs"`
		}
		if err := json.NewDecoder(res.Body).Decode(&body); err != nil {
			t.Fatal(err)
		}
		for _, r := range body.Runs {
			ids, paths = append(ids, r.ID), append(paths, r.Path)
		}
		return body.Total, ids, paths
	}
	total, ids, paths := list("limit=3")
	if total != 4 || len(ids) != 3 || ids[0] != 4 || ids[2] != 2 || paths[0] != "perf.yml@refs/heads/main" {
		t.Errorf("first page of 3 = total %d, runs %v %v; want 4 in all, runs 4, 3, 2 of perf.yml@refs/heads/main", total, ids, paths)
	}
	if _, ids, _ = list("limit=3&page=2"); len(ids) != 1 || ids[0] != 1 {
		t.Errorf("second page of 3 = %v, want run 1", ids)
	}
}
