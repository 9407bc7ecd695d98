package feeder

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/forgeload/forgeload/internal/pkg/load/vars"
)

// memClaimer is the cluster's claim script in memory: at most n of a
// returned range first, then the counter, capped at limit.
type memClaimer struct {
	mu     sync.Mutex
	next   uint64
	back   [][2]uint64
	claims int
}

func (c *memClaimer) Claim(_ context.Context, n, limit uint64) (from, to, left uint64, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.claims++
	if len(c.back) > 0 {
		r := c.back[0]
		if r[1]-r[0] > n {
			c.back[0][0] = r[0] + n
			r[1] = r[0] + n
		} else {
			c.back = c.back[1:]
		}
		return r[0], r[1], limit - min(limit, c.next), nil
	}
	if limit > 0 {
		n = min(n, limit-min(limit, c.next))
	}
	from = c.next
	c.next += n
	return from, c.next, limit - min(limit, c.next), nil
}

func (c *memClaimer) Return(_ context.Context, from, to uint64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.back = append(c.back, [2]uint64{from, to})
	return nil
}

func numbered(t *testing.T, n int) *Rows {
	t.Helper()
	var b strings.Builder
	b.WriteString("id\n")
	for i := range n {
		fmt.Fprintf(&b, "%d\n", i)
	}
	r, err := Parse("ids.csv", "csv", []byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestSharedEveryRowOnceAcrossHosts: three hosts of eight workers each
// share 1000 rows; every row goes out exactly once, then every host reports
// exhaustion naming the file.
func TestSharedEveryRowOnceAcrossHosts(t *testing.T) {
	t.Parallel()
	rows := numbered(t, 1000)
	c := &memClaimer{}
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	errs := make(chan error, 24)
	for range 3 {
		s := NewShared(t.Context(), rows, c, 16, 3)
		var hw sync.WaitGroup
		for range 8 {
			hw.Go(func() {
				for {
					row, err := s.Next(t.Context())
					if err != nil {
						errs <- err
						return
					}
					v, _ := row.Lookup("id")
					mu.Lock()
					seen[v]++
					mu.Unlock()
				}
			})
		}
		wg.Go(func() {
			hw.Wait()
			if err := s.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if !errors.Is(err, vars.ErrExhausted) || !strings.Contains(err.Error(), "ids.csv has 1000 rows and the hosts of this run used them all") {
			t.Errorf("a worker stopped with %v, want exhaustion naming the file", err)
		}
	}
	if len(seen) != 1000 {
		t.Errorf("%d distinct rows went out, want all 1000", len(seen))
	}
	for v, n := range seen {
		if n != 1 {
			t.Errorf("row %s went out %d times", v, n)
		}
	}
	if c.claims > 1000/2 {
		t.Errorf("%d claims for 1000 rows: batches should make far fewer round trips", c.claims)
	}
}

// TestSharedGivesBackUnusedRows: a host that stops early returns what it
// claimed and never used, in file order, and the next host gets those rows
// first; nothing is handed out twice.
func TestSharedGivesBackUnusedRows(t *testing.T) {
	t.Parallel()
	rows := numbered(t, 200)
	c := &memClaimer{}
	a := NewShared(t.Context(), rows, c, 10, 2)
	var got []string
	next := func(s *Shared) {
		t.Helper()
		row, err := s.Next(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		v, _ := row.Lookup("id")
		got = append(got, v)
	}
	for range 7 {
		next(a) // prefetches the second batch once half of the first is used
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	b := NewShared(t.Context(), rows, c, 10, 2)
	defer b.Close()
	for range 200 - 7 {
		next(b)
	}
	if _, err := b.Next(t.Context()); !errors.Is(err, vars.ErrExhausted) {
		t.Fatalf("after 200 rows: %v, want exhaustion", err)
	}
	seen := map[string]bool{}
	for _, v := range got {
		if seen[v] {
			t.Fatalf("row %s went out twice: %v", v, got)
		}
		seen[v] = true
	}
	if strings.Join(got[:10], ",") != "0,1,2,3,4,5,6,7,8,9" || got[7] != "7" {
		t.Errorf("first rows %v: host b should continue with host a's unused rows 7, 8, 9", got[:10])
	}
}

// TestSharedRecycleWraps: with recycle the run-wide index runs on and
// wraps around the file.
func TestSharedRecycleWraps(t *testing.T) {
	t.Parallel()
	rows := numbered(t, 3)
	rows.SetRecycle(true)
	s := NewShared(t.Context(), rows, &memClaimer{}, 2, 1)
	defer s.Close()
	var got []string
	for range 7 {
		row, err := s.Next(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		v, _ := row.Lookup("id")
		got = append(got, v)
	}
	if strings.Join(got, "") != "0120120" {
		t.Errorf("ids %v, want 0120120", got)
	}
}

type failClaimer struct{ memClaimer }

func (*failClaimer) Claim(context.Context, uint64, uint64) (uint64, uint64, uint64, error) {
	return 0, 0, 0, errors.New("NOTOWNER")
}

// TestSharedClaimErrorSendsNothing: a host whose claims fail (fenced, or
// Redis gone) gets an error for the request, not a row, and a cancelled
// request does not wait.
func TestSharedClaimErrorSendsNothing(t *testing.T) {
	t.Parallel()
	s := NewShared(t.Context(), numbered(t, 5), &failClaimer{}, 2, 1)
	defer s.Close()
	for i := range 2 {
		if row, err := s.Next(t.Context()); err == nil || errors.Is(err, vars.ErrExhausted) || !strings.Contains(err.Error(), "claim rows for this host: NOTOWNER") {
			t.Errorf("Next %d = %v, %v; want the claim's error", i, row, err)
		}
	}
	ctx, cancel := context.WithCancelCause(t.Context())
	cancel(errors.New("run over"))
	blocked := NewShared(t.Context(), numbered(t, 5), &blockClaimer{}, 2, 1)
	if _, err := blocked.Next(ctx); err == nil || err.Error() != "run over" {
		t.Errorf("Next with a cancelled context = %v, want its cause", err)
	}
	if err := blocked.Close(); err != nil { // Close cancels the claim in flight
		t.Errorf("Close: %v", err)
	}
}

type blockClaimer struct{ memClaimer }

func (*blockClaimer) Claim(ctx context.Context, _, _ uint64) (uint64, uint64, uint64, error) {
	<-ctx.Done()
	return 0, 0, 0, ctx.Err()
}
