package actcache

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Bounds of what a job may ask of the server.
const (
	// DefaultMaxBytes bounds the sum of the entries when Options.MaxBytes
	// is 0.
	DefaultMaxBytes = 2 << 30
	// DefaultMaxEntries bounds the number of entries when
	// Options.MaxEntries is 0.
	DefaultMaxEntries = 5000
	// MaxKeyLen bounds a key (as the toolkit does) and a version.
	MaxKeyLen = 512
	// MaxKeys bounds the keys of one lookup: the key and up to 15
	// restore-keys (the toolkit allows 10).
	MaxKeys = 16
	// MaxUploads bounds the uploads reserved and not yet committed.
	MaxUploads = 64
	// MaxChunks bounds the chunks of one upload.
	MaxChunks = 100000
)

// entry is one cache entry: committed, or being uploaded.
type entry struct {
	ID      int64     `json:"id"`
	Repo    string    `json:"repo"`
	Key     string    `json:"key"`
	Version string    `json:"version"`
	Size    int64     `json:"size"`
	Created time.Time `json:"created"`
	// Used orders entries by last use: the least is evicted first.
	Used uint64 `json:"used"`

	// While uploading (never persisted): the grant that reserved it, the
	// size it announced (0: unknown) and the byte ranges written, end
	// exclusive.
	token    string
	announce int64
	ranges   [][2]int64
	writing  int // chunks being written
	done     bool
}

// store is the index of entries and their files. Its methods lock mu;
// none holds it during file I/O of an entry's data.
type store struct {
	dir        string
	maxBytes   int64
	maxRepo    int64 // bound of one repository's entries
	maxEntries int

	mu      sync.Mutex
	entries map[int64]*entry
	nextID  int64
	seq     uint64 // the last Used handed out
	used    int64  // bytes of the committed entries
	writing int64  // bytes claimed by uploads not committed
	uploads int    // entries reserved and not committed
}

type indexFile struct {
	NextID  int64    `json:"next_id"`
	Seq     uint64   `json:"seq"`
	Entries []*entry `json:"entries"`
}

// openStore opens (making it if need be) the store in dir: it loads the
// index, drops entries whose file is gone, and removes files no entry
// names and every unfinished upload.
func openStore(dir string, maxBytes, maxRepo int64, maxEntries int) (*store, error) {
	s := &store{dir: dir, maxBytes: maxBytes, maxRepo: maxRepo, maxEntries: maxEntries, entries: map[int64]*entry{}, nextID: 1}
	for _, d := range []string{s.blobDir(), s.partDir()} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("cache directory: %w; set cache.dir to a directory this user can write", err)
		}
	}
	if err := s.loadIndex(); err != nil {
		return nil, err
	}
	parts, _ := os.ReadDir(s.partDir())
	for _, p := range parts {
		_ = os.Remove(filepath.Join(s.partDir(), p.Name()))
	}
	blobs, _ := os.ReadDir(s.blobDir())
	for _, b := range blobs {
		id, err := strconv.ParseInt(b.Name(), 10, 64)
		if e := s.entries[id]; err != nil || e == nil {
			_ = os.RemoveAll(filepath.Join(s.blobDir(), b.Name()))
		}
	}
	for id, e := range s.entries {
		fi, err := os.Stat(s.blobPath(id))
		if err != nil || fi.Size() != e.Size {
			delete(s.entries, id)
			continue
		}
		s.used += e.Size
	}
	s.evictLocked()
	return s, s.saveLocked()
}

func (s *store) blobDir() string   { return filepath.Join(s.dir, "blobs") }
func (s *store) partDir() string   { return filepath.Join(s.dir, "parts") }
func (s *store) indexPath() string { return filepath.Join(s.dir, "index.json") }
func (s *store) blobPath(id int64) string {
	return filepath.Join(s.blobDir(), strconv.FormatInt(id, 10))
}
func (s *store) partPath(id int64) string {
	return filepath.Join(s.partDir(), strconv.FormatInt(id, 10))
}
func (s *store) touchLocked(e *entry)    { s.seq++; e.Used = s.seq }
func (s *store) committed(e *entry) bool { return e != nil && e.done }
func sameEntry(e *entry, repo, key, version string) bool {
	return e.Repo == repo && e.Key == key && e.Version == version
}

func (s *store) loadIndex() error {
	data, err := os.ReadFile(s.indexPath())
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read cache index: %w", err)
	}
	var idx indexFile
	if err := json.Unmarshal(data, &idx); err != nil {
		// A torn index loses the cache, not the runner: start empty.
		return nil
	}
	for _, e := range idx.Entries {
		if e == nil || e.ID <= 0 || e.Size < 0 {
			continue
		}
		e.done = true
		s.entries[e.ID] = e
		s.nextID = max(s.nextID, e.ID+1)
		s.seq = max(s.seq, e.Used)
	}
	s.nextID = max(s.nextID, idx.NextID)
	s.seq = max(s.seq, idx.Seq)
	return nil
}

// saveLocked writes the index of the committed entries, atomically.
func (s *store) saveLocked() error {
	idx := indexFile{NextID: s.nextID, Seq: s.seq}
	for _, e := range s.entries {
		if e.done {
			idx.Entries = append(idx.Entries, e)
		}
	}
	sort.Slice(idx.Entries, func(a, b int) bool { return idx.Entries[a].ID < idx.Entries[b].ID })
	data, err := json.Marshal(idx)
	if err != nil {
		return fmt.Errorf("encode cache index: %w", err)
	}
	tmp := s.indexPath() + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return fmt.Errorf("write cache index: %w", err)
	}
	if err := os.Rename(tmp, s.indexPath()); err != nil {
		return fmt.Errorf("write cache index: %w", err)
	}
	return nil
}

// find returns the committed entry of repo that keys and version select:
// for each key in turn, the entry with that exact key, else the newest
// whose key starts with it. It marks the entry used.
func (s *store) find(repo string, keys []string, version string) *entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range keys {
		var best *entry
		for _, e := range s.entries {
			if !e.done || e.Repo != repo || e.Version != version || !strings.HasPrefix(e.Key, k) {
				continue
			}
			if e.Key == k {
				best = e
				break
			}
			if best == nil || e.Created.After(best.Created) || (e.Created.Equal(best.Created) && e.ID > best.ID) {
				best = e
			}
		}
		if best != nil {
			s.touchLocked(best)
			_ = s.saveLocked()
			cp := *best
			return &cp
		}
	}
	return nil
}

// errConflict means the entry exists or is being uploaded.
var errConflict = errors.New("conflict")

// errBusy means too many uploads are in flight.
var errBusy = errors.New("busy")

// reserve starts an upload of (repo, key, version) for token.
func (s *store) reserve(token, repo, key, version string, size int64, now time.Time) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.entries {
		if sameEntry(e, repo, key, version) {
			return 0, errConflict
		}
	}
	if s.uploads >= MaxUploads {
		return 0, errBusy
	}
	f, err := os.OpenFile(s.partPath(s.nextID), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return 0, fmt.Errorf("start upload: %w", err)
	}
	_ = f.Close()
	e := &entry{ID: s.nextID, Repo: repo, Key: key, Version: version, Created: now, token: token, announce: size}
	s.nextID++
	s.uploads++
	s.entries[e.ID] = e
	return e.ID, nil
}

// upload returns the entry id that token may write to, or nil.
func (s *store) upload(token string, id int64) *entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.entries[id]; e != nil && !e.done && e.token == token {
		return e
	}
	return nil
}

// claim records [start, end) of upload e as being written; it fails when
// the range overlaps one already written or leaves the upload's bounds.
func (s *store) claim(e *entry, start, end int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.entries[e.ID] != e || e.done {
		return errors.New("the upload was abandoned or is committed already")
	}
	if end > s.maxRepo {
		return fmt.Errorf("the chunk ends at byte %d, past the %d bytes one repository may hold", end, s.maxRepo)
	}
	if e.announce > 0 && end > e.announce {
		return fmt.Errorf("the chunk ends at byte %d, past the %d bytes the upload announced", end, e.announce)
	}
	if len(e.ranges) >= MaxChunks {
		return fmt.Errorf("the upload has %d chunks already", len(e.ranges))
	}
	if s.writing+end-start > s.maxBytes {
		return fmt.Errorf("the uploads in flight hold %d bytes already, and this chunk would take them past the cache's bound of %d bytes; commit or end them first", s.writing, s.maxBytes)
	}
	for _, r := range e.ranges {
		if start < r[1] && r[0] < end {
			return fmt.Errorf("bytes %d-%d overlap a chunk already written (bytes %d-%d)", start, end-1, r[0], r[1]-1)
		}
	}
	e.ranges = append(e.ranges, [2]int64{start, end})
	e.writing++
	s.writing += end - start
	return nil
}

// release ends the write of a range claim recorded; a range whose write
// failed (ok false) is forgotten.
func (s *store) release(e *entry, start, end int64, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e.writing--
	if ok {
		return
	}
	if s.entries[e.ID] == e {
		s.writing -= end - start
	}
	for i, r := range e.ranges {
		if r == [2]int64{start, end} {
			e.ranges = append(e.ranges[:i], e.ranges[i+1:]...)
			return
		}
	}
}

// commit ends upload e of size bytes: its chunks must cover exactly
// [0, size). The entries used least recently are then evicted.
func (s *store) commit(e *entry, size int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.entries[e.ID] != e || e.done {
		return errors.New("the upload was abandoned or is committed already")
	}
	if e.writing > 0 {
		return fmt.Errorf("%d chunks are still being written; commit once every chunk's PATCH has answered", e.writing)
	}
	rs := append([][2]int64(nil), e.ranges...)
	sort.Slice(rs, func(a, b int) bool { return rs[a][0] < rs[b][0] })
	var at int64
	for _, r := range rs {
		if r[0] != at {
			return fmt.Errorf("the chunks leave bytes %d-%d unwritten", at, r[0]-1)
		}
		at = r[1]
	}
	if at != size {
		return fmt.Errorf("the chunks cover %d bytes, not the %d bytes committed", at, size)
	}
	if err := os.Rename(s.partPath(e.ID), s.blobPath(e.ID)); err != nil {
		return fmt.Errorf("store the upload: %w", err)
	}
	s.writing -= size
	e.Size, e.done, e.ranges, e.token = size, true, nil, ""
	s.uploads--
	s.used += size
	s.touchLocked(e)
	s.evictLocked()
	return s.saveLocked()
}

// evictLocked removes the committed entries used least recently until
// the store is within its bounds: first those of each repository above
// its share, so that no repository can push out more than the rest of
// the cache, then those of any.
func (s *store) evictLocked() {
	count := 0
	repoBytes := map[string]int64{}
	for _, e := range s.entries {
		if e.done {
			count++
			repoBytes[e.Repo] += e.Size
		}
	}
	for repo, n := range repoBytes {
		for n > s.maxRepo {
			lru := s.lruLocked(repo)
			n -= lru.Size
			s.dropLocked(lru)
			count--
		}
	}
	for s.used > s.maxBytes || count > s.maxEntries {
		lru := s.lruLocked("")
		if lru == nil {
			return
		}
		s.dropLocked(lru)
		count--
	}
}

// lruLocked is the committed entry used least recently, of repo (any
// repository when repo is ""); nil when there is none.
func (s *store) lruLocked(repo string) *entry {
	var lru *entry
	for _, e := range s.entries {
		if e.done && (repo == "" || e.Repo == repo) && (lru == nil || e.Used < lru.Used) {
			lru = e
		}
	}
	return lru
}

func (s *store) dropLocked(e *entry) {
	delete(s.entries, e.ID)
	if e.done {
		s.used -= e.Size
		_ = os.Remove(s.blobPath(e.ID))
		return
	}
	s.uploads--
	for _, r := range e.ranges {
		s.writing -= r[1] - r[0]
	}
	e.ranges = nil
	_ = os.Remove(s.partPath(e.ID))
}

// abandon drops the uploads token reserved and did not commit.
func (s *store) abandon(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.entries {
		if !e.done && e.token == token {
			s.dropLocked(e)
		}
	}
}

// open opens the data of committed entry id of repo, marking it used.
func (s *store) open(repo string, id int64) (*os.File, *entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entries[id]
	if !s.committed(e) || e.Repo != repo {
		return nil, nil, os.ErrNotExist
	}
	f, err := os.Open(s.blobPath(id))
	if err != nil {
		return nil, nil, err
	}
	s.touchLocked(e)
	cp := *e
	return f, &cp, nil
}

// usage is the committed bytes and entries, for tests and logs.
func (s *store) usage() (bytes int64, entries int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.entries {
		if e.done {
			entries++
		}
	}
	return s.used, entries
}

// openPart opens the file of an upload in progress for writing; it fails
// once the upload is committed or abandoned.
func openPart(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("the upload is no longer in progress: %w", err)
	}
	return f, nil
}
