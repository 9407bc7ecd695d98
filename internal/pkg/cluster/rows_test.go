package cluster

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/forgeload/forgeload/internal/pkg/load/feeder"
	"github.com/forgeload/forgeload/internal/pkg/load/vars"
)

// TestRowClaims runs the claim script against a real redis-server: only
// the segment's owner claims, ranges never overlap and stop at the limit,
// ranges given back come first, and a reassigned segment's old owner is
// refused.
func TestRowClaims(t *testing.T) {
	gate.Short(t)
	_, rdb := startRedis(t)
	ctx := t.Context()
	k := runKeys("RF")
	a := NewRowClaims(rdb, "RF", 0, "w1", 600)
	b := NewRowClaims(rdb, "RF", 1, "w2", 600)
	if _, _, _, err := a.Claim(ctx, 4, 10); !errors.Is(err, ErrNotOwner) {
		t.Fatalf("claim before the segment is owned = %v, want ErrNotOwner", err)
	}
	rdb.HSet(ctx, k.segOwner(), "0", "w1:3", "1", "w2:3")

	type claim struct{ from, to, left uint64 }
	get := func(c *RowClaims, n uint64) claim {
		t.Helper()
		from, to, left, err := c.Claim(ctx, n, 10)
		if err != nil {
			t.Fatal(err)
		}
		return claim{from, to, left}
	}
	for i, tt := range []struct {
		c    *RowClaims
		n    uint64
		want claim
	}{
		{a, 4, claim{0, 4, 6}},
		{b, 4, claim{4, 8, 2}},
		{a, 4, claim{8, 10, 0}}, // capped at the limit
		{b, 4, claim{10, 10, 0}},
	} {
		if got := get(tt.c, tt.n); got != tt.want {
			t.Errorf("claim %d = %+v, want %+v", i, got, tt.want)
		}
	}
	if ttl := rdb.TTL(ctx, k.feedNext()).Val(); ttl <= 0 || ttl > 10*time.Minute {
		t.Errorf("TTL(feed:next) = %s, want (0, 10m]", ttl)
	}

	// w1 gives back 9 (claimed, never sent); w2 gets it next, once.
	if err := a.Return(ctx, 9, 10); err != nil {
		t.Fatal(err)
	}
	if got := get(b, 4); got != (claim{9, 10, 0}) {
		t.Errorf("claim after a give-back = %+v, want the range 9-10", got)
	}
	if got := get(b, 4); got != (claim{10, 10, 0}) {
		t.Errorf("second claim after a give-back = %+v, want none left", got)
	}
	if ttl := rdb.TTL(ctx, k.feedBack()).Val(); ttl != -2 && (ttl <= 0 || ttl > 10*time.Minute) {
		t.Errorf("TTL(feed:back) = %s, want a run TTL or the key gone", ttl)
	}

	// Without a limit (recycle) the index runs on.
	from, to, _, err := a.Claim(ctx, 5, 0)
	if err != nil || from != 10 || to != 15 {
		t.Errorf("claim without limit = %d-%d, %v; want 10-15", from, to, err)
	}

	// Segment 0 moved to w3: w1 is fenced out.
	rdb.HSet(ctx, k.segOwner(), "0", "w3:4")
	if _, _, _, err := a.Claim(ctx, 1, 0); !errors.Is(err, ErrNotOwner) {
		t.Errorf("claim by the old owner = %v, want ErrNotOwner", err)
	}
	if _, _, _, err := NewRowClaims(rdb, "RF", 0, "w3", 600).Claim(ctx, 1, 0); err != nil {
		t.Errorf("claim by the new owner: %v", err)
	}
}

// TestRowClaimsConcurrent: twelve claimers on three segments race for
// 1000 rows through a real redis-server, some giving part of a claim back;
// the ranges used cover every row exactly once.
func TestRowClaimsConcurrent(t *testing.T) {
	gate.Short(t)
	_, rdb := startRedis(t)
	ctx := t.Context()
	rdb.HSet(ctx, runKeys("RC").segOwner(), "0", "w1:1", "1", "w2:1", "2", "w3:1")
	const rows = 1000
	var mu sync.Mutex
	used := make([]int, rows)
	var wg sync.WaitGroup
	for i := range 12 {
		c := NewRowClaims(rdb, "RC", i%3, "w"+strconv.Itoa(i%3+1), 600)
		wg.Go(func() {
			for n := 0; ; n++ {
				from, to, _, err := c.Claim(ctx, 7, rows)
				if err != nil {
					t.Error(err)
					return
				}
				if from == to {
					return
				}
				if n%5 == 4 && to-from > 1 {
					// Use the first row, give the rest back.
					if err := c.Return(ctx, from+1, to); err != nil {
						t.Error(err)
						return
					}
					to = from + 1
				}
				mu.Lock()
				for r := from; r < to; r++ {
					used[r]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for r, n := range used {
		if n != 1 {
			t.Errorf("row %d used %d times, want once", r, n)
		}
	}
}

// TestSharedRowsClosedShares: three hosts share 300 feeder rows through a
// real redis-server, each bounded to its share (100) of a run whose total
// is the row count. Each sends its share in turn while the others keep
// what they claimed (their segments still run): every host gets all its
// rows, none twice, because no host claims beyond what it will send. A
// host that needs one more row then finds the run exhausted.
func TestSharedRowsClosedShares(t *testing.T) {
	gate.Short(t)
	_, rdb := startRedis(t)
	ctx := t.Context()
	rdb.HSet(ctx, runKeys("RS").segOwner(), "0", "w1:1", "1", "w2:1", "2", "w3:1")
	var csv strings.Builder
	csv.WriteString("id\n")
	for i := range 300 {
		fmt.Fprintf(&csv, "%d\n", i)
	}
	rows, err := feeder.Parse("ids.csv", "csv", []byte(csv.String()))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	var hosts []*feeder.Shared
	for i := range 3 {
		// The batch loadrun gives 300 rows over three hosts.
		s := feeder.NewShared(ctx, rows, NewRowClaims(rdb, "RS", i, "w"+strconv.Itoa(i+1), 600), 12, 3)
		t.Cleanup(func() { _ = s.Close() })
		s.SetNeed(100)
		hosts = append(hosts, s)
		for n := range 100 {
			row, err := s.Next(ctx)
			if err != nil {
				t.Fatalf("host %d, row %d of its 100: %v (another host holds rows it will never send)", i+1, n+1, err)
			}
			v, _ := row.Lookup("id")
			seen[v]++
		}
	}
	for i := range 300 {
		if n := seen[strconv.Itoa(i)]; n != 1 {
			t.Errorf("row %d went out %d times, want once", i, n)
		}
	}
	if _, err := hosts[0].Next(ctx); !errors.Is(err, vars.ErrExhausted) || !strings.Contains(err.Error(), "ids.csv has 300 rows and the hosts of this run used them all") {
		t.Errorf("a 101st row for host 1 = %v, want exhaustion naming the file", err)
	}
}

// TestRowClaimsSplitsGivenBack: a claim takes at most n rows of a range
// given back and leaves the rest given back, so a host that needs few
// rows does not hold a whole returned batch.
func TestRowClaimsSplitsGivenBack(t *testing.T) {
	gate.Short(t)
	_, rdb := startRedis(t)
	ctx := t.Context()
	rdb.HSet(ctx, runKeys("RB").segOwner(), "0", "w1:1", "1", "w2:1")
	a := NewRowClaims(rdb, "RB", 0, "w1", 600)
	b := NewRowClaims(rdb, "RB", 1, "w2", 600)
	if from, to, _, err := a.Claim(ctx, 10, 20); err != nil || from != 0 || to != 10 {
		t.Fatalf("first claim = %d-%d, %v; want 0-10", from, to, err)
	}
	if err := a.Return(ctx, 2, 10); err != nil {
		t.Fatal(err)
	}
	for _, want := range [][2]uint64{{2, 5}, {5, 8}, {8, 10}, {10, 13}} {
		from, to, _, err := b.Claim(ctx, 3, 20)
		if err != nil || from != want[0] || to != want[1] {
			t.Errorf("claim of 3 = %d-%d, %v; want %d-%d", from, to, err, want[0], want[1])
		}
	}
}
