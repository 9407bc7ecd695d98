package forgetest_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	runnerv1 "gitea.dev/actions-proto-go/runner/v1"

	"github.com/forgeload/forgeload/internal/pkg/forgetest"
)

// postSingle sends a FetchSingleTask request in the Connect protocol's JSON
// encoding, written by hand, and returns the status and body.
func postSingle(t *testing.T, f *forgetest.Forge, c *rc, key, body string) (int, map[string]json.RawMessage) {
	t.Helper()
	r, err := http.NewRequest(http.MethodPost, f.URL()+"/api/actions/runner.v1.RunnerService/FetchSingleTask", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Connect-Protocol-Version", "1")
	r.Header.Set("x-runner-uuid", c.uuid)
	r.Header.Set("x-runner-token", c.token)
	if key != "" {
		r.Header.Set("x-runner-request-key", key)
	}
	res, err := (&http.Client{Transport: c.tr}).Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	var m map[string]json.RawMessage
	if res.StatusCode == http.StatusOK {
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("FetchSingleTask answer %s: %v", b, err)
		}
	}
	return res.StatusCode, m
}

// taskID is the id of the task in a FetchSingleTask answer, 0 for none.
func taskID(t *testing.T, m map[string]json.RawMessage) int64 {
	t.Helper()
	if m["task"] == nil {
		return 0
	}
	var task struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(m["task"], &task); err != nil {
		t.Fatal(err)
	}
	id, err := strconv.ParseInt(task.ID, 10, 64)
	if err != nil {
		t.Fatalf("task id %q: %v", task.ID, err)
	}
	return id
}

// TestForgejoFetchSingleTask: a handle takes exactly its job, not the
// oldest; an unknown handle, a taken job and an empty handle behave as
// Forgejo's FetchSingleTask does; the request key answers the same task
// again; the runner jobs list gives the handles; Gitea has neither route.
func TestForgejoFetchSingleTask(t *testing.T) {
	t.Parallel()
	f := forgetest.New(t, forgetest.WithForgejo())
	uuid, token := f.AddRunner("one-job", []string{"forgeload"})
	c := newRC(t, f, uuid, token)
	first := f.QueueJob(forgetest.Job{RunsOn: []string{"forgeload"}, Payload: []byte(payload2Steps)})
	second := f.QueueJob(forgetest.Job{RunsOn: []string{"forgeload"}, Payload: []byte(payload2Steps)})
	other := f.QueueJob(forgetest.Job{RunsOn: []string{"gpu"}, Payload: []byte(payload2Steps)})

	// The jobs list, as an autoscaler reads it.
	r, _ := http.NewRequest(http.MethodGet, f.URL()+"/api/v1/repos/forgeload/demo/actions/runners/jobs?labels=forgeload", nil)
	r.Header.Set("Authorization", "token "+f.AdminToken())
	res, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	var jobs []struct {
		ID     int64    `json:"id"`
		Handle string   `json:"handle"`
		RunsOn []string `json:"runs_on"`
		Status string   `json:"status"`
		TaskID int64    `json:"task_id"`
	}
	err = json.NewDecoder(res.Body).Decode(&jobs)
	res.Body.Close()
	if err != nil || len(jobs) != 2 || jobs[1].Handle != f.Task(second).Handle || jobs[1].Status != "waiting" || jobs[1].TaskID != 0 {
		t.Fatalf("jobs list (%v): %+v; want the two forgeload jobs, the second with handle %s", err, jobs, f.Task(second).Handle)
	}
	r.Header.Del("Authorization")
	res, err = http.DefaultClient.Do(r)
	if err != nil {
		t.Fatalf("jobs list without a token: %v", err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("jobs list without a token: %s, want 401", res.Status)
	}

	if code, m := postSingle(t, f, c, "", `{"tasksVersion":"0","handle":"no-such-handle"}`); code != 200 || taskID(t, m) != 0 {
		t.Fatalf("unknown handle: %d %v, want no task", code, m)
	}
	if code, m := postSingle(t, f, c, "", `{"handle":"`+f.Task(other).Handle+`"}`); code != 200 || taskID(t, m) != 0 {
		t.Fatalf("handle of a job whose labels do not match: %d %v, want no task", code, m)
	}
	if code, _ := postSingle(t, f, c, "", `{"handel":"x"}`); code == 200 {
		t.Fatal("a misspelt field was accepted")
	}
	code, m := postSingle(t, f, c, "key-1", `{"tasks_version":0,"handle":"`+f.Task(second).Handle+`"}`)
	if code != 200 || taskID(t, m) != second || f.Task(first).Picked {
		t.Fatalf("handle of the second job: %d %v; picked first: %v", code, m, f.Task(first).Picked)
	}
	// The same request key answers the same task (its answer was lost).
	if code, m := postSingle(t, f, c, "key-1", `{"handle":"`+f.Task(second).Handle+`"}`); code != 200 || taskID(t, m) != second {
		t.Fatalf("same request key: %d %v, want task %d again", code, m, second)
	}
	// A taken job's handle gives nothing; an empty handle takes any job.
	if code, m := postSingle(t, f, c, "key-2", `{"handle":"`+f.Task(second).Handle+`"}`); code != 200 || taskID(t, m) != 0 {
		t.Fatalf("handle of a taken job: %d %v", code, m)
	}
	if code, m := postSingle(t, f, c, "key-3", `{"handle":""}`); code != 200 || taskID(t, m) != first {
		t.Fatalf("empty handle: %d %v, want the oldest job %d", code, m, first)
	}
	if f.Calls("FetchSingleTask") == 0 {
		t.Error("FetchSingleTask calls are not counted")
	}

	g := forgetest.New(t)
	gu, gt := g.AddRunner("gitea", []string{"forgeload"})
	if code, _ := postSingle(t, g, newRC(t, g, gu, gt), "", `{}`); code != http.StatusNotFound {
		t.Fatalf("Gitea flavor FetchSingleTask: HTTP %d, want 404", code)
	}
}

// TestForgejoFetchTaskRequestKey: FetchTask records the request key on the
// task it picks and answers that task again for the same key (Forgejo's
// idempotent FetchTask), while Gitea ignores the key.
func TestForgejoFetchTaskRequestKey(t *testing.T) {
	t.Parallel()
	for _, fl := range []forgetest.Flavor{forgetest.Forgejo, forgetest.Gitea} {
		f := forgetest.New(t, forgetest.WithFlavor(fl))
		uuid, token := f.AddRunner("r", []string{"forgeload"})
		c := newRC(t, f, uuid, token)
		a := f.QueueJob(forgetest.Job{RunsOn: []string{"forgeload"}, Payload: []byte(payload2Steps)})
		b := f.QueueJob(forgetest.Job{RunsOn: []string{"forgeload"}, Payload: []byte(payload2Steps)})
		fetch := func(key string) int64 {
			r := req(c, &runnerv1.FetchTaskRequest{})
			r.Header().Set("x-runner-request-key", key)
			res, err := c.svc.FetchTask(context.Background(), r)
			if err != nil {
				t.Fatalf("%s: FetchTask: %v", fl, err)
			}
			return res.Msg.GetTask().GetId()
		}
		if got := fetch("k1"); got != a {
			t.Fatalf("%s: first fetch got %d, want %d", fl, got, a)
		}
		want := a // Forgejo: the same key recovers the same task
		if fl == forgetest.Gitea {
			want = b
		}
		if got := fetch("k1"); got != want {
			t.Fatalf("%s: fetch with the same key got %d, want %d", fl, got, want)
		}
	}
}
