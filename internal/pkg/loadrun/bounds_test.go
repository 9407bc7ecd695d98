package loadrun

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/forgeload/forgeload/internal/pkg/load/build"
	"github.com/forgeload/forgeload/internal/pkg/nettest"
)

// stopBound is how soon a load step must end after a cancel or its
// max_duration (the design's "about 2 s"), plus a margin for a loaded
// test machine.
const stopBound = 2*time.Second + time.Second

// runSilent runs a load test with graceful_shutdown 1h and timeout 10m
// against target, which never answers, under limits, with the inline keys
// of more on top, and returns how long Run took.
func runSilent(ctx context.Context, t *testing.T, target string, limits build.Limits, more map[string]string) time.Duration {
	t.Helper()
	inline := map[string]string{"target": target, "rate": "20", "concurrency": "4", "graceful_shutdown": "1h", "timeout": "10m"}
	maps.Copy(inline, more)
	cfg, err := Load(Input{Inline: inline})
	if err != nil {
		t.Fatal(err)
	}
	test, err := New(ctx, cfg, Settings{Engine: build.Settings{Limits: limits}})
	if err != nil {
		t.Fatal(err)
	}
	defer test.Close()
	start := time.Now()
	out, err := test.Run(ctx)
	el := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if out.Result.Classes["canceled"] == 0 {
		t.Errorf("classes %v: want the requests in flight cancelled and counted", out.Result.Classes)
	}
	return el
}

// TestRunStopsWithinBoundWhateverGraceAndTimeout runs load tests with
// graceful_shutdown 1h and timeout 10m against a real target that never
// answers: a cancel after the plan's end, and the runner's max_duration,
// each end the run within about 2 s. Before, the drain after the plan's
// end watched neither, and the run lasted until its requests timed out.
func TestRunStopsWithinBoundWhateverGraceAndTimeout(t *testing.T) {
	t.Parallel()
	target := nettest.SilentTarget(t)
	t.Run("cancel in the drain", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		const at = 1500 * time.Millisecond // the plan ends at 1 s
		timer := time.AfterFunc(at, cancel)
		defer timer.Stop()
		if el := runSilent(ctx, t, target, build.Limits{}, map[string]string{"duration": "1s"}); el > at+stopBound {
			t.Errorf("cancelled at %v, the run took %v, want at most %v", at, el, at+stopBound)
		}
	})
	t.Run("cancel during the plan", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		const at = time.Second
		timer := time.AfterFunc(at, cancel)
		defer timer.Stop()
		if el := runSilent(ctx, t, target, build.Limits{}, map[string]string{"duration": "1h"}); el > at+stopBound {
			t.Errorf("cancelled at %v, the run took %v, want at most %v", at, el, at+stopBound)
		}
	})
	t.Run("max_duration", func(t *testing.T) {
		t.Parallel()
		const maxDur = time.Second
		for _, d := range []string{"", "1s"} { // filled by the limit, or asked for
			if el := runSilent(t.Context(), t, target, build.Limits{MaxDuration: maxDur}, map[string]string{"duration": d}); el > maxDur+stopBound {
				t.Errorf("duration %q under max_duration %v: the run took %v, want at most %v", d, maxDur, el, maxDur+stopBound)
			}
		}
	})
}

// TestLimitsRefuseBeforeSending: a config asking for more graceful
// shutdown or more endpoints than the runner allows is refused before
// anything is sent, naming the limit and its config key.
func TestLimitsRefuseBeforeSending(t *testing.T) {
	t.Parallel()
	target := nettest.SilentTarget(t)
	var eps strings.Builder
	eps.WriteString("[")
	for i := range 10_000 {
		if i > 0 {
			eps.WriteString(",")
		}
		fmt.Fprintf(&eps, "{name: e%d, path: /e%d}", i, i)
	}
	eps.WriteString("]")
	limits := build.Limits{MaxGracefulShutdown: 30 * time.Second, MaxEndpoints: 1000}
	for _, c := range []struct {
		name   string
		inline map[string]string
		want   string
	}{
		{"graceful_shutdown", map[string]string{"graceful_shutdown": "1h"}, "graceful_shutdown 1h0m0s is above this runner's limit of 30s (load.max_graceful_shutdown in the runner config)"},
		{"endpoints", map[string]string{"endpoints": eps.String()}, "10000 endpoints are above this runner's limit of 1000 (load.max_endpoints in the runner config)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			inline := map[string]string{"target": target, "rate": "10", "duration": "1s"}
			maps.Copy(inline, c.inline)
			cfg, err := Load(Input{Inline: inline})
			if err != nil {
				t.Fatal(err)
			}
			test, err := New(t.Context(), cfg, Settings{Engine: build.Settings{Limits: limits}})
			if err == nil {
				test.Close()
				t.Fatalf("New = nil error, want %q", c.want)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("New = %v, want %q", err, c.want)
			}
		})
	}
}
