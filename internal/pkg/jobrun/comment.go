package jobrun

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/forgeload/forgeload/internal/pkg/client"
	"github.com/forgeload/forgeload/internal/pkg/load/outcome"
	"github.com/forgeload/forgeload/internal/pkg/workflow"
)

// pullNumber is the pull request the job runs for, from the event
// payload of a pull_request or pull_request_target event; 0 for any other
// event.
func (j *job) pullNumber() int64 {
	switch j.ctxString("event_name") {
	case "pull_request", "pull_request_target":
	default:
		return 0
	}
	ev, _ := j.github["event"].(map[string]any)
	num := func(v any) int64 {
		if f, ok := v.(float64); ok && f > 0 && f == float64(int64(f)) {
			return int64(f)
		}
		return 0
	}
	if n := num(ev["number"]); n > 0 {
		return n
	}
	if pr, ok := ev["pull_request"].(map[string]any); ok {
		return num(pr["number"])
	}
	return 0
}

// commentOnPull posts the step's comparison with its baseline on the pull
// request the job runs for, as one comment per job and step that later
// runs update rather than repeat (its marker is the step's artifact name,
// unique per job, step and matrix leg). It uses the job's token and, when
// the forge refuses that (a fork's pull request gets a read-only token),
// the runner's Config.CommentToken if the admin set one; a comment that
// cannot be posted is a warning line and nothing more: the step's result
// stands.
func (j *stepJob) commentOnPull(st workflow.Step, o *outcome.Outcome, comparison []byte) {
	pr := j.pullNumber()
	token := j.task.GetContext().GetFields()["token"].GetStringValue()
	if pr == 0 || j.deps.Publisher == nil || token == "" {
		return
	}
	name := j.artifactName(st, j.i)
	marker := j.rep.Mask("<!-- forgeload:" + name + " -->")
	title := j.wf.JobID
	if j.wf.Job.Name != "" {
		title = j.wf.Job.Name
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n### forgeload: %s / %s: %s\n\n", marker, title, cmp.Or(st.Name, st.ID, st.DisplayName()), strings.ToUpper(o.Verdict.Kind.String()))
	b.Write(comparison)
	sha := j.ctxString("sha")
	fmt.Fprintf(&b, "\n<sub>Run %s, commit %s. forgeload updates this comment on each run of the job.</sub>\n", j.ctxString("run_id"), sha[:min(len(sha), 10)])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	body := j.rep.Mask(b.String())
	c, err := j.deps.Publisher.UpsertComment(ctx, token, j.ctxString("repository"), pr, marker, body)
	with := ""
	if errors.Is(err, client.ErrRefused) && j.deps.CommentToken != "" {
		j.Logf("the forge refused the job's token for the comment on pull request #%d (a fork's pull request gets a read-only token); posting it with the runner's comment token (runner.comment_token)", pr)
		c, err = j.deps.Publisher.UpsertComment(ctx, j.deps.CommentToken, j.ctxString("repository"), pr, marker, body)
		with = " with the runner's comment token"
	}
	switch {
	case err != nil && errors.Is(err, client.ErrRefused) && j.deps.CommentToken == "":
		j.Logf("::warning::forgeload/load: the comparison was not posted on pull request #%d (the step's result stands): %v; the job's token may not comment here (a fork's pull request gets a read-only one): the runner's admin can set runner.comment_token_file to a token that may", pr, err)
	case err != nil:
		j.Logf("::warning::forgeload/load: the comparison was not posted on pull request #%d%s (the step's result stands): %v", pr, with, err)
	case c.Updated:
		j.Logf("comparison updated in comment %d on pull request #%d%s", c.ID, pr, with)
	default:
		j.Logf("comparison posted as comment %d on pull request #%d%s", c.ID, pr, with)
	}
}
