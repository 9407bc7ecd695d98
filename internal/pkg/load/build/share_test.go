package build

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/forgeload/forgeload/internal/pkg/load/feeder"
)

// halfClaimer hands out the even row indices only, as if another host
// had the odd ones.
type halfClaimer struct {
	mu   sync.Mutex
	next uint64
}

func (c *halfClaimer) Claim(_ context.Context, _, limit uint64) (from, to, left uint64, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.next >= limit {
		return c.next, c.next, 0, nil
	}
	from = c.next
	c.next += 2
	return from, from + 1, limit - min(limit, c.next), nil
}

func (*halfClaimer) Return(context.Context, uint64, uint64) error { return nil }

// TestShareRows: a distributed config's feeder goes through ShareRows
// (this host sends only the rows it claims, and runs out with the shared
// exhaustion), and without ShareRows Run refuses to send every row.
func TestShareRows(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.URL.Path)
		mu.Unlock()
	}))
	defer srv.Close()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ids.csv"), []byte("id\n0\n1\n2\n3\n4\n5\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	yaml := "target: " + srv.URL + "/{{id}}\ntotal: 10\nconcurrency: 1\nduration: 30s\nfeeder: {path: " + filepath.Join(dir, "ids.csv") + ", recycle: false}\ndistributed: {workers: 2}\n"

	share := Settings{ShareRows: func(rows *feeder.Rows) SharedFeed {
		return feeder.NewShared(t.Context(), rows, &halfClaimer{}, 1, 2)
	}}
	// A worker reads no file: without the shipped rows it refuses.
	if _, err := New(parse(t, yaml), share); err == nil || !strings.Contains(err.Error(), "the coordinator shipped none") {
		t.Fatalf("New with ShareRows and no shipped rows = %v, want a refusal", err)
	}
	cfg := parse(t, yaml)
	cfg.Feeder.Data = []byte("id\n0\n1\n2\n3\n4\n5\n") // as the coordinator ships it
	p, err := New(cfg, share)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(paths, ","); got != "/0,/2,/4" {
		t.Errorf("this host sent %s, want only its rows /0,/2,/4", got)
	}
	if err := p.Stopped(); err == nil || !strings.Contains(err.Error(), "ids.csv has 6 rows and the hosts of this run used them all") {
		t.Errorf("Stopped() = %v, want the shared exhaustion", err)
	}

	paths = nil
	p, err = New(parse(t, yaml), Settings{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.Run(t.Context()); err == nil || !strings.Contains(err.Error(), "every host would send every row") {
		t.Errorf("Run without ShareRows = %v, want a refusal", err)
	}
	if len(paths) != 0 {
		t.Errorf("the unshared plan sent %v", paths)
	}
}
