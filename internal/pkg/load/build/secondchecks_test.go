package build

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/forgeload/forgeload/internal/pkg/load"
)

// TestSecondsCarryCheckCounts: every per-second snapshot carries the
// check counts of its second, which add up to the run's (a multi-host
// run's workers ship them), and an abort_on_fail checks:rate threshold is
// judged on them: against a target whose every body fails the check it
// stops the run after its delay. Before, the seconds carried no check
// counts, the threshold could not be judged during the run, and the run
// went on to its end.
func TestSecondsCarryCheckCounts(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `{"error": "database is down"}`)
	}))
	defer srv.Close()
	cfg := parse(t, `
target: `+srv.URL+`
rate: 50
duration: 6s
checks:
  - status: [200]
  - body_not_contains: error
thresholds:
  - expr: checks:rate > 99%
    abort_on_fail: true
    delay: 1s
`)
	var mu sync.Mutex
	var sum []load.CheckStats
	p, err := New(cfg, Settings{OnSecond: func(s *load.Snapshot) {
		mu.Lock()
		defer mu.Unlock()
		if sum == nil {
			sum = make([]load.CheckStats, len(s.Checks))
		}
		for i, c := range s.Checks {
			sum[i].Name = c.Name
			sum[i].Passed += c.Passed
			sum[i].Failed += c.Failed
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	res, err := p.Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var ab *Abort
	if !errors.As(p.Stopped(), &ab) || ab.Threshold.Source != "checks:rate > 99%" || ab.At < time.Second {
		t.Fatalf("Stopped() = %v, want the checks:rate threshold to abort the run at 1s or later", p.Stopped())
	}
	mu.Lock()
	defer mu.Unlock()
	if len(sum) != 2 || len(res.Checks) != 2 {
		t.Fatalf("seconds' checks %+v, result's %+v: want both checks in each", sum, res.Checks)
	}
	for i := range sum {
		if sum[i] != res.Checks[i] {
			t.Errorf("check %d: the seconds add up to %+v, the run counted %+v", i, sum[i], res.Checks[i])
		}
	}
}
