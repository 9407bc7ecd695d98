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
// of repo ("owner/name") on branch, other than run exclude, through
// Gitea's REST API with the task token: the runs
// (GET /api/v1/repos/{repo}/actions/runs?branch=&status=success), each
// run's artifacts (…/runs/{run}/artifacts?name=), and the artifact's zip
// (…/actions/artifacts/{id}/zip). It returns the zip and the run id, or
// [ErrNoArtifact]. Errors never carry the token.
func (c *Client) LatestArtifact(ctx context.Context, token, repo, branch, name string, exclude int64) ([]byte, int64, error) {
	fail := func(err error) ([]byte, int64, error) {
		return nil, 0, fmt.Errorf("fetch artifact %q of branch %q from %s: %w", name, branch, c.redacted, err)
	}
	ctx, cancel := context.WithTimeout(ctx, 2*c.timeout)
	defer cancel()
	base := c.address + "/api/v1/repos/" + repo + "/actions/"
	var runs struct {
		Runs []struct {
			ID int64 `json:"id"`
		} `json:"workflow_runs"`
	}
	q := url.Values{"branch": {branch}, "status": {"success"}, "limit": {strconv.Itoa(maxBaselineRuns)}}
	if err := c.apiGet(ctx, token, base+"runs?"+q.Encode(), &runs); err != nil {
		return fail(err)
	}
	for k, r := range runs.Runs {
		if k >= maxBaselineRuns {
			break
		}
		if r.ID == exclude {
			continue
		}
		var arts struct {
			Artifacts []struct {
				ID   int64  `json:"id"`
				Name string `json:"name"`
			} `json:"artifacts"`
		}
		if err := c.apiGet(ctx, token, base+"runs/"+strconv.FormatInt(r.ID, 10)+"/artifacts?name="+url.QueryEscape(name), &arts); err != nil {
			return fail(err)
		}
		for _, a := range arts.Artifacts {
			if a.Name != name {
				continue
			}
			zip, err := c.apiDownload(ctx, token, base+"artifacts/"+strconv.FormatInt(a.ID, 10)+"/zip")
			if err != nil {
				return fail(err)
			}
			return zip, r.ID, nil
		}
	}
	return nil, 0, ErrNoArtifact
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
