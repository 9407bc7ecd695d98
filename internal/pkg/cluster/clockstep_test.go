package cluster

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/forgeload/forgeload/internal/pkg/redistest"
)

// expireLeases does to the run's worker leases what a forward step of
// Redis's clock past their PX does: they are gone at once. (The time proxy
// steps TIME; key expiry follows the real clock, so the test applies it.)
func expireLeases(t *testing.T, rdb *redis.Client) {
	t.Helper()
	ctx := context.Background()
	keys, err := rdb.Keys(ctx, "lt:{*}:w:*:alive").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) > 0 {
		if err := rdb.Del(ctx, keys...).Err(); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("expired %d leases at once, as a forward step of Redis's clock does", len(keys))
}

// TestRedisClockStepForwardKeepsOneOwner: Redis's clock steps 5 s forward
// mid-run, so every worker lease expires at once while each worker, on
// its own monotonic clock, is well inside its fence. No share may move:
// the coordinator judges a lease by the renewals it saw, on its own
// monotonic clock, not by Redis's expiry; every arrival is sent once.
func TestRedisClockStepForwardKeepsOneOwner(t *testing.T) {
	gate.Long(t, 8)
	srv, rdb := startRedis(t)
	px := redistest.StartTimeProxyProcess(t, srv.Addr())
	log := newArrivalLog()
	for _, id := range []string{"a", "b", "c", "spare"} {
		startPool(t, px.Addr(), id, log.runner(id), nil)
	}
	via := newClient(t, px.Addr())
	waitRunners(t, via, 4)
	const rate, dur = 30, 6 * time.Second
	res := coordinateAsync(t, via, Run{Spec: []byte(`{"rate":30}`), Duration: dur, Workers: 3, Spares: 1},
		CoordOptions{StartLead: 300 * time.Millisecond, Logf: t.Logf, SweepInterval: quickSweep})
	waitFor(t, 30*time.Second, "the workers to send", func() bool { return log.count() >= 30 })
	px.SetTimeOffset(5 * time.Second)
	expireLeases(t, rdb)
	r := <-res
	if r.err != nil {
		t.Fatalf("Coordinate: %v", r.err)
	}
	log.checkNoDoubleOwner(t)
	if r.out.Reassignments != 0 {
		t.Errorf("reassignments = %d after a forward step of Redis's clock, want 0: every worker was alive and inside its fence", r.out.Reassignments)
	}
	for _, w := range r.out.Workers {
		if w.Lost {
			t.Errorf("worker %s found lost (%s) after a forward step of Redis's clock", w.ID, w.Reason)
		}
	}
	if got, want := log.count(), int(rate*dur/time.Second); got != want {
		t.Errorf("target got %d arrivals, want exactly the plan's %d", got, want)
	}
}

// TestRedisClockStepBackAfterKill: a worker dies and Redis's clock steps
// 10 s back, so its lease would outlive it by 10 s in Redis. The share
// still moves within the lease and two sweeps of the coordinator's own
// clock after the death.
func TestRedisClockStepBackAfterKill(t *testing.T) {
	gate.Long(t, 9)
	srv, rdb := startRedis(t)
	px := redistest.StartTimeProxyProcess(t, srv.Addr())
	log := newArrivalLog()
	pools := map[string]*testPool{}
	for _, id := range []string{"a", "b", "spare"} {
		pools[id] = startPool(t, px.Addr(), id, log.runner(id), quick)
	}
	via := newClient(t, px.Addr())
	waitRunners(t, via, 3)
	res := coordinateAsync(t, via, Run{Spec: []byte(`{"rate":30}`), Duration: 9 * time.Second, Workers: 2, Spares: 1},
		CoordOptions{StartLead: 300 * time.Millisecond, Logf: t.Logf, SweepInterval: quickSweep})
	waitFor(t, 30*time.Second, "a to send", func() bool { return sentBy(log, "a") >= 3 || len(log.segOf("a")) == 0 && log.count() > 10 })
	if sentBy(log, "a") < 3 {
		t.Skip("a was ranked as the spare; nothing to kill")
	}
	seg := segOwnedBy(t, log, "a")
	pools["a"].p.o.skipAbandon = true
	pools["a"].cancel()
	killed := time.Now()
	px.SetTimeOffset(-10 * time.Second)
	keys, _ := rdb.Keys(context.Background(), "lt:{*}:w:a:alive").Result()
	for _, k := range keys {
		rdb.PExpire(context.Background(), k, 12*time.Second) // the lease as a 10 s backward step leaves it
	}
	var at time.Time
	waitFor(t, 20*time.Second, "a's segment to be driven again", func() bool {
		for _, id := range []string{"b", "spare"} {
			if ts, ok := log.firstBy(id, seg, killed); ok {
				at = ts
				return true
			}
		}
		return false
	})
	var o PoolOptions
	quick(&o)
	promised := o.LeaseTTL + 2*quickSweep
	if d := at.Sub(killed); d > promised+2*time.Second {
		t.Errorf("segment %d resumed %s after the kill and a 10 s backward step of Redis's clock, want about %s at most (%s allowed)", seg, d, promised, promised+2*time.Second)
	} else {
		t.Logf("segment %d resumed %s after the kill", seg, d)
	}
	if r := <-res; r.err != nil {
		t.Fatalf("Coordinate: %v", r.err)
	}
	log.checkNoDoubleOwner(t)
}

// TestRunEndIgnoresRedisClock: the end of a run never waits on Redis's
// clock alone. After a 60 s backward step, or with Redis's clock frozen,
// a 3 s run still ends about 3 s after its start.
func TestRunEndIgnoresRedisClock(t *testing.T) {
	gate.Long(t, 5)
	for _, tc := range []struct {
		name string
		step func(*redistest.Proxy)
	}{
		{"back 60s", func(p *redistest.Proxy) { p.SetTimeOffset(-60 * time.Second) }},
		{"frozen", func(p *redistest.Proxy) { p.FreezeTime() }},
	} {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			srv, _ := startRedis(t)
			px := redistest.StartTimeProxyProcess(t, srv.Addr())
			log := newArrivalLog()
			for _, id := range []string{"a", "b"} {
				startPool(t, px.Addr(), id, log.runner(id), nil)
			}
			via := newClient(t, px.Addr())
			waitRunners(t, via, 2)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			res := make(chan coordResult, 1)
			go func() {
				out, err := Coordinate(ctx, via, Run{Spec: []byte(`{"rate":20}`), Duration: 3 * time.Second, Workers: 2},
					CoordOptions{StartLead: 300 * time.Millisecond, Logf: t.Logf, SweepInterval: quickSweep})
				res <- coordResult{out, err}
			}()
			waitFor(t, 30*time.Second, "the workers to send", func() bool { return log.count() >= 4 })
			first := time.Now()
			tc.step(px)
			select {
			case r := <-res:
				if r.err != nil {
					t.Fatalf("Coordinate: %v", r.err)
				}
				t.Logf("run ended %s after the step", time.Since(first))
			case <-time.After(10 * time.Second): // the run has 3 s; 10 s fails a run held by Redis's clock
				cancel()
				<-res
				t.Fatalf("a 3 s run still going 10 s after Redis's clock stepped (%s)", tc.name)
			}
		})
	}
}
