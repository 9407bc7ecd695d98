package forgetest_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/forgeload/forgeload/internal/pkg/forgetest"
)

// TestAPIAuthorization checks the REST API's access rules: a task token
// reads its own repository's runs, and nothing else.
func TestAPIAuthorization(t *testing.T) {
	t.Parallel()
	f := forgetest.New(t)
	id := f.QueueJob(forgetest.Job{RunsOn: []string{"x"}, Context: map[string]any{"repository": "team/api", "run_id": "7"}})
	tok := f.Task(id).Token
	get := func(path, auth string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, f.URL()+path, nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	for _, tc := range []struct {
		path, auth string
		code       int
		body       string
	}{
		{"/api/v1/repos/team/api/actions/runs", "token " + tok, 200, `"id":7`},
		{"/api/v1/repos/team/api/actions/runs?status=success", "token " + tok, 200, `"total_count":0`}, // still waiting
		{"/api/v1/repos/team/other/actions/runs", "token " + tok, 403, "does not grant"},
		{"/api/v1/repos/team/api/actions/runs", "", 401, ""},
		{"/api/v1/repos/team/api/actions/runs", "token nope", 401, ""},
		{"/api/v1/repos/team/api/actions/artifacts/1/zip", "token " + tok, 404, "not found"},
		{"/api/v1/repos/team/api/actions/artifacts/1/zip/raw?sig=forged", "", 401, ""},
	} {
		code, body := get(tc.path, tc.auth)
		if code != tc.code || !strings.Contains(body, tc.body) {
			t.Errorf("GET %s (%q) = %d %q, want %d with %q", tc.path, tc.auth, code, body, tc.code, tc.body)
		}
	}
}
