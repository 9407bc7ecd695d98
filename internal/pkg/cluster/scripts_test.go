package cluster

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestScripts(t *testing.T) {
	t.Parallel()
	_, rdb := startRedis(t)
	ctx := context.Background()
	k := runKeys("R1")

	// create_run twice: the second call fails.
	create := func() error {
		return scriptErr("create", createRunScript.Run(ctx, rdb, []string{k.state(), k.coord(), k.gen(), k.meta()}, "c:1", 10000, 3600, "plan", "{}").Err())
	}
	if err := create(); err != nil {
		t.Fatalf("first create_run: %v", err)
	}
	if err := create(); !errors.Is(err, ErrRunExists) {
		t.Fatalf("second create_run = %v, want ErrRunExists", err)
	}
	for _, key := range []string{k.state(), k.gen(), k.meta()} {
		if ttl := rdb.TTL(ctx, key).Val(); ttl <= 0 || ttl > time.Hour {
			t.Errorf("TTL(%s) = %s, want (0, 1h]", key, ttl)
		}
	}

	// CAS.
	t.Run("cas", func(t *testing.T) {
		if ok, err := casState(ctx, rdb, k, StateRunning, StateReady); err != nil || ok {
			t.Fatalf("cas READY→RUNNING from PREPARING = %v, %v; want false", ok, err)
		}
		if ok, err := casState(ctx, rdb, k, StateRunning, StateReady, StatePreparing); err != nil || !ok {
			t.Fatalf("cas {READY,PREPARING}→RUNNING = %v, %v; want true", ok, err)
		}
		if got := rdb.Get(ctx, k.state()).Val(); got != StateRunning {
			t.Fatalf("state = %q, want RUNNING", got)
		}
		if ttl := rdb.TTL(ctx, k.state()).Val(); ttl <= 0 {
			t.Fatalf("CAS dropped the state TTL (TTL %s)", ttl)
		}
		if ok, _ := casState(ctx, rdb, runKeys("missing"), StateDone, StateRunning); ok {
			t.Fatal("cas on a missing run succeeded")
		}
	})

	// Lease renew by a non-owner fails.
	t.Run("renew", func(t *testing.T) {
		if n := renewLeaseScript.Run(ctx, rdb, []string{k.coord()}, "other:1", 10000).Val(); n != int64(0) {
			t.Fatalf("renew by non-owner = %v, want 0", n)
		}
		if n := renewLeaseScript.Run(ctx, rdb, []string{k.coord()}, "c:1", 10000).Val(); n != int64(1) {
			t.Fatalf("renew by owner = %v, want 1", n)
		}
	})

	// alive renew: not a member, then member, then stale gen.
	t.Run("alive", func(t *testing.T) {
		renew := func(gen int) int64 {
			n, _ := aliveRenewScript.Run(ctx, rdb, []string{k.alive("w1"), k.workers()}, "w1", gen, 5000).Int64()
			return n
		}
		if n := renew(1); n != 0 {
			t.Fatalf("renew by non-member = %d, want 0", n)
		}
		rdb.HSet(ctx, k.workers(), "w1", "{}")
		if n := renew(5); n != 1 {
			t.Fatalf("renew gen 5 = %d, want 1", n)
		}
		if n := renew(4); n != -1 {
			t.Fatalf("renew with stale gen 4 after 5 = %d, want -1", n)
		}
	})

	// reassign with a stale owner or gen does nothing.
	t.Run("reassign", func(t *testing.T) {
		rdb.HSet(ctx, k.segOwner(), "0", "w1:3")
		g0 := rdb.Get(ctx, k.gen()).Val()
		for _, stale := range []string{"w2:3", "w1:2"} {
			if g, _ := reassignScript.Run(ctx, rdb, []string{k.segOwner(), k.gen()}, 0, stale, "w3", 3600).Int64(); g != 0 {
				t.Fatalf("reassign with stale owner %s = gen %d, want 0", stale, g)
			}
		}
		if rdb.Get(ctx, k.gen()).Val() != g0 || rdb.HGet(ctx, k.segOwner(), "0").Val() != "w1:3" {
			t.Fatal("stale reassign changed gen or owner")
		}
		g, err := reassignScript.Run(ctx, rdb, []string{k.segOwner(), k.gen()}, 0, "w1:3", "w3", 3600).Int64()
		if err != nil || g == 0 {
			t.Fatalf("reassign by current owner = %d, %v", g, err)
		}
		if got, want := rdb.HGet(ctx, k.segOwner(), "0").Val(), ownerValue("w3", g); got != want {
			t.Fatalf("owner after reassign = %q, want %q", got, want)
		}
	})

	// Resources: acquire/release with owner and gen checks, reap returns holdings.
	t.Run("resources", func(t *testing.T) {
		rdb.HSet(ctx, k.resData("acct"), "0", `{"user":"a"}`, "1", `{"user":"b"}`)
		rdb.SAdd(ctx, k.resFree("acct"), "0", "1")
		rdb.HSet(ctx, k.res(), "acct", 2)
		rdb.HSet(ctx, k.workers(), "w2", "{}")
		rdb.HSet(ctx, k.desired("w1"), "gen", 7)
		rdb.HSet(ctx, k.desired("w2"), "gen", 8)
		if _, _, err := Acquire(ctx, rdb, "R1", "acct", "w1", 6); !errors.Is(err, ErrStaleGen) {
			t.Fatalf("acquire with stale gen = %v, want ErrStaleGen", err)
		}
		if _, _, err := Acquire(ctx, rdb, "R1", "acct", "nobody", 7); !errors.Is(err, ErrNotOwner) {
			t.Fatalf("acquire by non-member = %v, want ErrNotOwner", err)
		}
		r, ok, err := Acquire(ctx, rdb, "R1", "acct", "w1", 7)
		if err != nil || !ok || r.Payload == "" {
			t.Fatalf("acquire = %+v, %v, %v", r, ok, err)
		}
		if err := Release(ctx, rdb, "R1", "acct", r.ID, "w2", 8); !errors.Is(err, ErrNotOwner) {
			t.Fatalf("release by non-owner = %v, want ErrNotOwner", err)
		}
		if err := Release(ctx, rdb, "R1", "acct", r.ID, "w1", 6); !errors.Is(err, ErrStaleGen) {
			t.Fatalf("release with stale gen = %v, want ErrStaleGen", err)
		}
		if err := Release(ctx, rdb, "R1", "acct", r.ID, "w1", 7); err != nil {
			t.Fatalf("release by owner: %v", err)
		}
		// Two acquires drain the pool; a third finds none; reap returns w1's.
		_, _, _ = Acquire(ctx, rdb, "R1", "acct", "w1", 7)
		_, _, _ = Acquire(ctx, rdb, "R1", "acct", "w2", 8)
		if _, ok, err := Acquire(ctx, rdb, "R1", "acct", "w2", 8); ok || err != nil {
			t.Fatalf("acquire from empty pool = %v, %v; want none", ok, err)
		}
		n, err := reapScript.Run(ctx, rdb, []string{k.workers(), k.alive("w1"), k.resHeld("acct"), k.resFree("acct")}, "w1").Int()
		if err != nil || n != 1 {
			t.Fatalf("reap w1 returned %d, %v; want 1", n, err)
		}
		if got := rdb.SCard(ctx, k.resFree("acct")).Val(); got != 1 {
			t.Fatalf("free after reap = %d, want 1", got)
		}
		if rdb.HExists(ctx, k.workers(), "w1").Val() {
			t.Fatal("reaped worker still in workers")
		}
	})
}
