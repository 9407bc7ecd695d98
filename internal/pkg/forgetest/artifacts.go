package forgetest

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// ArtifactRoute is where Gitea serves the artifact protocol of
// actions/upload-artifact@v4 (a Twirp JSON service).
const ArtifactRoute = "/twirp/github.actions.results.api.v1.ArtifactService/"

// expiresLayout is how Gitea writes the expiry of a signed artifact URL.
const expiresLayout = "2006-01-02 15:04:05.999999999 -0700 MST"

// Artifact is one artifact a task uploaded, as the forge stores it.
type Artifact struct {
	ID int64
	// TaskID is the task that uploaded it last: the forge keeps one
	// artifact per RunID and Name, whichever job of the run wrote it.
	TaskID int64
	RunID  string
	Name   string
	// Data is the uploaded content (a zip for upload-artifact@v4); Size
	// its length as finalized.
	Data []byte
	Size int64
	// Confirmed is set by a successful FinalizeArtifact: the size and
	// the sha256 matched.
	Confirmed bool
	// Files are the files of an artifact uploaded with the v3 protocol
	// (upload-artifact@v3), by path inside it; nil for v4.
	Files map[string][]byte

	fileSizes     map[string]int64  // v3: each file's announced size
	fileEncodings map[string]string // v3: each file's Content-Encoding (gzip)
	blocks        map[string][]byte
	order         []string
	created       time.Time
}

// Artifacts returns copies of every artifact created so far, in creation
// order.
func (f *Forge) Artifacts() []Artifact {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]Artifact, 0, len(f.artifacts))
	for _, a := range f.artifacts {
		c := *a
		c.Data = append([]byte(nil), a.Data...)
		c.blocks, c.order, c.fileSizes, c.fileEncodings, c.Files = nil, nil, nil, nil, nil
		for p, d := range a.Files {
			if c.Files == nil {
				c.Files = map[string][]byte{}
			}
			c.Files[p] = append([]byte(nil), d...)
		}
		out = append(out, c)
	}
	return out
}

// RefuseArtifacts makes CreateArtifact answer with HTTP status code (for
// example 500, or 403 as for a repository without artifact storage); 0
// accepts uploads again.
func (f *Forge) RefuseArtifacts(code int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.artifactRefusal = code
}

// handleArtifacts serves Gitea's v4 artifact endpoints: CreateArtifact,
// FinalizeArtifact, ListArtifacts and GetSignedArtifactURL with the task's
// runtime token (the task must be running, and workflow_run_backend_id its
// run), UploadArtifact at the HMAC-signed URL CreateArtifact returns
// (comp=block or appendBlock without a blockid appends, with one stores a
// block, and comp=blocklist orders the blocks) and DownloadArtifact at the
// one GetSignedArtifactURL returns, signed for the asking task. Finalize
// checks the size and, when given, the sha256. As in Gitea, List and
// GetSignedArtifactURL see only the run's finalized v4 artifacts (the
// list filtered by name_filter and id_filter when given).
func (f *Forge) handleArtifacts(w http.ResponseWriter, req *http.Request) {
	switch method := strings.TrimPrefix(req.URL.Path, ArtifactRoute); {
	case method == "UploadArtifact" && req.Method == http.MethodPut:
		f.uploadArtifact(w, req)
	case method == "DownloadArtifact" && req.Method == http.MethodGet:
		f.downloadArtifact(w, req)
	case req.Method == http.MethodPost && (method == "CreateArtifact" || method == "FinalizeArtifact" ||
		method == "ListArtifacts" || method == "GetSignedArtifactURL"):
		f.artifactRPC(w, req, method)
	default:
		http.NotFound(w, req)
	}
}

// artifactRequest holds the fields of CreateArtifactRequest and
// FinalizeArtifactRequest; protojson accepts both field-name spellings.
type artifactRequest struct {
	RunID, JobID string
	Name         string
	Size         int64
	Hash         string
	HasRun       bool
	// NameFilter and IDFilter are ListArtifacts' (wrappers, so a plain
	// value in JSON); "" when not given.
	NameFilter, IDFilter string
}

func decodeArtifactRequest(b []byte) (artifactRequest, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return artifactRequest{}, err
	}
	get := func(keys ...string) string {
		for _, k := range keys {
			if v, ok := m[k]; ok {
				var s string
				if json.Unmarshal(v, &s) == nil {
					return s
				}
				return strings.Trim(string(v), `"`)
			}
		}
		return ""
	}
	r := artifactRequest{RunID: get("workflow_run_backend_id", "workflowRunBackendId"), Name: get("name"), Hash: get("hash"),
		JobID:      get("workflow_job_run_backend_id", "workflowJobRunBackendId"),
		NameFilter: get("name_filter", "nameFilter"), IDFilter: get("id_filter", "idFilter")}
	r.HasRun = r.RunID != ""
	if s := get("size"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return artifactRequest{}, fmt.Errorf("size %q: %w", s, err)
		}
		r.Size = n
	}
	return r, nil
}

func (f *Forge) artifactRPC(w http.ResponseWriter, req *http.Request, method string) {
	tok, ok := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer ")
	body, err := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	if !ok || tok == "" || err != nil {
		http.Error(w, "missing bearer runtime token", http.StatusUnauthorized)
		return
	}
	ar, err := decodeArtifactRequest(body)
	if err != nil {
		http.Error(w, "Error decode request body", http.StatusInternalServerError)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var t *task
	for _, c := range f.tasks {
		if subtle.ConstantTimeCompare([]byte(c.runtimeToken), []byte(tok)) == 1 {
			t = c
		}
	}
	switch {
	case t == nil:
		http.Error(w, "Bad authorization header", http.StatusUnauthorized)
		return
	case t.status != statusRunning:
		http.Error(w, "Error runner api getting task: task is not running", http.StatusInternalServerError)
		return
	case !ar.HasRun || ar.RunID != t.runID:
		http.Error(w, "Error runID not match", http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json;charset=utf-8")
	switch method {
	case "CreateArtifact":
		f.createArtifact(w, req, t, ar)
	case "FinalizeArtifact":
		f.finalizeArtifact(w, t, ar)
	case "ListArtifacts":
		f.listArtifacts(w, t, ar)
	default:
		f.signedDownloadURL(w, req, t, ar)
	}
}

// createArtifact starts the artifact ar names over; f.mu is held.
func (f *Forge) createArtifact(w http.ResponseWriter, req *http.Request, t *task, ar artifactRequest) {
	if f.artifactRefusal != 0 {
		http.Error(w, "Error create or get artifact", f.artifactRefusal)
		return
	}
	a := f.artifactByName(t.runID, ar.Name)
	if a == nil {
		a = &Artifact{ID: int64(len(f.artifacts) + 1), RunID: t.runID, Name: ar.Name}
		f.artifacts = append(f.artifacts, a)
	}
	// Gitea keeps one artifact per run and name: a second job of the
	// run that uploads the same name starts it over.
	a.TaskID, a.created = t.id, f.now()
	a.Data, a.Size, a.Confirmed, a.blocks, a.order = nil, 0, false, nil, nil
	a.Files, a.fileSizes, a.fileEncodings = nil, nil, nil
	_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "signedUploadUrl": f.signedArtifactURL(req, "UploadArtifact", a, t.id)})
}

// finalizeArtifact joins the blocks and checks the size and hash; f.mu is
// held.
func (f *Forge) finalizeArtifact(w http.ResponseWriter, t *task, ar artifactRequest) {
	a := f.artifactByName(t.runID, ar.Name)
	if a == nil {
		http.Error(w, "Error artifact not found", http.StatusNotFound)
		return
	}
	if len(a.order) > 0 {
		a.Data = nil
		for _, id := range a.order {
			a.Data = append(a.Data, a.blocks[id]...)
		}
	}
	if ar.Size != int64(len(a.Data)) {
		http.Error(w, "Error merge chunks size mismatch", http.StatusInternalServerError)
		return
	}
	if sum, ok := strings.CutPrefix(ar.Hash, "sha256:"); ok {
		got := sha256.Sum256(a.Data)
		if hex.EncodeToString(got[:]) != sum {
			http.Error(w, "Error merge chunks: checksum mismatch", http.StatusInternalServerError)
			return
		}
	}
	a.Size, a.Confirmed = ar.Size, true
	_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "artifactId": strconv.FormatInt(a.ID, 10)})
}

// v4Artifact is the run's finalized v4 artifact of that name, or nil.
func (f *Forge) v4Artifact(runID, name string) *Artifact {
	a := f.artifactByName(runID, name)
	if a == nil || !a.Confirmed || a.Files != nil {
		return nil
	}
	return a
}

// listArtifacts answers ListArtifacts (int64 fields as strings, as
// protojson writes them); f.mu is held.
func (f *Forge) listArtifacts(w http.ResponseWriter, t *task, ar artifactRequest) {
	list := []map[string]any{}
	for _, a := range f.artifacts {
		if a.RunID != t.runID || f.v4Artifact(a.RunID, a.Name) != a ||
			ar.NameFilter != "" && a.Name != ar.NameFilter || ar.IDFilter != "" && strconv.FormatInt(a.ID, 10) != ar.IDFilter {
			continue
		}
		list = append(list, map[string]any{
			"workflowRunBackendId": ar.RunID, "workflowJobRunBackendId": ar.JobID,
			"databaseId": strconv.FormatInt(a.ID, 10), "name": a.Name, "size": strconv.FormatInt(a.Size, 10),
			"createdAt": a.created.UTC().Format(time.RFC3339Nano),
		})
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"artifacts": list})
}

// signedDownloadURL answers GetSignedArtifactURL with a DownloadArtifact
// URL signed for the asking task; f.mu is held.
func (f *Forge) signedDownloadURL(w http.ResponseWriter, req *http.Request, t *task, ar artifactRequest) {
	a := f.v4Artifact(t.runID, ar.Name)
	if a == nil {
		http.Error(w, "Error artifact not found", http.StatusNotFound)
		return
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"signedUrl": f.signedArtifactURL(req, "DownloadArtifact", a, t.id)})
}

// artifactByName finds the artifact of run runID with that name: Gitea
// keys artifacts by run and name, not by job.
func (f *Forge) artifactByName(runID, name string) *Artifact {
	for _, a := range f.artifacts {
		if a.RunID == runID && a.Name == name {
			return a
		}
	}
	return nil
}

func (f *Forge) artifactSig(endpoint, expires, name string, taskID, artifactID int64) []byte {
	mac := hmac.New(sha256.New, f.jwtKey)
	fmt.Fprint(mac, endpoint, expires, name, taskID, artifactID)
	return mac.Sum(nil)
}

// signedArtifactURL builds an upload or download URL as Gitea does: the
// endpoint with sig, expires (an hour), artifactName, taskID (the task
// that asked) and artifactID.
func (f *Forge) signedArtifactURL(req *http.Request, endpoint string, a *Artifact, taskID int64) string {
	expires := f.now().Add(time.Hour).Format(expiresLayout)
	q := "sig=" + base64.RawURLEncoding.EncodeToString(f.artifactSig(endpoint, expires, a.Name, taskID, a.ID)) +
		"&expires=" + url.QueryEscape(expires) + "&artifactName=" + url.QueryEscape(a.Name) +
		"&taskID=" + strconv.FormatInt(taskID, 10) + "&artifactID=" + strconv.FormatInt(a.ID, 10)
	return "http://" + req.Host + ArtifactRoute + endpoint + "?" + q
}

// checkSignedURL checks the signature and expiry of a signed URL for
// endpoint and returns the task id and artifact id it names; it answers
// the error itself.
func (f *Forge) checkSignedURL(w http.ResponseWriter, req *http.Request, endpoint string) (taskID, artifactID int64, ok bool) {
	q := req.URL.Query()
	sig, err1 := base64.RawURLEncoding.DecodeString(q.Get("sig"))
	taskID, err2 := strconv.ParseInt(q.Get("taskID"), 10, 64)
	artifactID, err3 := strconv.ParseInt(q.Get("artifactID"), 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		http.Error(w, "Error decoding signature values", http.StatusBadRequest)
		return 0, 0, false
	}
	if !hmac.Equal(sig, f.artifactSig(endpoint, q.Get("expires"), q.Get("artifactName"), taskID, artifactID)) {
		http.Error(w, "Error unauthorized", http.StatusUnauthorized)
		return 0, 0, false
	}
	if exp, err := time.Parse(expiresLayout, q.Get("expires")); err != nil || exp.Before(f.now()) {
		http.Error(w, "Error link expired", http.StatusUnauthorized)
		return 0, 0, false
	}
	return taskID, artifactID, true
}

// signedTask is the running task a signed URL names; f.mu is held. It
// answers the error itself.
func (f *Forge) signedTask(w http.ResponseWriter, taskID int64) *task {
	t := f.tasks[taskID]
	if t == nil || t.status != statusRunning {
		http.Error(w, "Error runner api getting task: task is not running", http.StatusInternalServerError)
		return nil
	}
	return t
}

// downloadArtifact serves a finalized v4 artifact's zip at the URL
// GetSignedArtifactURL signed, while the task that asked runs.
func (f *Forge) downloadArtifact(w http.ResponseWriter, req *http.Request) {
	taskID, _, ok := f.checkSignedURL(w, req, "DownloadArtifact")
	if !ok {
		return
	}
	f.mu.Lock()
	t := f.signedTask(w, taskID)
	var data []byte
	if t != nil {
		if a := f.v4Artifact(t.runID, req.URL.Query().Get("artifactName")); a != nil {
			data = a.Data
		}
	}
	f.mu.Unlock()
	switch {
	case t == nil:
	case data == nil:
		http.Error(w, "Error artifact not found", http.StatusNotFound)
	default:
		_, _ = w.Write(data)
	}
}

func (f *Forge) uploadArtifact(w http.ResponseWriter, req *http.Request) {
	taskID, artifactID, ok := f.checkSignedURL(w, req, "UploadArtifact")
	if !ok {
		return
	}
	q := req.URL.Query()
	body, err := io.ReadAll(io.LimitReader(req.Body, 64<<20))
	if err != nil {
		http.Error(w, "Error uploading block blob", http.StatusInternalServerError)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.signedTask(w, taskID)
	if t == nil {
		return
	}
	a := f.artifactByName(t.runID, q.Get("artifactName"))
	if a == nil || a.ID != artifactID {
		http.Error(w, "Error artifact not found", http.StatusNotFound)
		return
	}
	switch q.Get("comp") {
	case "block", "appendBlock":
		if id := q.Get("blockid"); id != "" {
			if a.blocks == nil {
				a.blocks = map[string][]byte{}
			}
			a.blocks[id] = body
		} else {
			a.Data = append(a.Data, body...)
		}
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `"appended"`)
	case "blocklist":
		var bl struct {
			Latest []string `xml:"Latest"`
		}
		if err := xml.Unmarshal(body, &bl); err != nil {
			http.Error(w, "Error uploading blocklist", http.StatusInternalServerError)
			return
		}
		a.order = bl.Latest
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `"created"`)
	default:
		http.Error(w, "unknown comp", http.StatusBadRequest)
	}
}
