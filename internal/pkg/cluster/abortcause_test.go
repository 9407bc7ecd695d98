package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestAbortNamesTheCause: a run whose context is cancelled with a cause
// (the coordinator's abort_on_fail threshold breached on the merged
// seconds) logs and records that cause, not "context canceled", and the
// error unwraps to both.
func TestAbortNamesTheCause(t *testing.T) {
	gate.Short(t)
	srv, rdb := startRedis(t)
	started := make(chan struct{})
	var once sync.Once
	startPool(t, srv.Addr(), "a", segmentRunnerFunc(func(ctx context.Context, _ Assignment) error {
		once.Do(func() { close(started) })
		<-ctx.Done()
		return nil
	}), nil)
	waitRunners(t, rdb, 1)
	var mu sync.Mutex
	var logs []string
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	breach := errors.New("aborted: http_req_failed:rate < 1% (0.01) at 2s (got 100.00%)")
	res := make(chan error, 1)
	go func() {
		_, err := Coordinate(ctx, rdb, Run{Spec: []byte(`{}`), Duration: 30 * time.Second, Workers: 1, JoinTimeout: 10 * time.Second},
			CoordOptions{RunID: "cause", StartLead: 200 * time.Millisecond, Logf: func(f string, a ...any) {
				mu.Lock()
				defer mu.Unlock()
				logs = append(logs, fmt.Sprintf(f, a...))
			}})
		res <- err
	}()
	select {
	case <-started:
	case <-time.After(30 * time.Second):
		t.Fatal("the segment did not start within 30 s")
	}
	cancel(breach)
	var err error
	select {
	case err = <-res:
	case <-time.After(30 * time.Second):
		t.Fatal("Coordinate did not return within 30 s of the cancel")
	}
	if !errors.Is(err, breach) || !errors.Is(err, context.Canceled) {
		t.Errorf("Coordinate = %v, want an error that is the breach and context.Canceled", err)
	}
	mu.Lock()
	all := strings.Join(logs, "\n")
	mu.Unlock()
	if !strings.Contains(all, "aborting: run cause: stopped: "+breach.Error()) || strings.Contains(all, "context canceled") {
		t.Errorf("log:\n%s\nwant the abort to name the breach, never context canceled", all)
	}
	reason, _ := rdb.HGet(context.Background(), runKeys("cause").meta(), "abort_reason").Result()
	if !strings.Contains(reason, breach.Error()) {
		t.Errorf("abort reason in Redis %q, want the breach", reason)
	}
}
