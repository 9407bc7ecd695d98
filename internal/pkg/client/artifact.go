package client

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// artifactService is the path of the artifact protocol that Gitea serves
// for actions/upload-artifact@v4 (a Twirp JSON service).
const artifactService = "/twirp/github.actions.results.api.v1.ArtifactService/"

// UploadArtifact uploads data (a zip, as actions/upload-artifact@v4 makes)
// as the run artifact name, through the artifact protocol Gitea implements
// for upload-artifact@v4: CreateArtifact with the task's runtime token,
// the content PUT to the signed URL it returns (comp=block, one append),
// then FinalizeArtifact with the size and sha256. The run and job ids come
// from [RuntimeScope]. It returns the artifact's id. Errors name the step
// that failed and the forge's answer, never the token.
func (c *Client) UploadArtifact(ctx context.Context, runtimeToken, name string, data []byte) (int64, error) {
	fail := func(format string, args ...any) (int64, error) {
		return 0, fmt.Errorf("upload artifact %q to %s: %s", name, c.redacted, fmt.Sprintf(format, args...))
	}
	runID, jobID, err := RuntimeScope(runtimeToken)
	if err != nil {
		return fail("%v", err)
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	ids := map[string]any{"workflow_run_backend_id": strconv.FormatInt(runID, 10), "workflow_job_run_backend_id": strconv.FormatInt(jobID, 10), "name": name}

	var created struct {
		OK              bool   `json:"ok"`
		SignedUploadURL string `json:"signedUploadUrl"`
	}
	ids["version"] = 4
	if err := c.artifactCall(ctx, runtimeToken, "CreateArtifact", ids, &created); err != nil {
		return fail("%v", err)
	}
	delete(ids, "version")
	if !created.OK || created.SignedUploadURL == "" {
		return fail("CreateArtifact: the forge gave no upload URL")
	}

	sep := "&"
	if !strings.Contains(created.SignedUploadURL, "?") {
		sep = "?"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, created.SignedUploadURL+sep+"comp=block", bytes.NewReader(data))
	if err != nil {
		return fail("upload: %v", err)
	}
	req.Header.Set("User-Agent", c.userAgent)
	req.Header.Set("Content-Type", "application/octet-stream")
	res, err := c.hc.Do(req)
	if err != nil {
		return fail("upload: %v", err)
	}
	body, _ := io.ReadAll(io.LimitReader(res.Body, maxSummaryError))
	_ = res.Body.Close()
	if res.StatusCode/100 != 2 {
		return fail("upload: %s: %s", res.Status, strings.TrimSpace(string(body)))
	}

	sum := sha256.Sum256(data)
	ids["size"] = strconv.Itoa(len(data))
	ids["hash"] = "sha256:" + hex.EncodeToString(sum[:])
	var fin struct {
		OK         bool   `json:"ok"`
		ArtifactID string `json:"artifactId"`
	}
	if err := c.artifactCall(ctx, runtimeToken, "FinalizeArtifact", ids, &fin); err != nil {
		return fail("%v", err)
	}
	id, err := strconv.ParseInt(fin.ArtifactID, 10, 64)
	if !fin.OK || err != nil {
		return fail("FinalizeArtifact: the forge did not confirm the artifact (ok %v, id %q)", fin.OK, fin.ArtifactID)
	}
	return id, nil
}

// artifactCall makes one Twirp JSON call of the artifact service.
func (c *Client) artifactCall(ctx context.Context, runtimeToken, method string, in, out any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.address+artifactService+method, bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	req.Header.Set("Authorization", "Bearer "+runtimeToken)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", c.userAgent)
	res, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	defer func() { _ = res.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("%s: read answer: %w", method, err)
	}
	if res.StatusCode/100 != 2 {
		if len(body) > maxSummaryError {
			body = body[:maxSummaryError]
		}
		return fmt.Errorf("%s: %s: %s", method, res.Status, strings.TrimSpace(string(body)))
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("%s: answer is not JSON: %w", method, err)
	}
	return nil
}
