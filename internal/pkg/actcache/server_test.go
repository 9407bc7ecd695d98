package actcache

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// startServer starts a server on 127.0.0.1 in a temporary directory, run
// until the test ends.
func startServer(t *testing.T, o Options) *Server {
	t.Helper()
	if o.Dir == "" {
		o.Dir = t.TempDir()
	}
	o.Host = "127.0.0.1"
	s, err := Listen(o)
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := s.Serve(ctx); err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	t.Cleanup(func() { cancel(); wg.Wait() })
	return s
}

// client speaks the cache protocol as the toolkit does, with one grant.
type client struct {
	t    *testing.T
	base string
}

func grant(t *testing.T, s *Server, repo string) *client {
	t.Helper()
	u, _, revoke := s.Grant(repo)
	t.Cleanup(revoke)
	return &client{t: t, base: u}
}

func (c *client) do(method, path string, body io.Reader, hdr map[string]string) (int, []byte) {
	c.t.Helper()
	req, err := http.NewRequest(method, c.base+"_apis/artifactcache/"+path, body)
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json;api-version=6.0-preview.1")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	return res.StatusCode, data
}

func jsonBody(v any) io.Reader {
	b, _ := json.Marshal(v)
	return bytes.NewReader(b)
}

// reserve reserves key at version and returns the upload's id.
func (c *client) reserve(key, version string, size int) int64 {
	c.t.Helper()
	code, body := c.do("POST", "caches", jsonBody(map[string]any{"key": key, "version": version, "cacheSize": size}), nil)
	var r struct{ CacheID int64 }
	if code != http.StatusOK || json.Unmarshal(body, &r) != nil || r.CacheID == 0 {
		c.t.Fatalf("reserve %q: %d %s", key, code, body)
	}
	return r.CacheID
}

func (c *client) chunk(id int64, start int, data []byte) (int, string) {
	code, body := c.do("PATCH", fmt.Sprintf("caches/%d", id), bytes.NewReader(data),
		map[string]string{"Content-Type": "application/octet-stream", "Content-Range": fmt.Sprintf("bytes %d-%d/*", start, start+len(data)-1)})
	return code, string(body)
}

func (c *client) commit(id int64, size int) (int, string) {
	code, body := c.do("POST", fmt.Sprintf("caches/%d", id), jsonBody(map[string]any{"size": size}), nil)
	return code, string(body)
}

// save stores data under key in two chunks, the second sent first.
func (c *client) save(key, version string, data []byte) {
	c.t.Helper()
	id := c.reserve(key, version, len(data))
	half := len(data) / 2
	if code, body := c.chunk(id, half, data[half:]); code/100 != 2 {
		c.t.Fatalf("chunk 2 of %q: %d %s", key, code, body)
	}
	if code, body := c.chunk(id, 0, data[:half]); code/100 != 2 {
		c.t.Fatalf("chunk 1 of %q: %d %s", key, code, body)
	}
	if code, body := c.commit(id, len(data)); code/100 != 2 {
		c.t.Fatalf("commit %q: %d %s", key, code, body)
	}
}

// restore looks keys up and returns the matched key and its data, or ""
// on a miss.
func (c *client) restore(keys, version string) (string, []byte) {
	c.t.Helper()
	code, body := c.do("GET", "cache?keys="+url.QueryEscape(keys)+"&version="+version, nil, nil)
	if code == http.StatusNoContent {
		return "", nil
	}
	var h hit
	if code != http.StatusOK || json.Unmarshal(body, &h) != nil {
		c.t.Fatalf("lookup %q: %d %s", keys, code, body)
	}
	return h.CacheKey, c.get(h.ArchiveLocation, http.StatusOK)
}

func (c *client) get(u string, want int) []byte {
	c.t.Helper()
	res, err := http.Get(u)
	if err != nil {
		c.t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	if res.StatusCode != want {
		c.t.Fatalf("GET %s = %d %s, want %d", u, res.StatusCode, data, want)
	}
	return data
}

const v1 = "2f0e6d3c5b4a39281706f5e4d3c2b1a09f8e7d6c5b4a39281706f5e4d3c2b1a0"

// TestSaveRestore: what a job saves, a later job of the repository
// restores, whole and by range; a key not saved misses, and a version
// other than the saved one misses.
func TestSaveRestore(t *testing.T) {
	t.Parallel()
	s := startServer(t, Options{})
	data := bytes.Repeat([]byte("forgeload cache "), 1000)
	grant(t, s, "o/r").save("deps-linux-abc", v1, data)

	c := grant(t, s, "o/r")
	key, got := c.restore("deps-linux-abc", v1)
	if key != "deps-linux-abc" || !bytes.Equal(got, data) {
		t.Fatalf("restore = %q, %d bytes; want deps-linux-abc, %d bytes", key, len(got), len(data))
	}
	if key, _ := c.restore("other-key", v1); key != "" {
		t.Errorf("restore of a key never saved = %q, want a miss", key)
	}
	if key, _ := c.restore("deps-linux-abc", strings.Repeat("0", 64)); key != "" {
		t.Errorf("restore with another version = %q, want a miss", key)
	}
	// The toolkit downloads by ranges too.
	code, body := c.do("GET", "cache?keys=deps-linux-abc&version="+v1, nil, nil)
	var h hit
	if code != http.StatusOK || json.Unmarshal(body, &h) != nil {
		t.Fatalf("lookup: %d %s", code, body)
	}
	req, _ := http.NewRequest("GET", h.ArchiveLocation, nil)
	req.Header.Set("Range", "bytes=16-31")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	part, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusPartialContent || string(part) != "forgeload cache " {
		t.Errorf("range GET = %d %q, want 206 %q", res.StatusCode, part, "forgeload cache ")
	}
	// And asks the size first, with HEAD.
	head, err := http.Head(h.ArchiveLocation)
	if err != nil {
		t.Fatal(err)
	}
	head.Body.Close()
	if head.StatusCode != http.StatusOK || head.ContentLength != int64(len(data)) {
		t.Errorf("HEAD = %d, length %d; want 200, %d", head.StatusCode, head.ContentLength, len(data))
	}
}

// TestRestoreKeys: with no exact match, each restore key in turn matches
// the newest entry whose key starts with it; an exact match wins over a
// newer prefix match.
func TestRestoreKeys(t *testing.T) {
	t.Parallel()
	s := startServer(t, Options{})
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s.now = func() time.Time { clock = clock.Add(time.Minute); return clock }
	c := grant(t, s, "o/r")
	c.save("deps-linux-aaa", v1, []byte("old"))
	c.save("deps-linux-bbb", v1, []byte("new"))
	c.save("deps-windows-ccc", v1, []byte("win"))

	for _, tc := range []struct{ keys, want string }{
		{"deps-linux-zzz,deps-linux-,deps-", "deps-linux-bbb"}, // newest of the prefix
		{"deps-linux-zzz,deps-linux-aaa", "deps-linux-aaa"},    // the second key exactly
		{"deps-linux-aaa,deps-", "deps-linux-aaa"},             // exact before prefix
		{"deps-mac-zzz,deps-mac-", ""},                         // no key matches
		{"deps-mac-zzz,deps-", "deps-windows-ccc"},             // the newest of all deps-
	} {
		if got, _ := c.restore(tc.keys, v1); got != tc.want {
			t.Errorf("restore(%q) = %q, want %q", tc.keys, got, tc.want)
		}
	}
}

// TestRepositoryIsolation: a job of another repository neither finds an
// entry nor downloads it by its URL, and a URL whose job ended serves
// nothing.
func TestRepositoryIsolation(t *testing.T) {
	t.Parallel()
	s := startServer(t, Options{})
	mine := grant(t, s, "o/r")
	mine.save("secret-key", v1, []byte("only for o/r"))
	code, body := mine.do("GET", "cache?keys=secret-key&version="+v1, nil, nil)
	var h hit
	if code != http.StatusOK || json.Unmarshal(body, &h) != nil {
		t.Fatalf("lookup: %d %s", code, body)
	}

	other := grant(t, s, "o/other")
	if key, _ := other.restore("secret-key", v1); key != "" {
		t.Errorf("another repository restored %q", key)
	}
	// The other job's token with this entry's id.
	stolen := other.base + "_apis/artifactcache/artifacts/" + h.ArchiveLocation[strings.LastIndex(h.ArchiveLocation, "/")+1:]
	other.get(stolen, http.StatusNotFound)
	// Another repository may save its own entry under the same key.
	other.save("secret-key", v1, []byte("other's"))
	if _, got := mine.restore("secret-key", v1); string(got) != "only for o/r" {
		t.Errorf("o/r restored %q after o/other saved the same key", got)
	}

	u, _, revoke := s.Grant("o/r")
	revoke()
	ended := &client{t: t, base: u}
	if code, _ := ended.do("GET", "cache?keys=secret-key&version="+v1, nil, nil); code != http.StatusForbidden {
		t.Errorf("lookup with a revoked URL = %d, want 403", code)
	}
	mine.get(strings.Replace(h.ArchiveLocation, mine.base, u, 1), http.StatusForbidden)
}

// TestEviction: past the bound, the entries used least recently go.
func TestEviction(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := startServer(t, Options{Dir: dir, MaxBytes: 250, MaxRepoBytes: 250})
	c := grant(t, s, "o/r")
	c.save("a", v1, bytes.Repeat([]byte("a"), 100))
	c.save("b", v1, bytes.Repeat([]byte("b"), 100))
	if k, _ := c.restore("a", v1); k != "a" { // a is now used after b
		t.Fatalf("restore a = %q", k)
	}
	c.save("c", v1, bytes.Repeat([]byte("c"), 100))
	for key, want := range map[string]bool{"a": true, "b": false, "c": true} {
		if k, _ := c.restore(key, v1); (k == key) != want {
			t.Errorf("after eviction, restore %s = %q, want kept %v", key, k, want)
		}
	}
	if used, n := s.store.usage(); used != 200 || n != 2 {
		t.Errorf("usage = %d bytes in %d entries, want 200 in 2", used, n)
	}
	// An upload above the bound is refused when it is reserved.
	if code, body := c.do("POST", "caches", jsonBody(map[string]any{"key": "big", "version": v1, "cacheSize": 251}), nil); code != http.StatusBadRequest {
		t.Errorf("reserve above the bound = %d %s, want 400", code, body)
	}
}

// TestEntriesSurviveRestart: a new server on the same directory serves
// the entries committed before, and forgets uploads never committed.
func TestEntriesSurviveRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s1, err := Listen(Options{Dir: dir, Host: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s1.Serve(ctx) }()
	c := grant(t, s1, "o/r")
	c.save("kept", v1, []byte("kept data"))
	c.reserve("unfinished", v1, 10)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	s2 := startServer(t, Options{Dir: dir})
	c2 := grant(t, s2, "o/r")
	if k, got := c2.restore("kept", v1); k != "kept" || string(got) != "kept data" {
		t.Errorf("after restart restore = %q %q", k, got)
	}
	c2.reserve("unfinished", v1, 10) // no longer held
}

// TestConcurrentChunks: chunks sent at once, as the toolkit sends four,
// make one entry.
func TestConcurrentChunks(t *testing.T) {
	t.Parallel()
	s := startServer(t, Options{})
	c := grant(t, s, "o/r")
	data := bytes.Repeat([]byte("0123456789abcdef"), 512) // 8 KiB
	id := c.reserve("par", v1, len(data))
	const n = 8
	step := len(data) / n
	var wg sync.WaitGroup
	errs := make(chan string, n)
	for i := range n {
		wg.Go(func() {
			if code, body := c.chunk(id, i*step, data[i*step:(i+1)*step]); code != http.StatusNoContent {
				errs <- fmt.Sprintf("chunk %d: %d %s", i, code, body)
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if code, body := c.commit(id, len(data)); code != http.StatusNoContent {
		t.Fatalf("commit: %d %s", code, body)
	}
	if _, got := c.restore("par", v1); !bytes.Equal(got, data) {
		t.Errorf("restored %d bytes, not the %d saved", len(got), len(data))
	}
}

// TestOutboundHost: the default address is an IP address, not a name.
func TestOutboundHost(t *testing.T) {
	t.Parallel()
	if h := OutboundHost(); net.ParseIP(h) == nil || net.ParseIP(h).To4() == nil {
		t.Errorf("OutboundHost() = %q, want an IPv4 address", h)
	}
}

// TestRepositoryShare: a repository past its share (half the cache by
// default) loses its own entries used least recently, not another's, even
// when the other's are older.
func TestRepositoryShare(t *testing.T) {
	t.Parallel()
	s := startServer(t, Options{MaxBytes: 300})
	mine := grant(t, s, "o/r")
	mine.save("a1", v1, bytes.Repeat([]byte("a"), 100))
	flood := grant(t, s, "o/flood")
	for i := range 3 {
		flood.save(fmt.Sprintf("b%d", i), v1, bytes.Repeat([]byte("b"), 100))
	}
	if k, _ := mine.restore("a1", v1); k != "a1" {
		t.Errorf("another repository's uploads pushed out o/r's entry")
	}
	if k, _ := flood.restore("b2", v1); k != "b2" {
		t.Errorf("the flooding repository lost its newest entry")
	}
	if code, body := flood.do("POST", "caches", jsonBody(map[string]any{"key": "big", "version": v1, "cacheSize": 151}), nil); code != http.StatusBadRequest || !strings.Contains(string(body), "150 bytes one repository may hold") {
		t.Errorf("reserve above the share = %d %s, want 400", code, body)
	}
}

// TestIdleConnectionClosedSoon: the server closes a keep-alive connection
// soon after its last response, so that a Node.js action whose toolkit
// left a response unread on it (actions/cache@v3's save) exits then
// rather than when a long idle timeout ends; before, that took a minute.
func TestIdleConnectionClosedSoon(t *testing.T) {
	t.Parallel()
	s := startServer(t, Options{})
	c := grant(t, s, "o/r")
	u, err := url.Parse(c.base + "_apis/artifactcache/cache?keys=k&version=" + v1)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", u.RequestURI(), u.Host); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.Close {
		t.Fatalf("the response closes the connection itself (%s); want a keep-alive connection", res.Status)
	}
	start := time.Now()
	limit := IdleTimeout + 8*time.Second
	if err := conn.SetReadDeadline(start.Add(limit)); err != nil {
		t.Fatal(err)
	}
	if _, err := br.ReadByte(); err != io.EOF {
		t.Fatalf("idle connection after %v: read gave %v, want EOF (the server closing it) within %v", time.Since(start).Round(time.Millisecond), err, limit)
	}
}
