package client

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// CapabilityJobSummary is the forge capability (in [HeaderCapabilities])
// that says the forge accepts job-summary uploads.
const CapabilityJobSummary = "job-summary"

// maxSummaryError bounds how much of an error response body is quoted.
const maxSummaryError = 512

// HasCapability reports whether the comma-separated capabilities list csv
// (the value of [HeaderCapabilities]) contains capability.
func HasCapability(csv, capability string) bool {
	for c := range strings.SplitSeq(csv, ",") {
		if strings.TrimSpace(c) == capability {
			return true
		}
	}
	return false
}

// RuntimeScope returns the run and job ids named by a Gitea runtime token
// (context "gitea_runtime_token", an HS256 JWT whose claims carry RunID and
// JobID, and scp "Actions.Results:<run>:<job>"). The signature is not
// checked: the forge does that. It fails if token is not such a JWT.
func RuntimeScope(token string) (runID, jobID int64, err error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return 0, 0, errors.New("parse runtime token: not a JWT (want three dot-separated parts): pass the task context's gitea_runtime_token")
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return 0, 0, fmt.Errorf("parse runtime token: decode claims: %w", err)
	}
	var claims struct {
		Scope string `json:"scp"`
		RunID int64  `json:"RunID"`
		JobID int64  `json:"JobID"`
	}
	if err := json.Unmarshal(raw, &claims); err != nil {
		return 0, 0, fmt.Errorf("parse runtime token: claims are not JSON: %w", err)
	}
	if claims.RunID != 0 && claims.JobID != 0 {
		return claims.RunID, claims.JobID, nil
	}
	// Fall back to the scope, "Actions.Results:<run>:<job>".
	f := strings.Split(claims.Scope, ":")
	if len(f) == 3 && f[0] == "Actions.Results" {
		r, err1 := strconv.ParseInt(f[1], 10, 64)
		j, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 == nil && err2 == nil {
			return r, j, nil
		}
	}
	return 0, 0, errors.New("parse runtime token: claims name no run and job (want RunID/JobID or scp Actions.Results:<run>:<job>)")
}

// UploadSummary uploads markdown as the job summary of step (0-based; a
// negative step uploads a summary for the whole job), as Gitea 1.27 expects:
// PUT <address>/api/actions_pipeline/_apis/pipelines/workflows/<run>/jobs/<job>/steps/<step>/summary
// with "Authorization: Bearer <runtimeToken>". The run and job ids come
// from [RuntimeScope]. Call it only when the forge advertised
// [CapabilityJobSummary]. It uses the client's transport and timeout rules
// and never puts the token in an error.
func (c *Client) UploadSummary(ctx context.Context, runtimeToken string, step int, markdown []byte) error {
	runID, jobID, err := RuntimeScope(runtimeToken)
	if err != nil {
		return fmt.Errorf("upload job summary to %s: %w", c.redacted, err)
	}
	path := fmt.Sprintf("/api/actions_pipeline/_apis/pipelines/workflows/%d/jobs/%d", runID, jobID)
	if step >= 0 {
		path += "/steps/" + strconv.Itoa(step)
	}
	path += "/summary"
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, c.address+path, bytes.NewReader(markdown))
	if err != nil {
		return fmt.Errorf("upload job summary to %s: build request: %w", c.redacted, err)
	}
	req.Header.Set("Authorization", "Bearer "+runtimeToken)
	req.Header.Set("Content-Type", "text/markdown; charset=utf-8")
	req.Header.Set("User-Agent", c.userAgent)
	res, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("upload job summary to %s: %w", c.redacted, err)
	}
	defer func() { _ = res.Body.Close() }()
	body, _ := io.ReadAll(io.LimitReader(res.Body, maxSummaryError)) // only for the error message
	if res.StatusCode/100 != 2 {
		return fmt.Errorf("upload job summary to %s (run %d, job %d, step %d): %s: %s",
			c.redacted, runID, jobID, step, res.Status, strings.TrimSpace(string(body)))
	}
	return nil
}
