package forgetest

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// The part of Gitea's REST API (/api/v1) that reads a repository's action
// runs and their artifacts, authenticated with a task token
// ("Authorization: token <token>") of a task of that repository:
//
//	GET /api/v1/repos/{owner}/{repo}/actions/runs?branch=B&status=success
//	GET /api/v1/repos/{owner}/{repo}/actions/runs/{run}/artifacts?name=N
//	GET /api/v1/repos/{owner}/{repo}/actions/artifacts/{id}/zip
//
// Runs are the tasks grouped by their run_id context; a run's branch is
// its ref without refs/heads/, and it succeeded when every task of it is
// done with success. The zip answers with a redirect to a signed raw URL,
// as Gitea does for v4 artifacts.
func (f *Forge) apiRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/v1/repos/{owner}/{repo}/actions/runs", f.apiRuns)
	mux.HandleFunc("GET /api/v1/repos/{owner}/{repo}/actions/runs/{run}/artifacts", f.apiRunArtifacts)
	mux.HandleFunc("GET /api/v1/repos/{owner}/{repo}/actions/artifacts/{id}/zip", f.apiArtifactZip)
	mux.HandleFunc("GET /api/v1/repos/{owner}/{repo}/actions/artifacts/{id}/zip/raw", f.apiArtifactRaw)
	f.commentRoutes(mux)
}

// apiAuth checks the task token of a task of the path's repository; it
// answers the error itself. The caller holds no lock.
func (f *Forge) apiAuth(w http.ResponseWriter, req *http.Request) (repo string, ok bool) {
	repo, _, ok = f.apiAuthTask(w, req)
	return repo, ok
}

// apiAuthTask is apiAuth that also returns the task whose token it is.
func (f *Forge) apiAuthTask(w http.ResponseWriter, req *http.Request) (repo string, t *task, ok bool) {
	tok, found := requestToken(req)
	repo = req.PathValue("owner") + "/" + req.PathValue("repo")
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, t := range f.tasks {
		if found && tok != "" && subtle.ConstantTimeCompare([]byte(t.token), []byte(tok)) == 1 {
			if taskRepo(t) != repo {
				http.Error(w, `{"message":"token does not grant access to this repository"}`, http.StatusForbidden)
				return "", nil, false
			}
			return repo, t, true
		}
	}
	http.Error(w, `{"message":"user does not exist"}`, http.StatusUnauthorized)
	return "", nil, false
}

// requestToken is the token of "Authorization: token …" (or Bearer).
func requestToken(req *http.Request) (string, bool) {
	auth := req.Header.Get("Authorization")
	tok, found := strings.CutPrefix(auth, "token ")
	if !found {
		tok, found = strings.CutPrefix(auth, "Bearer ")
	}
	return tok, found
}

func taskRepo(t *task) string {
	return t.context.GetFields()["repository"].GetStringValue()
}

func taskBranch(t *task) string {
	return strings.TrimPrefix(t.context.GetFields()["ref"].GetStringValue(), "refs/heads/")
}

type apiRun struct {
	ID         int64  `json:"id"`
	HeadBranch string `json:"head_branch"`
	Status     string `json:"status"`
	Conclusion string `json:"conclusion"`
	// Path is Gitea's "<workflow file>@<ref>"; see runFields.
	Path      string `json:"path"`
	Event     string `json:"event"`
	HeadSHA   string `json:"head_sha"`
	RunNumber int64  `json:"run_number"`
	workflow  string
}

func (f *Forge) apiRuns(w http.ResponseWriter, req *http.Request) {
	repo, ok := f.apiAuth(w, req)
	if !ok {
		return
	}
	branch, status := req.URL.Query().Get("branch"), req.URL.Query().Get("status")
	f.mu.Lock()
	runs := map[int64]*apiRun{}
	for _, t := range f.tasks {
		id, err := strconv.ParseInt(t.runID, 10, 64)
		if err != nil || taskRepo(t) != repo {
			continue
		}
		r := runs[id]
		if r == nil {
			r = &apiRun{ID: id, HeadBranch: taskBranch(t), Status: "completed", Conclusion: "success"}
			runFields(r, t)
			runs[id] = r
		}
		switch {
		case !t.status.isDone():
			r.Status, r.Conclusion = "in_progress", ""
		case t.status != statusSuccess && r.Conclusion != "":
			r.Conclusion = "failure"
		}
	}
	f.mu.Unlock()
	list := []apiRun{}
	for _, r := range runs {
		if f.flavor == Forgejo {
			branch = "" // Forgejo's ListActionRuns has no branch filter
		}
		if branch != "" && r.HeadBranch != branch || status != "" && r.Conclusion != status && r.Status != status {
			continue
		}
		list = append(list, *r)
	}
	slices.SortFunc(list, func(a, b apiRun) int { return int(b.ID - a.ID) }) // newest first
	total := len(list)
	list = page(list, req)
	if f.flavor == Forgejo {
		writeJSON(w, map[string]any{"total_count": total, "workflow_runs": forgejoRuns(list)})
		return
	}
	writeJSON(w, map[string]any{"total_count": total, "workflow_runs": list})
}

func (f *Forge) apiRunArtifacts(w http.ResponseWriter, req *http.Request) {
	repo, ok := f.apiAuth(w, req)
	if !ok || f.refuseArtifactAPI(w) {
		return
	}
	name := req.URL.Query().Get("name")
	f.mu.Lock()
	list := []map[string]any{}
	for _, a := range f.artifacts {
		t := f.tasks[a.TaskID]
		if t == nil || taskRepo(t) != repo || a.RunID != req.PathValue("run") || !a.Confirmed || name != "" && a.Name != name {
			continue
		}
		list = append(list, map[string]any{
			"id": a.ID, "name": a.Name, "size_in_bytes": a.Size, "expired": false,
			"archive_download_url": "http://" + req.Host + "/api/v1/repos/" + repo + "/actions/artifacts/" + strconv.FormatInt(a.ID, 10) + "/zip",
		})
		if f.flavor == Forgejo {
			list[len(list)-1]["run_id"], _ = strconv.ParseInt(a.RunID, 10, 64)
		}
	}
	f.mu.Unlock()
	if f.flavor == Forgejo {
		writeJSON(w, list) // Forgejo answers a bare array
		return
	}
	writeJSON(w, map[string]any{"total_count": len(list), "artifacts": list})
}

// apiArtifact finds a confirmed artifact of repo by the path's id.
func (f *Forge) apiArtifact(repo, rawID string) *Artifact {
	id, err := strconv.ParseInt(rawID, 10, 64)
	if err != nil {
		return nil
	}
	for _, a := range f.artifacts {
		if t := f.tasks[a.TaskID]; a.ID == id && a.Confirmed && t != nil && taskRepo(t) == repo {
			return a
		}
	}
	return nil
}

func (f *Forge) rawSig(repo string, id string) string {
	mac := hmac.New(sha256.New, f.jwtKey)
	mac.Write([]byte("raw:" + repo + ":" + id))
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

func (f *Forge) apiArtifactZip(w http.ResponseWriter, req *http.Request) {
	repo, ok := f.apiAuth(w, req)
	if !ok || f.refuseArtifactAPI(w) {
		return
	}
	f.mu.Lock()
	a := f.apiArtifact(repo, req.PathValue("id"))
	var data []byte
	if a != nil {
		data = append(data, a.Data...)
	}
	f.mu.Unlock()
	if a == nil {
		http.Error(w, `{"message":"artifact not found"}`, http.StatusNotFound)
		return
	}
	if f.flavor == Forgejo { // Forgejo serves the archive itself
		w.Header().Set("Content-Type", "application/zip")
		_, _ = w.Write(data)
		return
	}
	http.Redirect(w, req, req.URL.Path+"/raw?sig="+f.rawSig(repo, req.PathValue("id")), http.StatusFound)
}

func (f *Forge) apiArtifactRaw(w http.ResponseWriter, req *http.Request) {
	repo := req.PathValue("owner") + "/" + req.PathValue("repo")
	if !hmac.Equal([]byte(req.URL.Query().Get("sig")), []byte(f.rawSig(repo, req.PathValue("id")))) {
		http.Error(w, "Error unauthorized", http.StatusUnauthorized)
		return
	}
	f.mu.Lock()
	a := f.apiArtifact(repo, req.PathValue("id"))
	var data []byte
	if a != nil {
		data = append(data, a.Data...)
	}
	f.mu.Unlock()
	if a == nil {
		http.Error(w, "artifact not found", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "application/zip")
	_, _ = w.Write(data)
}

// refuseArtifactAPI answers 404, as a forge without the route does, when
// the Forge was made WithoutArtifactAPI.
func (f *Forge) refuseArtifactAPI(w http.ResponseWriter) bool {
	if !f.noArtifactAPI {
		return false
	}
	http.NotFound(w, nil)
	return true
}

// forgejoRuns renders runs as Forgejo's ActionRun: the branch in
// "prettyref" and one "status" (Forgejo's status names) instead of
// head_branch, status and conclusion.
func forgejoRuns(runs []apiRun) []map[string]any {
	out := make([]map[string]any, 0, len(runs))
	for _, r := range runs {
		st := r.Conclusion
		if r.Status != "completed" {
			st = "running"
		}
		out = append(out, map[string]any{"id": r.ID, "prettyref": r.HeadBranch, "status": st, "index_in_repo": r.ID, "workflow_id": r.workflow, "event": r.Event, "commit_sha": r.HeadSHA})
	}
	return out
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json;charset=utf-8")
	_ = json.NewEncoder(w).Encode(v)
}
