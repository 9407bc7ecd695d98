package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// maxCommentBody bounds a pull request comment (Gitea keeps comments in a
// LONGTEXT column, but a table of deltas is a few KiB).
const maxCommentBody = 64 << 10

// ErrRefused is wrapped by the errors of REST API calls the forge answered
// 401 or 403: the token may not do that (Gitea gives the task of a
// fork's pull request a read-only token).
var ErrRefused = errors.New("the forge refused the token")

// refused reports whether an API status means the token may not do it.
func refused(status int) bool {
	return status == http.StatusUnauthorized || status == http.StatusForbidden
}

// PullComment is a comment [Client.UpsertComment] posted or updated.
type PullComment struct {
	// ID is the comment's id; URL where it is shown, when the forge says.
	ID  int64
	URL string
	// Updated is set when an earlier comment with the marker was edited
	// rather than a new one posted.
	Updated bool
}

// UpsertComment posts body as a comment on pull request pr of repo
// ("owner/name") through the forge's REST API with token, or, when a
// comment of the pull request already holds marker, replaces that
// comment's body: one comment per marker, kept up to date. body must
// contain marker (an HTML comment such as "<!-- forgeload:perf-api -->"
// hides it). It lists the comments (GET /api/v1/repos/{repo}/issues/{pr}/comments),
// then edits (PATCH …/issues/comments/{id}) or posts (POST
// …/issues/{pr}/comments). Errors never carry the token.
func (c *Client) UpsertComment(ctx context.Context, token, repo string, pr int64, marker, body string) (PullComment, error) {
	fail := func(err error) (PullComment, error) {
		return PullComment{}, fmt.Errorf("comment on pull request %d of %s at %s: %w", pr, repo, c.redacted, err)
	}
	switch {
	case marker == "" || !strings.Contains(body, marker):
		return fail(fmt.Errorf("the body does not hold its marker %q", marker))
	case len(body) > maxCommentBody:
		return fail(fmt.Errorf("the body is %d bytes, more than %d", len(body), maxCommentBody))
	}
	ctx, cancel := context.WithTimeout(ctx, 2*c.timeout)
	defer cancel()
	base := c.address + "/api/v1/repos/" + repo + "/issues/"
	var list []struct {
		ID   int64  `json:"id"`
		Body string `json:"body"`
	}
	if err := c.apiGet(ctx, token, base+strconv.FormatInt(pr, 10)+"/comments", &list); err != nil {
		return fail(err)
	}
	var out struct {
		ID  int64  `json:"id"`
		URL string `json:"html_url"`
	}
	for _, cm := range list {
		if strings.Contains(cm.Body, marker) {
			if err := c.apiSend(ctx, token, http.MethodPatch, base+"comments/"+strconv.FormatInt(cm.ID, 10), body, &out); err != nil {
				return fail(err)
			}
			return PullComment{ID: out.ID, URL: out.URL, Updated: true}, nil
		}
	}
	if err := c.apiSend(ctx, token, http.MethodPost, base+strconv.FormatInt(pr, 10)+"/comments", body, &out); err != nil {
		return fail(err)
	}
	return PullComment{ID: out.ID, URL: out.URL}, nil
}

// apiSend sends {"body": body} with method to u and decodes the answer
// into out.
func (c *Client) apiSend(ctx context.Context, token, method, u, body string, out any) error {
	b, err := json.Marshal(map[string]string{"body": body})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "token "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.userAgent)
	res, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, strings.TrimPrefix(u, c.address), err)
	}
	defer func() { _ = res.Body.Close() }()
	if res.StatusCode/100 != 2 {
		msg, _ := io.ReadAll(io.LimitReader(res.Body, maxSummaryError))
		if refused(res.StatusCode) {
			return fmt.Errorf("%s %s: %w: %s: %s", method, strings.TrimPrefix(u, c.address), ErrRefused, res.Status, strings.TrimSpace(string(msg)))
		}
		return fmt.Errorf("%s %s: %s: %s", method, strings.TrimPrefix(u, c.address), res.Status, strings.TrimSpace(string(msg)))
	}
	if err := json.NewDecoder(io.LimitReader(res.Body, 1<<20)).Decode(out); err != nil {
		return fmt.Errorf("%s %s: answer is not JSON: %w", method, strings.TrimPrefix(u, c.address), err)
	}
	return nil
}
