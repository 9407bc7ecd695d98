package forgetest

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// LFSMediaType is the media type of Git LFS's JSON API: the batch request
// must accept it, and every JSON answer has it.
const LFSMediaType = "application/vnd.git-lfs+json"

// lfsMaxObject bounds one uploaded object (Gitea's LFS_MAX_FILE_SIZE is
// unlimited by default; a test forge holds its objects in memory).
const lfsMaxObject = 64 << 20

// LFSRequest is one request the forge's Git LFS server answered: its
// method, path and status, and whether it carried a running task's token.
type LFSRequest struct {
	Method, Path string
	Status       int
	Authed       bool
}

// LFSPointer returns the Git LFS pointer file of content (version, oid
// and size, as git-lfs writes it) and the object's id, the SHA-256 of
// content in hex.
func LFSPointer(content []byte) (pointer, oid string) {
	sum := sha256.Sum256(content)
	oid = hex.EncodeToString(sum[:])
	return fmt.Sprintf("version https://git-lfs.github.com/spec/v1\noid sha256:%s\nsize %d\n", oid, len(content)), oid
}

// AddLFSObject puts content in the forge's Git LFS store as an object of
// the repository repo ("owner/repo") and returns its pointer file: commit
// that (with a .gitattributes that names filter=lfs for its path) with
// [Forge.AddRepo] or [Forge.AddActionRepo], in either order. A pointer
// committed without its object is a missing object, which the batch API
// answers with a per-object 404.
func (f *Forge) AddLFSObject(repo string, content []byte) (string, error) {
	if owner, name, ok := strings.Cut(repo, "/"); !ok || owner == "" || name == "" || strings.Contains(name, "/") {
		return "", fmt.Errorf("forgetest: AddLFSObject(%q): want owner/repo", repo)
	}
	pointer, oid := LFSPointer(content)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lfsPut(repo, oid, content)
	return pointer, nil
}

// LFSRequests returns the requests the Git LFS server answered, in order.
func (f *Forge) LFSRequests() []LFSRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.lfsLog)
}

// lfsPut stores content as oid and links it to repo. f.mu is held.
func (f *Forge) lfsPut(repo, oid string, content []byte) {
	if f.lfsObjects == nil {
		f.lfsObjects = map[string][]byte{}
		f.lfsMeta = map[string]map[string]bool{}
	}
	f.lfsObjects[oid] = bytes.Clone(content)
	if f.lfsMeta[repo] == nil {
		f.lfsMeta[repo] = map[string]bool{}
	}
	f.lfsMeta[repo][oid] = true
}

// repoHandler serves the repositories' URLs: Git LFS under
// /{owner}/{repo}[.git]/info/lfs (see [Forge.lfsRoutes]), smart-HTTP git
// otherwise. The LFS routes live in a mux of their own: their wildcards
// would conflict with the main mux's prefix routes.
func (f *Forge) repoHandler() http.Handler {
	lfs := http.NewServeMux()
	f.lfsRoutes(lfs)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if parts := strings.SplitN(strings.TrimPrefix(r.URL.Path, "/"), "/", 5); len(parts) >= 4 && parts[2] == "info" && parts[3] == "lfs" {
			lfs.ServeHTTP(w, r)
			return
		}
		f.serveGit(w, r)
	})
}

// lfsRoutes serves Gitea's Git LFS server under each repository's
// /{owner}/{repo}[.git]/info/lfs: the batch API, the basic transfer's
// download and upload URLs, verify, and an empty lock list.
func (f *Forge) lfsRoutes(mux *http.ServeMux) {
	const base = "/{owner}/{repo}/info/lfs"
	mux.HandleFunc("POST "+base+"/objects/batch", f.lfsHandler(true, f.lfsBatch))
	mux.HandleFunc("PUT "+base+"/objects/{oid}/{size}", f.lfsHandler(false, f.lfsUpload))
	mux.HandleFunc("GET "+base+"/objects/{oid}/{filename}", f.lfsHandler(false, f.lfsDownload))
	mux.HandleFunc("GET "+base+"/objects/{oid}", f.lfsHandler(false, f.lfsDownload))
	mux.HandleFunc("POST "+base+"/verify", f.lfsHandler(true, f.lfsVerify))
	mux.HandleFunc("GET "+base+"/locks", f.lfsHandler(true, f.lfsLocks))
	mux.HandleFunc("POST "+base+"/locks/verify", f.lfsHandler(true, f.lfsLocks))
	mux.HandleFunc(base+"/", func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) })
}

// lfsCall is one request to the LFS server, with the repository it names
// and the task whose token it carries (nil without a running task's).
type lfsCall struct {
	repo string
	task *task
	auth string // the Authorization header, echoed into the actions
}

// lfsHandler wraps h with what every LFS route does first: the Accept
// check (415 when accept is set and the client does not accept the LFS
// media type, as Gitea's CheckAcceptMediaType), the repository (404 when
// the forge has none of that name), the task token (basic auth, as git
// sends it) and the request log.
func (f *Forge) lfsHandler(accept bool, h func(http.ResponseWriter, *http.Request, *lfsCall)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		c := &lfsCall{repo: r.PathValue("owner") + "/" + strings.TrimSuffix(r.PathValue("repo"), ".git"), auth: r.Header.Get("Authorization")}
		c.task = f.lfsTask(r)
		defer func() {
			f.mu.Lock()
			f.lfsLog = append(f.lfsLog, LFSRequest{Method: r.Method, Path: r.URL.Path, Status: rec.status, Authed: c.task != nil})
			f.mu.Unlock()
		}()
		if mt, _, _ := strings.Cut(r.Header.Get("Accept"), ";"); accept && strings.TrimSpace(mt) != LFSMediaType {
			lfsStatus(rec, http.StatusUnsupportedMediaType, "")
			return
		}
		if !f.repoExists(c.repo) {
			lfsStatus(rec, http.StatusNotFound, "")
			return
		}
		h(rec, r, c)
	}
}

// lfsTask is the running task whose token r's basic auth carries as its
// password (any user name), or nil.
func (f *Forge) lfsTask(r *http.Request) *task {
	u, p, ok := basicAuth(r)
	if !ok || u == "" || p == "" {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, t := range f.tasks {
		if subtle.ConstantTimeCompare([]byte(t.token), []byte(p)) == 1 && !t.status.isDone() {
			return t
		}
	}
	return nil
}

// repoExists reports whether the forge serves the repository name.
func (f *Forge) repoExists(name string) bool {
	f.mu.Lock()
	root := f.gitRoot
	f.mu.Unlock()
	if root == "" || !filepath.IsLocal(name) {
		return false
	}
	fi, err := os.Stat(filepath.Join(root, filepath.FromSlash(name)+".git"))
	return err == nil && fi.IsDir()
}

// allowed reports whether c may read (or, with write, write) the
// repository's LFS objects, and answers 401 otherwise, as Gitea does for
// an actions token it refuses, a read-only one (a fork's pull request)
// asking to write included.
func (c *lfsCall) allowed(w http.ResponseWriter, write bool) bool {
	if c.task != nil && (!write || !c.task.job.ReadOnlyToken) {
		return true
	}
	w.Header().Set("WWW-Authenticate", "Basic realm=gitea-lfs")
	lfsStatus(w, http.StatusUnauthorized, "")
	return false
}

type lfsPointer struct {
	Oid  string `json:"oid"`
	Size int64  `json:"size"`
}

// valid is Gitea's check of a pointer: a SHA-256 in lower-case hex and a
// size of at least 0.
func (p lfsPointer) valid() bool {
	if len(p.Oid) != 64 || p.Size < 0 {
		return false
	}
	for _, c := range p.Oid {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

type lfsLink struct {
	Href   string            `json:"href"`
	Header map[string]string `json:"header,omitempty"`
}

type lfsObjectError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

type lfsObject struct {
	lfsPointer
	Actions map[string]*lfsLink `json:"actions,omitempty"`
	Error   *lfsObjectError     `json:"error,omitempty"`
}

// lfsBatch answers the batch API: for a download, a download action per
// object the repository has (or a per-object 404); for an upload, upload
// and verify actions per object it does not have yet (none for one it
// has). A malformed pointer gets a per-object 422, as does a size other
// than the stored object's.
func (f *Forge) lfsBatch(w http.ResponseWriter, r *http.Request, c *lfsCall) {
	var req struct {
		Operation string       `json:"operation"`
		Objects   []lfsPointer `json:"objects"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil {
		lfsStatus(w, http.StatusBadRequest, "")
		return
	}
	if req.Operation != "download" && req.Operation != "upload" {
		lfsStatus(w, http.StatusBadRequest, "")
		return
	}
	upload := req.Operation == "upload"
	if !c.allowed(w, upload) {
		return
	}
	objects := make([]lfsObject, 0, len(req.Objects))
	for _, p := range req.Objects {
		objects = append(objects, f.lfsAnswer(c, p, upload))
	}
	w.Header().Set("Content-Type", LFSMediaType)
	_ = json.NewEncoder(w).Encode(map[string]any{"objects": objects})
}

// lfsAnswer is the batch answer for the object p.
func (f *Forge) lfsAnswer(c *lfsCall, p lfsPointer, upload bool) lfsObject {
	o := lfsObject{lfsPointer: p}
	if !p.valid() {
		o.Error = &lfsObjectError{Code: http.StatusUnprocessableEntity, Message: "Oid or size are invalid"}
		return o
	}
	f.mu.Lock()
	content, exists := f.lfsObjects[p.Oid]
	linked := f.lfsMeta[c.repo][p.Oid]
	f.mu.Unlock()
	if linked && int64(len(content)) != p.Size {
		o.Error = &lfsObjectError{Code: http.StatusUnprocessableEntity, Message: fmt.Sprintf("Object %s is not %d bytes", p.Oid, p.Size)}
		return o
	}
	header := map[string]string{}
	if c.auth != "" {
		header["Authorization"] = c.auth
	}
	objectURL := f.URL() + "/" + c.repo + ".git/info/lfs/objects/" + p.Oid
	switch {
	case !upload && !(exists && linked):
		o.Error = &lfsObjectError{Code: http.StatusNotFound, Message: http.StatusText(http.StatusNotFound)}
	case !upload:
		o.Actions = map[string]*lfsLink{"download": {Href: objectURL, Header: header}}
	case !(exists && linked):
		verify := map[string]string{"Accept": LFSMediaType}
		for k, v := range header {
			verify[k] = v
		}
		o.Actions = map[string]*lfsLink{
			"upload": {Href: objectURL + "/" + strconv.FormatInt(p.Size, 10), Header: header},
			"verify": {Href: f.URL() + "/" + c.repo + ".git/info/lfs/verify", Header: verify},
		}
	}
	return o
}

// lfsDownload sends an object of the repository, with Range support.
func (f *Forge) lfsDownload(w http.ResponseWriter, r *http.Request, c *lfsCall) {
	p := lfsPointer{Oid: r.PathValue("oid")}
	if !p.valid() {
		lfsStatus(w, http.StatusUnprocessableEntity, "Oid or size are invalid")
		return
	}
	if !c.allowed(w, false) {
		return
	}
	f.mu.Lock()
	content, exists := f.lfsObjects[p.Oid]
	linked := f.lfsMeta[c.repo][p.Oid]
	f.mu.Unlock()
	if !exists || !linked {
		lfsStatus(w, http.StatusNotFound, "")
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(content))
}

// lfsUpload stores an uploaded object after checking its size and hash
// (422 when they do not match the URL's).
func (f *Forge) lfsUpload(w http.ResponseWriter, r *http.Request, c *lfsCall) {
	p := lfsPointer{Oid: r.PathValue("oid")}
	size, err := strconv.ParseInt(r.PathValue("size"), 10, 64)
	p.Size = size
	if err != nil || !p.valid() || size > lfsMaxObject {
		lfsStatus(w, http.StatusUnprocessableEntity, "Oid or size are invalid")
		return
	}
	if !c.allowed(w, true) {
		return
	}
	content, err := io.ReadAll(io.LimitReader(r.Body, size+1))
	if err != nil {
		lfsStatus(w, http.StatusInternalServerError, "")
		return
	}
	sum := sha256.Sum256(content)
	switch {
	case int64(len(content)) != size:
		lfsStatus(w, http.StatusUnprocessableEntity, "content size does not match")
		return
	case hex.EncodeToString(sum[:]) != p.Oid:
		lfsStatus(w, http.StatusUnprocessableEntity, "content hash does not match OID")
		return
	}
	f.mu.Lock()
	f.lfsPut(c.repo, p.Oid, content)
	f.mu.Unlock()
	lfsStatus(w, http.StatusOK, "")
}

// lfsVerify answers 200 when the repository has the object of the
// posted pointer at its size, else 404.
func (f *Forge) lfsVerify(w http.ResponseWriter, r *http.Request, c *lfsCall) {
	var p lfsPointer
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&p); err != nil || !p.valid() {
		lfsStatus(w, http.StatusUnprocessableEntity, "Oid or size are invalid")
		return
	}
	if !c.allowed(w, true) {
		return
	}
	f.mu.Lock()
	content, exists := f.lfsObjects[p.Oid]
	linked := f.lfsMeta[c.repo][p.Oid]
	f.mu.Unlock()
	if !exists || !linked || int64(len(content)) != p.Size {
		lfsStatus(w, http.StatusNotFound, "")
		return
	}
	lfsStatus(w, http.StatusOK, "")
}

// lfsLocks answers the lock list and the lock check of a push: the fake
// holds no locks.
func (f *Forge) lfsLocks(w http.ResponseWriter, r *http.Request, c *lfsCall) {
	if !c.allowed(w, r.Method == http.MethodPost) {
		return
	}
	w.Header().Set("Content-Type", LFSMediaType)
	if r.Method == http.MethodPost {
		_, _ = io.WriteString(w, `{"ours":[],"theirs":[]}`+"\n")
		return
	}
	_, _ = io.WriteString(w, `{"locks":[]}`+"\n")
}

// lfsStatus writes Gitea's LFS error shape: the LFS media type and
// {"message": message}, the status text when message is empty.
func lfsStatus(w http.ResponseWriter, status int, message string) {
	if message == "" {
		message = http.StatusText(status)
	}
	w.Header().Set("Content-Type", LFSMediaType)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"message": message})
}

// statusRecorder keeps the status a handler wrote.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}
