package cmd

import (
	"encoding/json"
	"testing"
	"time"
)

// TestLoadGracefulShutdownMeansCrankfires runs one request that takes 2 s
// when the run ends (after 500 ms): with no graceful_shutdown it
// finishes, as under Crankfire's 5 s default (forgeload's was 1 s and
// cancelled it); graceful_shutdown: 1s cancels it, and a negative value
// cancels at once, in both tools.
func TestLoadGracefulShutdownMeansCrankfires(t *testing.T) {
	parallel(t)
	srv := slowTarget(t, 2*time.Second)
	for _, tc := range []struct {
		name   string
		args   []string
		errors int64
	}{
		{"default 5s", nil, 0},
		{"1s", []string{"--graceful-shutdown", "1s"}, 1},
		{"negative", []string{"--graceful-shutdown", "-1s"}, 1},
	} {
		args := append([]string{"load", "--target", srv.URL, "-d", "500ms", "-c", "1", "-q", "--json-output"}, tc.args...)
		_, stdout, stderr := runMain(t, args...)
		var sum struct {
			Requests int64 `json:"requests"`
			Errors   int64 `json:"errors"`
		}
		if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
			t.Fatalf("%s: stdout is not the JSON summary (%v):\n%s\nstderr:\n%s", tc.name, err, stdout, stderr)
		}
		if sum.Requests != 1 || sum.Errors != tc.errors {
			t.Errorf("graceful_shutdown %s: %d requests, %d errors, want 1 and %d", tc.name, sum.Requests, sum.Errors, tc.errors)
		}
	}
}
