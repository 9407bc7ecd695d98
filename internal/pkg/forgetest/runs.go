package forgetest

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	runnerv1 "gitea.dev/actions-proto-go/runner/v1"
)

// Run is a finished workflow run to store with [Forge.SeedRun], as if its
// jobs had run on a runner earlier: the history that baselines read
// through the REST API.
type Run struct {
	// ID is the run's id (the tasks' run_id context); it must not be the
	// run_id of another run or queued job.
	ID int64
	// Workflow is the workflow file (the tasks' "workflow" context, and
	// the run's path "<Workflow>@<Ref>"). Default "load.yaml", as for
	// queued jobs.
	Workflow string
	// Ref is the ref the run ran on. Default "refs/heads/main".
	Ref string
	// Event is the event that triggered it. Default "push".
	Event string
	// Jobs are its jobs; the run succeeded when every one did.
	Jobs []RunJob
}

// RunJob is one job of a seeded [Run].
type RunJob struct {
	// ID is the job's id under jobs: (the "job" context).
	ID string
	// Result is how it ended. Default RESULT_SUCCESS.
	Result runnerv1.Result
	// Artifacts are what it uploaded, by name (a zip, as upload-artifact@v4
	// and forgeload store them); they are stored confirmed.
	Artifacts map[string][]byte
}

// SeedRun stores r with its jobs (as finished tasks, never handed to a
// runner) and their artifacts, so that the REST API lists them as Gitea
// (or Forgejo) would. It returns the ids of the jobs' tasks, in order.
func (f *Forge) SeedRun(r Run) []int64 {
	ref := r.Ref
	if ref == "" {
		ref = "refs/heads/main"
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	ids := make([]int64, 0, len(r.Jobs))
	for _, j := range r.Jobs {
		f.nextTaskID++
		t := &task{id: f.nextTaskID, jobID: f.nextTaskID + jobIDOffset, token: randHex(20), runID: strconv.FormatInt(r.ID, 10)}
		t.status = statusFromResult(j.Result)
		if j.Result == runnerv1.Result_RESULT_UNSPECIFIED {
			t.status = statusSuccess
		}
		ctx := f.defaultContext(j.ID)
		if f.repo != "" {
			ctx["repository"], ctx["sha"] = f.repo, f.repoSHA
		}
		ctx["run_id"], ctx["run_number"] = t.runID, t.runID
		ctx["ref"], ctx["ref_name"] = ref, strings.TrimPrefix(ref, "refs/heads/")
		if r.Workflow != "" {
			ctx["workflow"] = r.Workflow
		}
		if r.Event != "" {
			ctx["event_name"] = r.Event
		}
		s, err := toStruct(ctx)
		if err != nil {
			panic(fmt.Sprintf("forgetest: SeedRun: %v", err))
		}
		t.context = s
		f.tasks[t.id] = t
		for name, data := range j.Artifacts {
			f.artifacts = append(f.artifacts, &Artifact{
				ID: int64(len(f.artifacts) + 1), TaskID: t.id, RunID: t.runID, Name: name,
				Data: append([]byte(nil), data...), Size: int64(len(data)), Confirmed: true,
			})
		}
		ids = append(ids, t.id)
	}
	return ids
}

// runFields fills the fields of run r that Gitea's ActionWorkflowRun
// takes from the run (all its tasks share them): path is the workflow
// file and the ref, "perf.yml@refs/heads/main".
func runFields(r *apiRun, t *task) {
	c := t.context.GetFields()
	r.workflow = c["workflow"].GetStringValue()
	r.Path = r.workflow + "@" + c["ref"].GetStringValue()
	r.Event = c["event_name"].GetStringValue()
	r.HeadSHA = c["sha"].GetStringValue()
	r.RunNumber, _ = strconv.ParseInt(c["run_number"].GetStringValue(), 10, 64)
}

// Paging of list endpoints, as Gitea's API settings default it:
// DEFAULT_PAGING_NUM and MAX_RESPONSE_ITEMS.
const (
	defaultPageSize = 30
	maxPageSize     = 50
)

// page returns the page of list the request's page and limit parameters
// ask for, as Gitea's list endpoints do: pages count from 1, a limit
// outside 1…maxPageSize is the default or the maximum.
func page[T any](list []T, req *http.Request) []T {
	q := req.URL.Query()
	limit, err := strconv.Atoi(q.Get("limit"))
	switch {
	case err != nil || limit <= 0:
		limit = defaultPageSize
	case limit > maxPageSize:
		limit = maxPageSize
	}
	p, err := strconv.Atoi(q.Get("page"))
	if err != nil || p < 1 {
		p = 1
	}
	start := (p - 1) * limit
	if start >= len(list) {
		return list[:0]
	}
	return list[start:min(start+limit, len(list))]
}
