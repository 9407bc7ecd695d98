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

// ErrNoArtifact is returned by [Client.LatestArtifact] when no successful
// run of the branch has the artifact.
var ErrNoArtifact = errors.New("no successful run has the artifact")

// maxBaselineRuns bounds how many successful runs LatestArtifact looks
// through, newest first.
const maxBaselineRuns = 20

// maxArtifactZip bounds a downloaded artifact.
const maxArtifactZip = 64 << 20

// LatestArtifact downloads the artifact name of the newest successful run
// of repo ("owner/name") on branch, other than run exclude, through the
// forge's REST API with the task token: the runs
// (GET /api/v1/repos/{repo}/actions/runs?branch=&status=success), each
// run's artifacts (…/runs/{run}/artifacts?name=), and the artifact's zip
// (…/actions/artifacts/{id}/zip). It reads both dialects: Gitea's (runs
// filtered by branch, each with head_branch; artifacts in an object) and
// Forgejo's (no branch filter, the branch in "prettyref"; artifacts as a
// bare array; the zip served directly), and keeps only runs of branch
// itself. It returns the zip and the run id, or [ErrNoArtifact]. A forge
// without these endpoints (HTTP 404) fails with an error naming the one it
// lacks. Errors never carry the token.
func (c *Client) LatestArtifact(ctx context.Context, token, repo, branch, name string, exclude int64) ([]byte, int64, error) {
	fail := func(err error) ([]byte, int64, error) {
		return nil, 0, fmt.Errorf("fetch artifact %q of branch %q from %s: %w", name, branch, c.redacted, err)
	}
	ctx, cancel := context.WithTimeout(ctx, 2*c.timeout)
	defer cancel()
	base := c.address + "/api/v1/repos/" + repo + "/actions/"
	var runs struct {
		Runs []struct {
			ID         int64   `json:"id"`
			HeadBranch *string `json:"head_branch"` // Gitea
			PrettyRef  *string `json:"prettyref"`   // Forgejo
		} `json:"workflow_runs"`
	}
	q := url.Values{"branch": {branch}, "status": {"success"}, "limit": {strconv.Itoa(maxBaselineRuns)}}
	if err := c.apiGet(ctx, token, base+"runs?"+q.Encode(), &runs); err != nil {
		return fail(lacks(err, "GET /api/v1/repos/{owner}/{repo}/actions/runs (the list of a repository's workflow runs)"))
	}
	for k, r := range runs.Runs {
		if k >= maxBaselineRuns {
			break
		}
		if r.ID == exclude {
			continue
		}
		// Forgejo ignores the branch filter: keep only this branch's runs.
		if r.HeadBranch != nil && *r.HeadBranch != branch || r.HeadBranch == nil && r.PrettyRef != nil && *r.PrettyRef != branch {
			continue
		}
		arts, err := c.runArtifacts(ctx, token, base+"runs/"+strconv.FormatInt(r.ID, 10)+"/artifacts?name="+url.QueryEscape(name))
		if err != nil {
			return fail(lacks(err, "GET /api/v1/repos/{owner}/{repo}/actions/runs/{run}/artifacts (a run's artifacts; Forgejo added it only recently)"))
		}
		for _, a := range arts {
			if a.Name != name {
				continue
			}
			zip, err := c.apiDownload(ctx, token, base+"artifacts/"+strconv.FormatInt(a.ID, 10)+"/zip")
			if err != nil {
				return fail(lacks(err, "GET /api/v1/repos/{owner}/{repo}/actions/artifacts/{id}/zip (an artifact's download)"))
			}
			return zip, r.ID, nil
		}
	}
	return nil, 0, ErrNoArtifact
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
