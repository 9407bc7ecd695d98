package cmd

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	forgeload "github.com/forgeload/forgeload"
)

// TestLoadHabitsOfOtherTools runs `forgeload load` with the spellings of
// k6 and Crankfire against a real loopback server. Before, each was a
// usage error: --vus was an unknown flag, the config as an argument and
// --dashboard PORT were "unknown command", and Crankfire's --json-output
// switch swallowed the next flag as a file name.
func TestLoadHabitsOfOtherTools(t *testing.T) {
	parallel(t)
	srv, hits := loadTarget(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "api.yaml")
	if err := os.WriteFile(cfg, []byte("target: "+srv.URL+"/\ntotal: 7\nthresholds:\n  - 'http_req_failed:rate < 1%'\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// k6: the config as an argument; Crankfire: --json-output as a switch,
	// here followed by a flag, so it prints the JSON summary on stdout.
	code, stdout, stderr := runMain(t, "load", cfg, "--json-output", "-q")
	if code != ExitOK {
		t.Fatalf("load FILE --json-output -q: exit %d, want 0; stderr:\n%s", code, stderr)
	}
	var sum struct {
		Requests int64 `json:"requests"`
	}
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil || sum.Requests != 7 {
		t.Errorf("stdout = %q (err %v), want the JSON summary of 7 requests", stdout, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "-q")); err == nil {
		t.Error("--json-output -q wrote a file named -q")
	}
	// k6's --vus is the closed model's key vus: given with --rate, two
	// models given inline conflict, naming vus.
	code, _, stderr = runMain(t, "load", "--target", srv.URL, "--vus", "2", "--rate", "5", "-d", "1s", "-q")
	if code != ExitBadInput || !strings.Contains(stderr, "vus") {
		t.Errorf("--vus 2 --rate 5: exit %d, want 2 naming vus; stderr:\n%s", code, stderr)
	}
	before := hits.Load()
	code, stdout, stderr = runMain(t, "load", "--target", srv.URL, "-u", "2", "--total", "4", "--json-output", "-q")
	if code != ExitOK || hits.Load()-before != 4 || !strings.Contains(stdout, `"requests": 4`) {
		t.Errorf("-u 2 --total 4: exit %d, %d requests, want 0 and 4; stdout:\n%s\nstderr:\n%s", code, hits.Load()-before, stdout, stderr)
	}
	// --dashboard PORT (no '='): the port is the dashboard's, on the
	// loopback; a port in use is refused before anything is sent.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	before = hits.Load()
	code, _, stderr = runMain(t, "load", "--dashboard", port, cfg, "-q")
	if code != ExitBadInput || !strings.Contains(stderr, "127.0.0.1:"+port) || hits.Load() != before {
		t.Errorf("--dashboard %s (in use): exit %d, %d requests, want 2, none, naming 127.0.0.1:%s; stderr:\n%s", port, code, hits.Load()-before, port, stderr)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"load", "script.js"}, "not a k6 script"},
		{[]string{"load", "valdate"}, "did you mean 'forgeload load validate FILE'"},
		{[]string{"load", cfg, "-f", filepath.Join(dir, "other.yaml")}, "give one config"},
		{[]string{"load", "--concurency", "2"}, "did you mean --concurrency?"},
		{[]string{"load", "--iterations", "2"}, "did you mean --total"},
		{[]string{"load", "--json-output=-q"}, `--json-output "-q": that is a flag`},
		{[]string{"daemon", "--labels", "ubuntu"}, "forgeload register --labels"},
	} {
		if code, _, stderr := runMain(t, tc.args...); code != ExitBadInput || !strings.Contains(stderr, tc.want) {
			t.Errorf("forgeload %v: exit %d, want 2 and %q; stderr:\n%s", tc.args, code, tc.want, stderr)
		}
	}
}

// TestRunnerHabitsOfActRunner checks act_runner's spellings: generate-config
// prints the example config (it was an unknown command) and exec -l lists
// the jobs in order without running one (-l was an unknown flag).
func TestRunnerHabitsOfActRunner(t *testing.T) {
	parallel(t)
	code, stdout, stderr := runMain(t, "generate-config")
	if code != ExitOK || stdout != string(forgeload.ExampleConfig) {
		t.Errorf("generate-config: exit %d, stdout %d bytes, want 0 and config.example.yaml (%d bytes); stderr:\n%s", code, len(stdout), len(forgeload.ExampleConfig), stderr)
	}
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	wf := filepath.Join(dir, "wf.yml")
	text := "on: push\njobs:\n  test:\n    needs: build\n    runs-on: forgeload\n    steps:\n      - run: touch " + marker + "\n  build:\n    runs-on: forgeload\n    steps:\n      - run: touch " + marker + "\n"
	if err := os.WriteFile(wf, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = runMain(t, "exec", "-l", wf)
	if code != ExitOK {
		t.Fatalf("exec -l: exit %d; stderr:\n%s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	want := [][]string{{"#", "job", "name", "needs", "file"}, {"1", "build", "build", "-", wf}, {"2", "test", "test", "build", wf}}
	if len(lines) != len(want) {
		t.Fatalf("exec -l printed:\n%s\nwant %d lines", stdout, len(want))
	}
	for i, l := range lines {
		if got := strings.Fields(l); !slices.Equal(got, want[i]) {
			t.Errorf("exec -l line %d = %q, want fields %q", i, l, want[i])
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("exec -l ran a job")
	}
}

func TestHabitArgs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want []string }{
		{[]string{"load", "--json-output"}, []string{"load", "--json-output=-"}},
		{[]string{"load", "--json-output", "-q"}, []string{"load", "--json-output=-", "-q"}},
		{[]string{"load", "--json-output", "out.json"}, []string{"load", "--json-output", "out.json"}},
		{[]string{"load", "--json-output", "-"}, []string{"load", "--json-output", "-"}},
		{[]string{"load", "--dashboard", "8089", "-q"}, []string{"load", "--dashboard=8089", "-q"}},
		{[]string{"load", "--dashboard", "localhost:8089"}, []string{"load", "--dashboard=localhost:8089"}},
		{[]string{"load", "--dashboard", "127.0.0.1:8089", "-q"}, []string{"load", "--dashboard=127.0.0.1:8089", "-q"}}, // docs/results.md
		{[]string{"load", "--dashboard", "api.yaml"}, []string{"load", "--dashboard", "api.yaml"}},
		{[]string{"load", "--dashboard", "./a:1"}, []string{"load", "--dashboard", "./a:1"}},
		{[]string{"load", "--", "--dashboard", "1"}, []string{"load", "--", "--dashboard", "1"}},
		{[]string{"exec", "--json-output"}, []string{"exec", "--json-output"}},
	} {
		if got := habitArgs(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("habitArgs(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	for in, want := range map[string]string{"8089": "127.0.0.1:8089", ":8089": "127.0.0.1:8089", "[::1]:0": "[::1]:0", "127.0.0.1:0": "127.0.0.1:0"} {
		if got := dashboardListenAddr(in); got != want {
			t.Errorf("dashboardListenAddr(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzHabitArgs: whatever the arguments, the rewrite never panics, leaves
// anything but `load` alone, never adds an argument, and turns
// --dashboard and --json-output only into their own --flag=value form.
func FuzzHabitArgs(f *testing.F) {
	for _, seed := range []string{"load --json-output", "load --json-output -q", "load --dashboard 8089 x.yaml", "load --dashboard ./a:1", "load -- --dashboard 1", "exec --json-output", "load --dashboard [::1]:99999"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, line string) {
		in := strings.Fields(line)
		out := habitArgs(in)
		if len(out) > len(in) {
			t.Fatalf("habitArgs(%q) = %q: more arguments than given", in, out)
		}
		if len(in) == 0 || in[0] != "load" {
			if !slices.Equal(in, out) {
				t.Fatalf("habitArgs(%q) = %q, want it unchanged", in, out)
			}
			return
		}
		for _, a := range out {
			if v, ok := strings.CutPrefix(a, "--dashboard="); ok && !slices.Contains(in, a) && !isListenAddr(v) {
				t.Fatalf("habitArgs(%q) made %q of a value that is not an address", in, a)
			}
		}
		_ = dashboardListenAddr(line)
	})
}
