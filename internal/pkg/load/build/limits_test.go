package build

import (
	"strings"
	"testing"
	"time"

	"github.com/forgeload/forgeload/internal/pkg/load"
)

// TestCheckShare: a worker checks its share of a multi-host run against its
// own limits: share of the peak rate, scaled VUs, its whole concurrency in
// the open model, the duration.
func TestCheckShare(t *testing.T) {
	t.Parallel()
	third := func(v int) int { return v / 3 }
	for _, tc := range []struct {
		name  string
		o     load.Options
		share float64
		l     Limits
		want  string
	}{
		{"share under max_rate", load.Options{Rate: 300, Concurrency: 10}, 1.0 / 3, Limits{MaxRate: 150}, ""},
		{"share over max_rate", load.Options{Rate: 300, Concurrency: 10}, 2.0 / 3, Limits{MaxRate: 150}, "load.max_rate"},
		{"ramp peak", load.Options{Stages: []load.Stage{load.Ramp(10, 900, time.Second)}}, 1.0 / 3, Limits{MaxRate: 250}, "300 req/s"},
		{"open concurrency is per host", load.Options{Rate: 10, Concurrency: 50}, 0.5, Limits{MaxConcurrency: 40}, "load.max_concurrency"},
		{"closed vus scale", load.Options{VUs: 90}, 1.0 / 3, Limits{MaxConcurrency: 30}, ""},
		{"closed vus over", load.Options{VUs: 99}, 1.0 / 3, Limits{MaxConcurrency: 30}, "concurrency/vus 33"},
		{"duration", load.Options{Rate: 1, Duration: time.Hour}, 0.5, Limits{MaxDuration: time.Minute}, "load.max_duration"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := tc.l.CheckShare(&tc.o, tc.share, third)
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("CheckShare = %v, want %q", err, tc.want)
			}
		})
	}
}

// TestLimitsNameTheirUnits: a limit's message names the unit of the limit
// as well as of what exceeded it (issue 28).
func TestLimitsNameTheirUnits(t *testing.T) {
	t.Parallel()
	l := Limits{MaxRate: 150, MaxConcurrency: 30, MaxDuration: time.Minute, MaxGracefulShutdown: time.Second}
	o := load.Options{Rate: 300, Concurrency: 40, Duration: time.Hour, Grace: time.Minute}
	err := l.Check(&o)
	for _, want := range []string{
		"rate 300 req/s is above this runner's limit of 150 req/s (load.max_rate",
		"concurrency/vus 40 is above this runner's limit of 30 (load.max_concurrency",
		"duration 1h0m0s is above this runner's limit of 1m0s (load.max_duration",
		"graceful_shutdown 1m0s is above this runner's limit of 1s (load.max_graceful_shutdown",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Check = %v, want it to contain %q", err, want)
		}
	}
	o = load.Options{Rate: 300, Concurrency: 10}
	want := "this worker's share of the rate, 200 req/s, is above its limit of 150 req/s (load.max_rate"
	if err := l.CheckShare(&o, 2.0/3, nil); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("CheckShare = %v, want it to contain %q", err, want)
	}
}

// TestDefaultMaxConcurrency: an arrival-rate run's pool grows up to
// min(1000, peak rate × timeout), capped by the runner's
// load.max_concurrency and never below concurrency; an explicit
// max_concurrency above the runner's limit is refused, naming it.
func TestDefaultMaxConcurrency(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		yaml  string
		limit int
		want  int
	}{
		{"target: http://x/\nrate: 200\nduration: 5s\n", 0, 1000},
		{"target: http://x/\nrate: 10\nduration: 5s\n", 0, 300},
		{"target: http://x/\nrate: 10\ntimeout: 2s\nduration: 5s\n", 0, 20},
		{"target: http://x/\nrate: 200\nduration: 5s\n", 50, 50},
		{"target: http://x/\nrate: 1\nconcurrency: 40\nduration: 5s\n", 0, 40},
		{"target: http://x/\nload_patterns: [{type: ramp, from_rps: 1, to_rps: 20, duration: 5s}]\n", 0, 600},
		{"target: http://x/\nrate: 10\nmax_concurrency: 7\nduration: 5s\n", 0, 7},
		{"target: http://x/\nconcurrency: 3\nduration: 5s\n", 0, 0},
	} {
		o, _, err := EngineOptions(parse(t, tc.yaml), Limits{MaxConcurrency: tc.limit})
		if err != nil || o.MaxConcurrency != tc.want {
			t.Errorf("%q (limit %d): max concurrency %d, err %v; want %d", tc.yaml, tc.limit, o.MaxConcurrency, err, tc.want)
		}
	}
	_, _, err := EngineOptions(parse(t, "target: http://x/\nrate: 10\nmax_concurrency: 70\nduration: 5s\n"), Limits{MaxConcurrency: 50})
	if err == nil || !strings.Contains(err.Error(), "max_concurrency 70 is above this runner's limit of 50 (load.max_concurrency") {
		t.Errorf("explicit max_concurrency above the limit: %v", err)
	}
}
