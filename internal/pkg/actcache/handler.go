package actcache

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// maxJSONBody bounds the JSON body of a reserve or commit.
const maxJSONBody = 64 << 10

// apiPrefix is where the API lives under a grant's token.
const apiPrefix = "/{token}/_apis/artifactcache/"

func (s *Server) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+apiPrefix+"cache", s.scoped(s.lookup))
	mux.HandleFunc("POST "+apiPrefix+"caches", s.scoped(s.reserve))
	mux.HandleFunc("PATCH "+apiPrefix+"caches/{id}", s.scoped(s.uploadChunk))
	mux.HandleFunc("POST "+apiPrefix+"caches/{id}", s.scoped(s.commit))
	mux.HandleFunc("GET "+apiPrefix+"artifacts/{id}", s.scoped(s.download))
	return mux
}

// scoped runs h with the repository of the request's token; an unknown or
// revoked token is refused.
func (s *Server) scoped(h func(w http.ResponseWriter, r *http.Request, repo string)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		repo, ok := s.repository(r.PathValue("token"))
		if !ok {
			fail(w, http.StatusForbidden, "this cache URL is unknown or its job has ended; a job gets its own in ACTIONS_CACHE_URL")
			return
		}
		h(w, r, repo)
	}
}

type errorBody struct {
	Message string `json:"message"`
}

func fail(w http.ResponseWriter, code int, format string, args ...any) {
	reply(w, code, errorBody{Message: fmt.Sprintf(format, args...)})
}

func reply(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// hit is the answer to a lookup that found an entry.
type hit struct {
	CacheKey        string `json:"cacheKey"`
	CacheVersion    string `json:"cacheVersion"`
	Scope           string `json:"scope"`
	CreationTime    string `json:"creationTime"`
	ArchiveLocation string `json:"archiveLocation"`
}

// lookup answers GET cache?keys=&version=: 200 with the entry, or 204.
func (s *Server) lookup(w http.ResponseWriter, r *http.Request, repo string) {
	q := r.URL.Query()
	keys, err := parseKeys(q.Get("keys"))
	if err != nil {
		fail(w, http.StatusBadRequest, "%v", err)
		return
	}
	version := q.Get("version")
	if err := checkKey("version", version); err != nil {
		fail(w, http.StatusBadRequest, "%v", err)
		return
	}
	e := s.store.find(repo, keys, version)
	if e == nil {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	reply(w, http.StatusOK, hit{
		CacheKey:        e.Key,
		CacheVersion:    e.Version,
		Scope:           repo,
		CreationTime:    e.Created.UTC().Format(time.RFC3339),
		ArchiveLocation: s.base + r.PathValue("token") + "/_apis/artifactcache/artifacts/" + strconv.FormatInt(e.ID, 10),
	})
}

type reserveRequest struct {
	Key       string `json:"key"`
	Version   string `json:"version"`
	CacheSize int64  `json:"cacheSize"`
}

// reserve answers POST caches: it starts an upload and returns its id.
func (s *Server) reserve(w http.ResponseWriter, r *http.Request, repo string) {
	var req reserveRequest
	if !readJSON(w, r, &req) {
		return
	}
	for _, c := range []struct{ field, v string }{{"key", req.Key}, {"version", req.Version}} {
		if err := checkKey(c.field, c.v); err != nil {
			fail(w, http.StatusBadRequest, "%v", err)
			return
		}
	}
	if strings.Contains(req.Key, ",") {
		fail(w, http.StatusBadRequest, "key %q has a comma, which separates the keys of a lookup; take it out", clip(req.Key))
		return
	}
	if req.CacheSize < 0 || req.CacheSize > s.store.maxRepo {
		fail(w, http.StatusBadRequest, "cacheSize %d is not from 0 to the %d bytes one repository may hold (cache.max_repo_mb)", req.CacheSize, s.store.maxRepo)
		return
	}
	id, err := s.store.reserve(r.PathValue("token"), repo, req.Key, req.Version, req.CacheSize, s.now())
	switch {
	case errors.Is(err, errConflict):
		fail(w, http.StatusConflict, "the cache entry %q (this version) exists or is being uploaded by another job", clip(req.Key))
	case errors.Is(err, errBusy):
		fail(w, http.StatusTooManyRequests, "%d uploads are in flight, the most the runner takes; try again later", MaxUploads)
	case err != nil:
		fail(w, http.StatusInternalServerError, "%v", err)
	default:
		reply(w, http.StatusOK, map[string]int64{"cacheId": id})
	}
}

// upload returns the upload the request's {id} names, if its token made it.
func (s *Server) upload(w http.ResponseWriter, r *http.Request) *entry {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	var e *entry
	if err == nil {
		e = s.store.upload(r.PathValue("token"), id)
	}
	if e == nil {
		fail(w, http.StatusNotFound, "no upload %q of this job is in progress (reserve one with POST caches)", clip(r.PathValue("id")))
	}
	return e
}

// uploadChunk answers PATCH caches/{id}: one chunk, at its Content-Range.
func (s *Server) uploadChunk(w http.ResponseWriter, r *http.Request, _ string) {
	e := s.upload(w, r)
	if e == nil {
		return
	}
	start, end, err := parseContentRange(r.Header.Get("Content-Range"))
	if err != nil {
		fail(w, http.StatusBadRequest, "%v", err)
		return
	}
	if err := s.store.claim(e, start, end); err != nil {
		fail(w, http.StatusBadRequest, "chunk %s: %v", r.Header.Get("Content-Range"), err)
		return
	}
	ok := false
	defer func() { s.store.release(e, start, end, ok) }()
	if err := s.writeChunk(e.ID, start, end, r.Body); err != nil {
		fail(w, http.StatusBadRequest, "chunk %s: %v", r.Header.Get("Content-Range"), err)
		return
	}
	ok = true
	w.WriteHeader(http.StatusNoContent)
}

// writeChunk writes exactly end-start bytes of body at start of upload id.
func (s *Server) writeChunk(id, start, end int64, body io.Reader) error {
	f, err := openPart(s.store.partPath(id))
	if err != nil {
		return err
	}
	defer f.Close()
	want := end - start
	n, err := io.Copy(io.NewOffsetWriter(f, start), io.LimitReader(body, want+1))
	if err != nil {
		return fmt.Errorf("read the chunk: %w", err)
	}
	if n != want {
		return fmt.Errorf("the body has %d bytes or more, the range says %d", n, want)
	}
	return nil
}

type commitRequest struct {
	Size int64 `json:"size"`
}

// commit answers POST caches/{id}: the upload becomes an entry.
func (s *Server) commit(w http.ResponseWriter, r *http.Request, _ string) {
	e := s.upload(w, r)
	if e == nil {
		return
	}
	var req commitRequest
	if !readJSON(w, r, &req) {
		return
	}
	if req.Size < 0 || req.Size > s.store.maxRepo {
		fail(w, http.StatusBadRequest, "size %d is not from 0 to the %d bytes one repository may hold (cache.max_repo_mb)", req.Size, s.store.maxRepo)
		return
	}
	if err := s.store.commit(e, req.Size); err != nil {
		fail(w, http.StatusBadRequest, "commit upload %d: %v", e.ID, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// download answers GET artifacts/{id} with the entry's data (ranges too).
func (s *Server) download(w http.ResponseWriter, r *http.Request, repo string) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		fail(w, http.StatusNotFound, "no cache entry %q", clip(r.PathValue("id")))
		return
	}
	f, e, err := s.store.open(repo, id)
	if err != nil {
		fail(w, http.StatusNotFound, "no cache entry %d for this repository", id)
		return
	}
	defer f.Close()
	w.Header().Set("Content-Type", "application/octet-stream")
	http.ServeContent(w, r, "", e.Created, f)
}

// readJSON decodes r's body, at most maxJSONBody bytes, into v.
func readJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxJSONBody))
	if err := dec.Decode(v); err != nil {
		fail(w, http.StatusBadRequest, "the body is not the JSON object this call takes (at most %d bytes): %v", maxJSONBody, err)
		return false
	}
	return true
}
