package cluster

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestScripts(t *testing.T) {
	gate.Short(t)
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
			n, _ := aliveRenewScript.Run(ctx, rdb, []string{k.alive("w1"), k.workers(), k.renewals("w1")}, "w1", gen, 5000, 3600).Int64()
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
		// The coordinator reaps only on the renewal count it judged
		// expired; a renewal since then keeps the worker, and once it
		// is reaped no renewal succeeds.
		reap := func(seen string) int64 {
			n, _ := reapUnrenewedScript.Run(ctx, rdb, []string{k.workers(), k.alive("w1"), k.renewals("w1")}, "w1", seen).Int64()
			return n
		}
		if n := reap(""); n != 0 {
			t.Fatalf("reap on a count of none after a renewal = %d, want 0", n)
		}
		if n := reap("1"); n != 1 {
			t.Fatalf("reap on the current count = %d, want 1", n)
		}
		if n := renew(6); n != 0 {
			t.Fatalf("renew after the reap = %d, want 0", n)
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
}

// TestAbortRunWritesReasonWithState: the state and the reason change in
// one step. Before they were two calls, and a worker that read the state
// between them left with a bare "run aborted" that said nothing of why
// (seen in CI as a failure of TestCoordinatorLosesRedis).
func TestAbortRunWritesReasonWithState(t *testing.T) {
	gate.Short(t)
	_, rdb := startRedis(t)
	ctx := context.Background()
	newRun := func(id, state string) runKeys {
		k := runKeys(id)
		if err := createRunScript.Run(ctx, rdb, []string{k.state(), k.coord(), k.gen(), k.meta()}, "c:1", 10000, 3600, "plan", "{}").Err(); err != nil {
			t.Fatal(err)
		}
		rdb.Set(ctx, k.state(), state, redis.KeepTTL)
		return k
	}
	reason := func(k runKeys) string { return rdb.HGet(ctx, k.meta(), "abort_reason").Val() }

	// Redis runs one script at a time, so a reader running alongside sees
	// either the old state or ABORTED with its reason, never ABORTED alone.
	k := newRun("live", StateRunning)
	stop := make(chan struct{})
	seen := make(chan string, 1)
	go func() {
		defer close(seen)
		for {
			select {
			case <-stop:
				return
			default:
			}
			pipe := rdb.TxPipeline()
			st := pipe.Get(ctx, k.state())
			why := pipe.HGet(ctx, k.meta(), "abort_reason")
			_, _ = pipe.Exec(ctx)
			if st.Val() == StateAborted {
				seen <- why.Val()
				return
			}
		}
	}()
	ok, err := abortRun(ctx, rdb, k, 0, "abort_reason", "the coordinator was lost")
	if err != nil || !ok {
		t.Fatalf("abortRun on a RUNNING run = %v, %v; want true", ok, err)
	}
	if got := <-seen; got != "the coordinator was lost" {
		t.Errorf("a reader saw ABORTED with reason %q, want the reason written with it", got)
	}
	close(stop)
	if ttl := rdb.TTL(ctx, k.state()).Val(); ttl <= 0 {
		t.Errorf("abortRun dropped the state TTL (TTL %s)", ttl)
	}

	// A finished or already aborted run keeps its state and its reason.
	for _, st := range []string{StateDone, StateAborted} {
		k := newRun("ended-"+st, st)
		rdb.HSet(ctx, k.meta(), "abort_reason", "first")
		if ok, err := abortRun(ctx, rdb, k, time.Hour, "abort_reason", "second"); err != nil || ok {
			t.Errorf("abortRun on a %s run = %v, %v; want false", st, ok, err)
		}
		if got := rdb.Get(ctx, k.state()).Val(); got != st {
			t.Errorf("state after abortRun on a %s run = %s", st, got)
		}
		if got := reason(k); got != "first" {
			t.Errorf("reason after abortRun on a %s run = %q, want the first kept", st, got)
		}
	}

	// A run whose keys are gone is written back only when asked, with a TTL.
	gone := runKeys("gone")
	if ok, _ := abortRun(ctx, rdb, gone, 0, "abort_reason", "x"); ok || rdb.Exists(ctx, gone.state()).Val() != 0 {
		t.Errorf("abortRun without a TTL recreated a missing run")
	}
	if ok, err := abortRun(ctx, rdb, gone, time.Hour, "abort_reason", "redis restarted"); err != nil || !ok {
		t.Fatalf("abortRun with a TTL on a missing run = %v, %v; want true", ok, err)
	}
	if got := rdb.Get(ctx, gone.state()).Val(); got != StateAborted || reason(gone) != "redis restarted" {
		t.Errorf("missing run written back as %q with reason %q", got, reason(gone))
	}
	for _, key := range []string{gone.state(), gone.meta()} {
		if ttl := rdb.TTL(ctx, key).Val(); ttl <= 0 || ttl > time.Hour {
			t.Errorf("TTL(%s) = %s, want (0, 1h]", key, ttl)
		}
	}
}
