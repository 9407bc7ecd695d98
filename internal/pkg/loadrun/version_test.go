package loadrun

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/forgeload/forgeload/internal/pkg/cluster"
	"github.com/forgeload/forgeload/internal/pkg/redistest"
)

// TestClusterRefusesOtherVersion: a coordinator of an older forgeload
// (spec version 1: the raw YAML for each worker to parse) sends its test
// to daemons of this version through a real Redis: they send nothing, and
// the run fails saying the members run different versions.
func TestClusterRefusesOtherVersion(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	client := func() *redis.Client {
		c := redis.NewClient(&redis.Options{Addr: srv.Addr(), DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second,
			MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}})
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 2)
	for _, id := range []string{"w1", "w2"} {
		p, err := cluster.NewPool(client(), cluster.PoolOptions{ID: id, Runner: &SegmentRunner{}, Capacity: 1, Logf: t.Logf})
		if err != nil {
			t.Fatal(err)
		}
		go func() { done <- p.Run(ctx) }()
	}
	t.Cleanup(func() {
		cancel()
		for range 2 {
			<-done
		}
	})
	rdb := client()
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := cluster.Status(ctx, rdb)
		if err == nil && len(st.Runners) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the two pools did not announce themselves within 30 s: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	v1 := []byte(`{"v":1,"name":"perf.yaml","config":"dGFyZ2V0OiBodHRwOi8vMTI3LjAuMC4xOjkvCnJhdGU6IDEwCg=="}`)
	_, err := cluster.Coordinate(ctx, rdb, cluster.Run{Spec: v1, Duration: 2 * time.Second, Workers: 2, JoinTimeout: 20 * time.Second},
		cluster.CoordOptions{Coordinator: "w1", RunID: "old", StartLead: 200 * time.Millisecond, Logf: t.Logf})
	if err == nil || !strings.Contains(err.Error(), "could not run segment") || !strings.Contains(err.Error(), "run the same forgeload version on every cluster member") {
		t.Fatalf("Coordinate with a version 1 spec: %v, want the run failed with the version refusal", err)
	}
}
