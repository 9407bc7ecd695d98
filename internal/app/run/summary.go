package run

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// uploadSummary sends the concatenated GITHUB_STEP_SUMMARY Markdown to the
// forge as the job summary, when the forge advertises job-summary.
func (j *job) uploadSummary() {
	md := j.summary.String()
	if md == "" || j.r.o.Instance == "" || !hasCapability(j.r.o.Capabilities, "job-summary") {
		return
	}
	run, jobID := runAndJob(j.runtimeToken(), j.ctxString("run_id"))
	url := fmt.Sprintf("%s/api/actions_pipeline/_apis/pipelines/workflows/%s/jobs/%s/steps/%d/summary",
		strings.TrimSuffix(j.r.o.Instance, "/"), run, jobID, max(j.stepCount()-1, 0))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, url, bytes.NewBufferString(md))
	if err != nil {
		j.rep.Logf(-1, "::warning::job summary not uploaded: %v", err)
		return
	}
	req.Header.Set("Authorization", "Bearer "+j.runtimeToken())
	req.Header.Set("Content-Type", "text/markdown; charset=utf-8")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		j.rep.Logf(-1, "::warning::job summary not uploaded: %v", err)
		return
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		j.rep.Logf(-1, "::warning::job summary not uploaded: the forge answered %s", resp.Status)
	}
}

func hasCapability(csv, want string) bool {
	for _, c := range strings.Split(csv, ",") {
		if strings.EqualFold(strings.TrimSpace(c), want) {
			return true
		}
	}
	return false
}

// runAndJob reads the run and job ids from the runtime token's scope claim
// ("Actions.Results:<run>:<job>"); the token itself is verified by the
// forge, we only read where to send. Without a readable claim, the run id
// of the task context and job 0 are used.
func runAndJob(token, runID string) (string, string) {
	parts := strings.Split(token, ".")
	if len(parts) == 3 {
		if payload, err := base64.RawURLEncoding.DecodeString(parts[1]); err == nil {
			var claims struct {
				Scope string `json:"scp"`
			}
			if json.Unmarshal(payload, &claims) == nil {
				for _, s := range strings.Fields(claims.Scope) {
					if rest, ok := strings.CutPrefix(s, "Actions.Results:"); ok {
						if r, jb, ok := strings.Cut(rest, ":"); ok {
							return r, jb
						}
					}
				}
			}
		}
	}
	if runID == "" {
		runID = "0"
	}
	return runID, "0"
}
