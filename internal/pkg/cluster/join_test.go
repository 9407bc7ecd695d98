package cluster

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestPoolJoinsWhenRedisAnswersLate: a Redis that does not answer when the
// pool starts (a partition, a stall of a loaded machine) delays the join;
// it does not leave the runner outside the pool for good. The pool says
// why it has not joined yet, and joins once Redis answers.
func TestPoolJoinsWhenRedisAnswersLate(t *testing.T) {
	gate.Short(t)
	srv, rdb := startRedis(t)
	px := startProxy(t, srv.Addr())
	px.Cut()
	var mu sync.Mutex
	var lines []string
	logged := func(s string) bool {
		mu.Lock()
		defer mu.Unlock()
		for _, l := range lines {
			if strings.Contains(l, s) {
				return true
			}
		}
		return false
	}
	idle := segmentRunnerFunc(func(context.Context, Assignment) error { return nil })
	startPool(t, px.Addr(), "late", idle, func(o *PoolOptions) {
		o.Logf = func(format string, args ...any) {
			mu.Lock()
			lines = append(lines, fmt.Sprintf(format, args...))
			mu.Unlock()
		}
	})
	waitFor(t, 20*time.Second, "the pool to say it cannot join yet", func() bool { return logged("cannot join the pool yet, retrying") })
	if logged("joined the pool") {
		t.Fatal("the pool says it joined while Redis does not answer")
	}
	px.Heal()
	waitFor(t, 20*time.Second, "the pool to join once Redis answers", func() bool { return logged("joined the pool") })
	waitRunners(t, rdb, 1)
}
