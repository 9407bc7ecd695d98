package forgetest

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"time"
)

// Comment is a comment on an issue or pull request, as the forge stores it.
type Comment struct {
	ID int64
	// Repo is "owner/name"; Index is the issue or pull request number.
	Repo  string
	Index int64
	Body  string
	// Author is the login it was posted as: for a task token, Gitea's
	// "gitea-actions" bot.
	Author string
	// Edits counts the PATCHes since it was posted.
	Edits            int
	Created, Updated time.Time
}

// UserToken returns a personal access token of the user login, made on
// the first call for that login: the comment routes accept it for every
// repository, and what it posts is by login. It stands for the token a
// runner's admin configures (runner.comment_token) for the pull requests
// whose task token may not comment.
func (f *Forge) UserToken(login string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	for tok, l := range f.userTokens {
		if l == login {
			return tok
		}
	}
	if f.userTokens == nil {
		f.userTokens = map[string]string{}
	}
	tok := randHex(20)
	f.userTokens[tok] = login
	return tok
}

// commentAuth checks the token of a comment route: a user's token
// ([Forge.UserToken]), or the task token of a task of the path's
// repository, which may list but not post or edit when its job has
// ReadOnlyToken (403, as Gitea answers a fork's pull request). It returns
// the repository and whom the comment is by; it answers the error itself.
func (f *Forge) commentAuth(w http.ResponseWriter, req *http.Request, write bool) (repo, author string, ok bool) {
	if tok, found := requestToken(req); found && tok != "" {
		f.mu.Lock()
		login, user := f.userTokens[tok]
		f.mu.Unlock()
		if user {
			return req.PathValue("owner") + "/" + req.PathValue("repo"), login, true
		}
	}
	repo, t, ok := f.apiAuthTask(w, req)
	if !ok {
		return "", "", false
	}
	if write && t.job.ReadOnlyToken {
		http.Error(w, `{"message":"token does not have at least one of required scope(s): [write:issue]"}`, http.StatusForbidden)
		return "", "", false
	}
	return repo, ActionsUser, true
}

// ActionsUser is the login of what a task token posts as (Gitea's
// actions bot user).
const ActionsUser = "gitea-actions"

// Comments returns copies of the comments on issue or pull request index
// of repo, oldest first.
func (f *Forge) Comments(repo string, index int64) []Comment {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Comment
	for _, c := range f.comments {
		if c.Repo == repo && c.Index == index {
			out = append(out, *c)
		}
	}
	return out
}

// commentRoutes serves the part of Gitea's REST API that lists, posts
// and edits the comments of an issue or pull request, with a task token
// of the repository (apiAuth; a read-only one may only list) or a user's
// token (commentAuth):
//
//	GET   /api/v1/repos/{owner}/{repo}/issues/{index}/comments
//	POST  /api/v1/repos/{owner}/{repo}/issues/{index}/comments   {"body"} → 201
//	PATCH /api/v1/repos/{owner}/{repo}/issues/comments/{id}      {"body"} → 200
//
// Any index is a pull request; the list is oldest first.
func (f *Forge) commentRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/v1/repos/{owner}/{repo}/issues/{index}/comments", f.apiListComments)
	mux.HandleFunc("POST /api/v1/repos/{owner}/{repo}/issues/{index}/comments", f.apiPostComment)
	mux.HandleFunc("PATCH /api/v1/repos/{owner}/{repo}/issues/comments/{id}", f.apiEditComment)
}

func (f *Forge) apiListComments(w http.ResponseWriter, req *http.Request) {
	repo, _, ok := f.commentAuth(w, req, false)
	if !ok {
		return
	}
	index, err := strconv.ParseInt(req.PathValue("index"), 10, 64)
	if err != nil {
		http.Error(w, `{"message":"invalid index"}`, http.StatusBadRequest)
		return
	}
	list := []map[string]any{}
	for _, c := range f.Comments(repo, index) {
		list = append(list, commentJSON(req, &c))
	}
	writeJSON(w, list)
}

// commentBody reads {"body": "..."}; it answers the error itself.
func commentBody(w http.ResponseWriter, req *http.Request) (string, bool) {
	var in struct {
		Body string `json:"body"`
	}
	b, err := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	if err == nil {
		err = json.Unmarshal(b, &in)
	}
	if err != nil || in.Body == "" {
		http.Error(w, `{"message":"[Body]: Required"}`, http.StatusUnprocessableEntity)
		return "", false
	}
	return in.Body, true
}

func (f *Forge) apiPostComment(w http.ResponseWriter, req *http.Request) {
	repo, author, ok := f.commentAuth(w, req, true)
	if !ok {
		return
	}
	index, err := strconv.ParseInt(req.PathValue("index"), 10, 64)
	if err != nil {
		http.Error(w, `{"message":"invalid index"}`, http.StatusBadRequest)
		return
	}
	body, ok := commentBody(w, req)
	if !ok {
		return
	}
	f.mu.Lock()
	now := f.now()
	c := &Comment{ID: int64(len(f.comments) + 1), Repo: repo, Index: index, Body: body, Author: author, Created: now, Updated: now}
	f.comments = append(f.comments, c)
	out := commentJSON(req, c)
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json;charset=utf-8")
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(out)
}

func (f *Forge) apiEditComment(w http.ResponseWriter, req *http.Request) {
	repo, _, ok := f.commentAuth(w, req, true)
	if !ok {
		return
	}
	id, err := strconv.ParseInt(req.PathValue("id"), 10, 64)
	body, ok := commentBody(w, req)
	if !ok {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.comments {
		if err == nil && c.ID == id && c.Repo == repo {
			c.Body, c.Updated = body, f.now()
			c.Edits++
			writeJSON(w, commentJSON(req, c))
			return
		}
	}
	http.Error(w, `{"message":"comment not found"}`, http.StatusNotFound)
}

func commentJSON(req *http.Request, c *Comment) map[string]any {
	issue := "http://" + req.Host + "/" + c.Repo + "/pulls/" + strconv.FormatInt(c.Index, 10)
	return map[string]any{
		"id": c.ID, "body": c.Body, "user": map[string]any{"login": c.Author},
		"html_url":  issue + "#issuecomment-" + strconv.FormatInt(c.ID, 10),
		"issue_url": issue, "pull_request_url": issue,
		"created_at": c.Created.Format(time.RFC3339), "updated_at": c.Updated.Format(time.RFC3339),
	}
}
