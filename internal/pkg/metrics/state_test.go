package metrics

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// readyFake is a Readiness whose answer the test sets.
type readyFake struct {
	mu  sync.Mutex
	err error
}

func (r *readyFake) Ready() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

func (r *readyFake) set(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.err = err
}

var _ Readiness = (*readyFake)(nil)

// TestStateFollowsReadinessAndJobs: forgeload_state, Gitea's runner's
// gauge, is unavailable while not ready, busy while a job runs and idle
// otherwise, one state at a time.
func TestStateFollowsReadinessAndJobs(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewPedanticRegistry()
	m := New(reg, "v", "n")
	ready := &readyFake{err: errors.New("starting")}
	if err := m.RegisterState(reg, ready); err != nil {
		t.Fatal(err)
	}
	want := func(state string) string {
		var b strings.Builder
		b.WriteString("# HELP forgeload_state 1 for the runner's state (idle, busy or unavailable, as Gitea's runner), 0 for the others.\n# TYPE forgeload_state gauge\n")
		for _, s := range []string{StateBusy, StateIdle, StateUnavailable} {
			v := "0"
			if s == state {
				v = "1"
			}
			b.WriteString(`forgeload_state{state="` + s + `"} ` + v + "\n")
		}
		return b.String()
	}
	for _, step := range []struct {
		err     error
		running int
		state   string
	}{
		{errors.New("starting"), 0, StateUnavailable},
		{nil, 0, StateIdle},
		{nil, 1, StateBusy},
		{errors.New("forge down"), 1, StateUnavailable},
	} {
		ready.set(step.err)
		m.SetRunning(step.running)
		if err := testutil.GatherAndCompare(reg, strings.NewReader(want(step.state)), "forgeload_state"); err != nil {
			t.Errorf("ready %v, %d running: %v", step.err, step.running, err)
		}
	}
}
