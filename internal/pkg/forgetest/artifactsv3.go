package forgetest

import (
	"crypto/md5"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// ArtifactV3Route is where Gitea serves the artifact protocol of
// actions/upload-artifact@v3 (the toolkit's ACTIONS_RUNTIME_URL is
// <forge>/api/actions_pipeline/); {run} is the task's run id.
const ArtifactV3Route = "/api/actions_pipeline/_apis/pipelines/workflows/{run}/artifacts"

// v3Routes serves the v3 protocol, with the task's runtime token as the
// bearer. Upload: POST the route (a JSON body with Name) answers
// fileContainerResourceUrl; PUT that URL with ?itemPath=<name>/<path> and
// a Content-Range stores one chunk of one file, as sent (gzip when its
// Content-Encoding says so); PATCH the route with ?artifactName=<name>
// confirms the artifact once every file has all its bytes. Download, as
// Gitea: GET the route lists the run's artifacts (404 when it has none),
// each with a <md5 of name>/download_url URL; GET that with
// ?itemPath=<name> lists the artifact's files (path <name>/<file>, a v4
// artifact's zip as <name>/<name>.zip), each with a contentLocation that
// serves the file as stored, with Content-Encoding: gzip when it was
// uploaded so.
func (f *Forge) v3Routes(mux *http.ServeMux) {
	mux.HandleFunc("POST "+ArtifactV3Route, f.v3Create)
	mux.HandleFunc("PUT "+ArtifactV3Route+"/{hash}/upload", f.v3Upload)
	mux.HandleFunc("PATCH "+ArtifactV3Route, f.v3Confirm)
	mux.HandleFunc("GET "+ArtifactV3Route, f.v3List)
	mux.HandleFunc("GET "+ArtifactV3Route+"/{hash}/download_url", f.v3Items)
	mux.HandleFunc("GET "+ArtifactV3Route+"/{id}/download", f.v3Download)
}

// v3URL is the URL of the run's artifact route with suffix.
func v3URL(req *http.Request, runID, suffix string) string {
	return fmt.Sprintf("http://%s/api/actions_pipeline/_apis/pipelines/workflows/%s/artifacts%s", req.Host, runID, suffix)
}

func (f *Forge) v3List(w http.ResponseWriter, req *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.v3Task(w, req)
	if t == nil {
		return
	}
	items := []map[string]string{}
	for _, a := range f.artifacts {
		if a.RunID == t.runID {
			items = append(items, map[string]string{"name": a.Name,
				"fileContainerResourceUrl": v3URL(req, t.runID, fmt.Sprintf("/%x/download_url", md5.Sum([]byte(a.Name))))})
		}
	}
	if len(items) == 0 {
		http.NotFound(w, req)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"count": len(items), "value": items})
}

func (f *Forge) v3Items(w http.ResponseWriter, req *http.Request) {
	name := req.URL.Query().Get("itemPath")
	if req.PathValue("hash") != fmt.Sprintf("%x", md5.Sum([]byte(name))) {
		http.Error(w, "Invalid artifact hash", http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.v3Task(w, req)
	if t == nil {
		return
	}
	a := f.artifactByName(t.runID, name)
	if a == nil {
		http.NotFound(w, req)
		return
	}
	paths := slices.Sorted(maps.Keys(a.Files))
	if a.Files == nil {
		paths = []string{name + ".zip"}
	}
	items := make([]map[string]string, 0, len(paths))
	for _, p := range paths {
		items = append(items, map[string]string{"path": name + "/" + p, "itemType": "file",
			"contentLocation": v3URL(req, t.runID, fmt.Sprintf("/%d/download?itemPath=%s", a.ID, url.QueryEscape(p)))})
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"value": items})
}

func (f *Forge) v3Download(w http.ResponseWriter, req *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.v3Task(w, req)
	if t == nil {
		return
	}
	var a *Artifact
	for _, c := range f.artifacts {
		if strconv.FormatInt(c.ID, 10) == req.PathValue("id") {
			a = c
		}
	}
	switch {
	case a == nil:
		http.NotFound(w, req)
		return
	case a.RunID != t.runID:
		http.Error(w, "Error mismatch runID and artifactID", http.StatusBadRequest)
		return
	}
	p := req.URL.Query().Get("itemPath")
	data, ok := a.Files[p]
	if a.Files == nil {
		data, ok = a.Data, p == a.Name+".zip"
	}
	if !ok {
		http.NotFound(w, req)
		return
	}
	if a.fileEncodings[p] == "gzip" {
		w.Header().Set("Content-Encoding", "gzip")
	}
	_, _ = w.Write(data)
}

// v3Task is the running task whose runtime token req carries and whose
// run the path names; f.mu must be held. It answers the error itself.
func (f *Forge) v3Task(w http.ResponseWriter, req *http.Request) *task {
	tok, ok := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer ")
	if !ok || tok == "" {
		http.Error(w, "Bad authorization header", http.StatusUnauthorized)
		return nil
	}
	for _, t := range f.tasks {
		if subtle.ConstantTimeCompare([]byte(t.runtimeToken), []byte(tok)) != 1 {
			continue
		}
		if t.status != statusRunning {
			http.Error(w, "Error runner api getting task", http.StatusInternalServerError)
			return nil
		}
		if req.PathValue("run") != t.runID {
			http.Error(w, "Error runID not match", http.StatusBadRequest)
			return nil
		}
		return t
	}
	http.Error(w, "Error runner api getting task", http.StatusInternalServerError)
	return nil
}

func (f *Forge) v3Create(w http.ResponseWriter, req *http.Request) {
	var body struct{ Type, Name string }
	if err := json.NewDecoder(io.LimitReader(req.Body, 1<<20)).Decode(&body); err != nil || body.Name == "" {
		http.Error(w, "Error decode request body", http.StatusInternalServerError)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.v3Task(w, req)
	if t == nil {
		return
	}
	u := fmt.Sprintf("http://%s/api/actions_pipeline/_apis/pipelines/workflows/%s/artifacts/%x/upload", req.Host, t.runID, md5.Sum([]byte(body.Name)))
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]string{"fileContainerResourceUrl": u})
}

func (f *Forge) v3Upload(w http.ResponseWriter, req *http.Request) {
	name, path, ok := strings.Cut(req.URL.Query().Get("itemPath"), "/")
	if !ok || name == "" || path == "" || req.PathValue("hash") != fmt.Sprintf("%x", md5.Sum([]byte(name))) {
		http.Error(w, "Error artifact item path", http.StatusBadRequest)
		return
	}
	start, end, total, err := v3Range(req.Header.Get("Content-Range"))
	body, rerr := io.ReadAll(io.LimitReader(req.Body, 64<<20))
	if err != nil || rerr != nil || int64(len(body)) != end-start+1 {
		http.Error(w, "Error get upload file size", http.StatusInternalServerError)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.v3Task(w, req)
	if t == nil {
		return
	}
	a := f.artifactByName(t.runID, name)
	if a == nil {
		a = &Artifact{ID: int64(len(f.artifacts) + 1), RunID: t.runID, Name: name}
		f.artifacts = append(f.artifacts, a)
	}
	a.TaskID = t.id
	if a.Files == nil {
		a.Files, a.fileSizes, a.fileEncodings = map[string][]byte{}, map[string]int64{}, map[string]string{}
	}
	a.fileEncodings[path] = req.Header.Get("Content-Encoding")
	data := a.Files[path]
	if int64(len(data)) < end+1 {
		data = append(data, make([]byte, end+1-int64(len(data)))...)
	}
	copy(data[start:], body)
	a.Files[path], a.fileSizes[path] = data, total
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"message":"success"}`)
}

func (f *Forge) v3Confirm(w http.ResponseWriter, req *http.Request) {
	name := req.URL.Query().Get("artifactName")
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.v3Task(w, req)
	if t == nil {
		return
	}
	a := f.artifactByName(t.runID, name)
	if name == "" || a == nil || len(a.Files) == 0 {
		http.Error(w, "Error merge chunks", http.StatusInternalServerError)
		return
	}
	for p, data := range a.Files {
		if int64(len(data)) != a.fileSizes[p] {
			http.Error(w, "Error merge chunks", http.StatusInternalServerError)
			return
		}
	}
	a.Confirmed = true
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"message":"success"}`)
}

// v3Range parses "bytes START-END/TOTAL" (END inclusive).
func v3Range(h string) (start, end, total int64, err error) {
	bad := fmt.Errorf("bad Content-Range %q", h)
	rest, ok := strings.CutPrefix(h, "bytes ")
	rng, tot, ok2 := strings.Cut(rest, "/")
	a, b, ok3 := strings.Cut(rng, "-")
	if !ok || !ok2 || !ok3 {
		return 0, 0, 0, bad
	}
	start, e1 := strconv.ParseInt(a, 10, 64)
	end, e2 := strconv.ParseInt(b, 10, 64)
	total, e3 := strconv.ParseInt(tot, 10, 64)
	if e1 != nil || e2 != nil || e3 != nil || start < 0 || end < start || end >= total || total > 64<<20 {
		return 0, 0, 0, bad
	}
	return start, end, total, nil
}
