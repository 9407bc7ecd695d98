package actcache

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHostileRequests: each bad request is refused with a status and a
// message naming what is wrong, and leaves nothing behind.
func TestHostileRequests(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := startServer(t, Options{Dir: dir, MaxBytes: 1000})
	c := grant(t, s, "o/r")
	long := strings.Repeat("k", MaxKeyLen+1)
	many := strings.TrimSuffix(strings.Repeat("k,", MaxKeys+1), ",")
	for _, tc := range []struct {
		name, method, path, body string
		want                     int
		says                     string
	}{
		{"key too long", "GET", "cache?version=" + v1 + "&keys=" + long, "", 400, "keys[0] is 513 bytes long"},
		{"too many keys", "GET", "cache?version=" + v1 + "&keys=" + many, "", 400, "want at most 16"},
		{"empty restore key", "GET", "cache?version=" + v1 + "&keys=a,,b", "", 400, "keys[1] is empty"},
		{"no version", "GET", "cache?keys=a", "", 400, "version is empty"},
		{"reserve long key", "POST", "caches", `{"key":"` + long + `","version":"v"}`, 400, "key is 513 bytes long"},
		{"reserve comma", "POST", "caches", `{"key":"a,b","version":"v"}`, 400, "has a comma"},
		{"reserve negative size", "POST", "caches", `{"key":"a","version":"v","cacheSize":-1}`, 400, "cacheSize -1"},
		{"reserve not JSON", "POST", "caches", `key=a`, 400, "not the JSON object"},
		{"reserve huge body", "POST", "caches", `{"key":"a","version":"` + strings.Repeat("v", maxJSONBody) + `"}`, 400, "not the JSON object"},
		{"chunk of no upload", "PATCH", "caches/999", "x", 404, "no upload"},
		{"chunk of a bad id", "PATCH", "caches/..%2F..%2Fetc", "x", 404, "no upload"},
		{"commit of no upload", "POST", "caches/7", `{"size":1}`, 404, "no upload"},
		{"download of a bad id", "GET", "artifacts/-1", "", 404, "no cache entry"},
	} {
		code, body := c.do(tc.method, tc.path, strings.NewReader(tc.body), nil)
		if code != tc.want || !strings.Contains(string(body), tc.says) {
			t.Errorf("%s: %s %s = %d %s, want %d saying %q", tc.name, tc.method, clip(tc.path), code, clip(string(body)), tc.want, tc.says)
		}
	}

	id := c.reserve("k", v1, 100)
	for _, tc := range []struct {
		name, rng, body string
		says            string
	}{
		{"no range", "", "abc", "not in bytes"},
		{"end before start", "bytes 5-2/*", "abc", "END is before START"},
		{"past the announced size", "bytes 98-100/*", "abc", "past the 100 bytes the upload announced"},
		{"body shorter than range", "bytes 0-9/*", "abc", "the body has 3 bytes"},
		{"body longer than range", "bytes 0-1/*", "abc", "the body has 3 bytes or more"},
		{"negative start", "bytes -1-2/*", "abcd", "whole numbers"},
		{"huge offset", "bytes 0-99999999999999999999/*", "a", "whole numbers"},
	} {
		code, body := c.do("PATCH", fmt.Sprintf("caches/%d", id), strings.NewReader(tc.body), map[string]string{"Content-Range": tc.rng})
		if code != 400 || !strings.Contains(body2s(body), tc.says) {
			t.Errorf("%s: PATCH %q = %d %s, want 400 saying %q", tc.name, tc.rng, code, body, tc.says)
		}
	}
	if code, body := c.chunk(id, 10, []byte("0123456789")); code != 204 {
		t.Fatalf("chunk 10-19 = %d %s", code, body)
	}
	if code, body := c.chunk(id, 15, []byte("0123456789")); code != 400 || !strings.Contains(body, "overlap") {
		t.Errorf("overlapping chunk = %d %s, want 400 saying overlap", code, body)
	}
	if code, body := c.commit(id, 20); code != 400 || !strings.Contains(body, "leave bytes 0-9 unwritten") {
		t.Errorf("commit with a gap = %d %s, want 400 saying what is unwritten", code, body)
	}
	if code, body := c.chunk(id, 0, []byte("0123456789")); code != 204 {
		t.Fatalf("chunk 0-9 = %d %s", code, body)
	}
	if code, body := c.commit(id, 25); code != 400 || !strings.Contains(body, "cover 20 bytes, not the 25") {
		t.Errorf("commit of more than was written = %d %s", code, body)
	}
	// Another job of the repository cannot write to or commit this upload.
	other := grant(t, s, "o/r")
	if code, _ := other.chunk(id, 20, []byte("x")); code != 404 {
		t.Errorf("chunk by another job = %d, want 404", code)
	}
	if code, _ := other.do("POST", "caches", jsonBody(map[string]any{"key": "k", "version": v1}), nil); code != http.StatusConflict {
		t.Errorf("reserving a key being uploaded = %d, want 409", code)
	}
	if code, body := c.commit(id, 20); code != 204 {
		t.Fatalf("commit = %d %s", code, body)
	}
	if code, _ := other.do("POST", "caches", jsonBody(map[string]any{"key": "k", "version": v1}), nil); code != http.StatusConflict {
		t.Errorf("reserving a key saved = %d, want 409", code)
	}
	// Only numbered files are in the directory: no key reached a path.
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if n := d.Name(); n != "index.json" && strings.Trim(n, "0123456789") != "" {
			t.Errorf("file %s in the cache directory", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func body2s(b []byte) string { return string(bytes.TrimSpace(b)) }

// TestRevokeDropsUploads: the uploads a job did not commit are gone when
// its grant is revoked, and the key can be reserved again.
func TestRevokeDropsUploads(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := startServer(t, Options{Dir: dir})
	u, _, revoke := s.Grant("o/r")
	c := &client{t: t, base: u}
	id := c.reserve("k", v1, 3)
	if code, body := c.chunk(id, 0, []byte("abc")); code != 204 {
		t.Fatalf("chunk = %d %s", code, body)
	}
	revoke()
	if parts, _ := os.ReadDir(filepath.Join(dir, "parts")); len(parts) != 0 {
		t.Errorf("parts left after revoke: %d", len(parts))
	}
	grant(t, s, "o/r").reserve("k", v1, 3)
}

// TestUploadsInFlightBounded: uploads not yet committed together hold at
// most the cache's bound on disk; what a revoked job held is freed.
func TestUploadsInFlightBounded(t *testing.T) {
	t.Parallel()
	s := startServer(t, Options{MaxBytes: 250, MaxRepoBytes: 250})
	u, _, revoke := s.Grant("o/r")
	a := &client{t: t, base: u}
	b := grant(t, s, "o/r")
	ida := a.reserve("a", v1, 200)
	if code, body := a.chunk(ida, 0, bytes.Repeat([]byte("a"), 200)); code != 204 {
		t.Fatalf("chunk a = %d %s", code, body)
	}
	idb := b.reserve("b", v1, 200)
	if code, body := b.chunk(idb, 0, bytes.Repeat([]byte("b"), 100)); code != 400 || !strings.Contains(body, "uploads in flight hold 200 bytes") {
		t.Errorf("chunk past the bound in flight = %d %s, want 400", code, body)
	}
	revoke()
	if code, body := b.chunk(idb, 0, bytes.Repeat([]byte("b"), 100)); code != 204 {
		t.Errorf("chunk after the other job ended = %d %s, want 204", code, body)
	}
}
