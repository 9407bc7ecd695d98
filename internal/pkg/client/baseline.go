package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// ErrNoArtifact is returned by [Client.ArtifactHistory] when no
// successful run of the branch and workflow has the artifact.
var ErrNoArtifact = errors.New("no successful run has the artifact")

// maxBaselineRuns bounds how many successful runs ArtifactHistory looks
// through, newest first: one page of Gitea's runs list at its maximum.
const maxBaselineRuns = 50

// maxArtifactZip bounds a downloaded artifact.
const maxArtifactZip = 64 << 20

// RunArtifact is one artifact of an earlier run, as [Client.ArtifactHistory]
// found it.
type RunArtifact struct {
	// RunID is the run that uploaded it.
	RunID int64
	// Zip is the artifact's content.
	Zip []byte
}

// HistoryQuery says which artifacts [Client.ArtifactHistory] looks for.
type HistoryQuery struct {
	// Repo is the repository, "owner/name".
	Repo string
	// Branch is the branch whose successful runs are read.
	Branch string
	// Workflow is the workflow file the runs must be of (the task's
	// "workflow" context, e.g. "perf.yml"); runs of other workflows are
	// never taken, even with an artifact of the same name.
	Workflow string
	// Name is the artifact's name.
	Name string
	// Exclude is a run to leave out (the current one); 0 for none.
	Exclude int64
	// N is how many to return at most; 0 means 1.
	N int
}

// ArtifactHistory downloads artifact q.Name of the newest successful runs
// of workflow q.Workflow on branch q.Branch of q.Repo (newest first, at
// most q.N), through the forge's REST API with the task token: the runs
// (GET /api/v1/repos/{repo}/actions/runs?branch=&status=success&limit=50),
// each run's artifacts (…/runs/{run}/artifacts?name=), and each
// artifact's zip (…/actions/artifacts/{id}/zip). It reads both dialects:
// Gitea's (runs filtered by branch, with head_branch and the workflow in
// path, "perf.yml@refs/heads/main"; artifacts in an object) and Forgejo's
// (no branch filter, the branch in "prettyref" and the workflow in
// "workflow_id"; artifacts as a bare array; the zip served directly). A
// run that does not say its workflow is never taken. It looks through the
// 50 newest successful runs and returns what it found there, or
// [ErrNoArtifact]. A forge without these endpoints (HTTP 404) fails with
// an error naming the one it lacks. Errors never carry the token.
func (c *Client) ArtifactHistory(ctx context.Context, token string, q HistoryQuery) ([]RunArtifact, error) {
	fail := func(err error) ([]RunArtifact, error) {
		return nil, fmt.Errorf("fetch artifact %q of workflow %q on branch %q from %s: %w", q.Name, q.Workflow, q.Branch, c.redacted, err)
	}
	ctx, cancel := context.WithTimeout(ctx, 2*c.timeout)
	defer cancel()
	base := c.address + "/api/v1/repos/" + q.Repo + "/actions/"
	var runs struct {
		Runs []apiRun `json:"workflow_runs"`
	}
	v := url.Values{"branch": {q.Branch}, "status": {"success"}, "limit": {strconv.Itoa(maxBaselineRuns)}}
	if err := c.apiGet(ctx, token, base+"runs?"+v.Encode(), &runs); err != nil {
		return fail(lacks(err, "GET /api/v1/repos/{owner}/{repo}/actions/runs (the list of a repository's workflow runs)"))
	}
	var out []RunArtifact
	for k, r := range runs.Runs {
		if k >= maxBaselineRuns || len(out) >= max(q.N, 1) {
			break
		}
		if r.ID == q.Exclude || !r.matches(q.Branch, q.Workflow) {
			continue
		}
		zip, found, err := c.runArtifact(ctx, token, base, r.ID, q.Name)
		if err != nil {
			return fail(err)
		}
		if found {
			out = append(out, RunArtifact{RunID: r.ID, Zip: zip})
		}
	}
	if len(out) == 0 {
		return nil, ErrNoArtifact
	}
	return out, nil
}

// apiRun is one entry of the runs list, in either dialect.
type apiRun struct {
	ID         int64   `json:"id"`
	HeadBranch *string `json:"head_branch"` // Gitea
	Path       *string `json:"path"`        // Gitea: "<workflow>@<ref>"
	PrettyRef  *string `json:"prettyref"`   // Forgejo
	WorkflowID *string `json:"workflow_id"` // Forgejo
}

// matches reports whether the run is of branch and workflow. Forgejo
// ignores the branch filter, so the branch is checked here too.
func (r apiRun) matches(branch, workflow string) bool {
	switch {
	case r.HeadBranch != nil && *r.HeadBranch != branch:
		return false
	case r.HeadBranch == nil && r.PrettyRef != nil && *r.PrettyRef != branch:
		return false
	case r.Path != nil && *r.Path != "":
		return *r.Path == workflow || strings.HasPrefix(*r.Path, workflow+"@")
	case r.WorkflowID != nil:
		return *r.WorkflowID == workflow
	}
	return false
}

// runArtifact downloads the artifact name of run id, if it has one.
func (c *Client) runArtifact(ctx context.Context, token, base string, id int64, name string) ([]byte, bool, error) {
	arts, err := c.runArtifacts(ctx, token, base+"runs/"+strconv.FormatInt(id, 10)+"/artifacts?name="+url.QueryEscape(name))
	if err != nil {
		return nil, false, lacks(err, "GET /api/v1/repos/{owner}/{repo}/actions/runs/{run}/artifacts (a run's artifacts; Forgejo added it only recently)")
	}
	for _, a := range arts {
		if a.Name != name {
			continue
		}
		zip, err := c.apiDownload(ctx, token, base+"artifacts/"+strconv.FormatInt(a.ID, 10)+"/zip")
		if err != nil {
			return nil, false, lacks(err, "GET /api/v1/repos/{owner}/{repo}/actions/artifacts/{id}/zip (an artifact's download)")
		}
		return zip, true, nil
	}
	return nil, false, nil
}

// apiArtifact is one entry of a run's artifact list.
type apiArtifact struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
}

// runArtifacts reads a run's artifact list in Gitea's form
// ({"artifacts": [...]}) or Forgejo's (a bare array).
func (c *Client) runArtifacts(ctx context.Context, token, u string) ([]apiArtifact, error) {
	var raw json.RawMessage
	if err := c.apiGet(ctx, token, u, &raw); err != nil {
		return nil, err
	}
	var list []apiArtifact
	if err := json.Unmarshal(raw, &list); err == nil {
		return list, nil
	}
	var obj struct {
		Artifacts []apiArtifact `json:"artifacts"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, fmt.Errorf("GET %s: answer is neither an artifact list nor an object holding one: %w", strings.TrimPrefix(u, c.address), err)
	}
	return obj.Artifacts, nil
}

// errNotFound marks an API answer of HTTP 404.
var errNotFound = errors.New("404 Not Found")

// lacks turns a 404 from endpoint into an error that says the forge does
// not serve it, so baseline: cannot work there, and what to do.
func lacks(err error, endpoint string) error {
	if !errors.Is(err, errNotFound) {
		return err
	}
	return fmt.Errorf("this forge does not serve %s, which baseline: needs (%w); baseline: works on a forge that serves it (Gitea 1.27 does; Forgejo only since its actions artifact API), else remove baseline: from the step", endpoint, err)
}

func (c *Client) apiRequest(ctx context.Context, token, u string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "token "+token)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.userAgent)
	res, err := c.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", strings.TrimPrefix(u, c.address), err)
	}
	if res.StatusCode/100 != 2 {
		body, _ := io.ReadAll(io.LimitReader(res.Body, maxSummaryError))
		_ = res.Body.Close()
		if res.StatusCode == http.StatusNotFound {
			return nil, fmt.Errorf("GET %s: %w: %s", strings.TrimPrefix(u, c.address), errNotFound, strings.TrimSpace(string(body)))
		}
		if refused(res.StatusCode) {
			return nil, fmt.Errorf("GET %s: %w: %s: %s", strings.TrimPrefix(u, c.address), ErrRefused, res.Status, strings.TrimSpace(string(body)))
		}
		return nil, fmt.Errorf("GET %s: %s: %s", strings.TrimPrefix(u, c.address), res.Status, strings.TrimSpace(string(body)))
	}
	return res, nil
}

func (c *Client) apiGet(ctx context.Context, token, u string, out any) error {
	res, err := c.apiRequest(ctx, token, u)
	if err != nil {
		return err
	}
	defer func() { _ = res.Body.Close() }()
	if err := json.NewDecoder(io.LimitReader(res.Body, 8<<20)).Decode(out); err != nil {
		return fmt.Errorf("GET %s: answer is not JSON: %w", strings.TrimPrefix(u, c.address), err)
	}
	return nil
}

func (c *Client) apiDownload(ctx context.Context, token, u string) ([]byte, error) {
	res, err := c.apiRequest(ctx, token, u)
	if err != nil {
		return nil, err
	}
	defer func() { _ = res.Body.Close() }()
	b, err := io.ReadAll(io.LimitReader(res.Body, maxArtifactZip+1))
	if err != nil {
		return nil, fmt.Errorf("download: %w", err)
	}
	if len(b) > maxArtifactZip {
		return nil, fmt.Errorf("download: the artifact is larger than %d MiB", maxArtifactZip>>20)
	}
	return b, nil
}
