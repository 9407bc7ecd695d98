package config

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	forgeload "github.com/forgeload/forgeload"
)

// env returns a getenv over m.
func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestDefaultIsValid(t *testing.T) {
	t.Parallel()
	got, err := Parse("none", nil, nil)
	if err != nil {
		t.Fatalf("Parse(no file) error: %v", err)
	}
	if !reflect.DeepEqual(got, Default()) {
		t.Errorf("Parse(no file) = %+v, want Default() = %+v", got, Default())
	}
}

// TestExampleIsDefault keeps config.example.yaml in step with Default: the
// example lists every key with its default value.
func TestExampleIsDefault(t *testing.T) {
	t.Parallel()
	got, err := Parse("config.example.yaml", forgeload.ExampleConfig, nil)
	if err != nil {
		t.Fatalf("parse config.example.yaml: %v", err)
	}
	if !reflect.DeepEqual(got, Default()) {
		t.Errorf("config.example.yaml gives %+v, want Default() = %+v", got, Default())
	}
}

// TestExampleDocumentsEveryKey fails when a key is added to Config but not to
// config.example.yaml, or is there without a comment above it.
func TestExampleDocumentsEveryKey(t *testing.T) {
	t.Parallel()
	text := string(forgeload.ExampleConfig)
	root := reflect.TypeFor[Config]()
	for i := range root.NumField() {
		sec := root.Field(i)
		secName := keyName(sec)
		secRe := regexp.MustCompile(`(?m)^` + secName + `:\s*$`)
		loc := secRe.FindStringIndex(text)
		if loc == nil {
			t.Errorf("config.example.yaml has no %q section", secName)
			continue
		}
		body := text[loc[1]:]
		if next := regexp.MustCompile(`(?m)^[a-z_]+:`).FindStringIndex(body); next != nil {
			body = body[:next[0]]
		}
		for j := range sec.Type.NumField() {
			key := keyName(sec.Type.Field(j))
			keyRe := regexp.MustCompile(`(?m)^(  #.*\n)+  ` + key + `:`)
			if !keyRe.MatchString(body) {
				t.Errorf("config.example.yaml: key %s.%s is missing or has no comment above it", secName, key)
			}
		}
	}
}

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		yaml string
		env  map[string]string
		want func(*Config) // edits Default() into the expected config
	}{
		{"empty file keeps defaults", "", nil, func(*Config) {}},
		{"comments only keep defaults", "# nothing\n", nil, func(*Config) {}},
		{"section header alone keeps defaults", "runner:\nload:\n", nil, func(*Config) {}},
		{"scalars", "runner:\n  capacity: 4\n  insecure: true\n  timeout: 1m30s\nload:\n  max_rate: 2.5\n", nil, func(c *Config) {
			c.Runner.Capacity = 4
			c.Runner.Insecure = true
			c.Runner.Timeout = 90 * time.Second
			c.Load.MaxRate = 2.5
		}},
		{"metrics load retention", "metrics:\n  load_retention: 90s\n", nil, func(c *Config) { c.Metrics.LoadRetention = 90 * time.Second }},
		{"lists and maps", "runner:\n  labels: [a, 'b:docker://node:20']\n  envs: {A: '1', B: }\nload:\n  allow_targets: [10.0.0.0/8, '*.example.com']\n", nil, func(c *Config) {
			c.Runner.Labels = []string{"a", "b:docker://node:20"}
			c.Runner.Envs = map[string]string{"A": "1", "B": ""}
			c.Load.AllowTargets = []string{"10.0.0.0/8", "*.example.com"}
		}},
		{"empty value means zero", "runner:\n  env_file:\n  shutdown_timeout:\nload:\n  max_rate:\n", nil, func(c *Config) {
			c.Runner.EnvFile = ""
			c.Runner.ShutdownTimeout = 0
			c.Load.MaxRate = 0
		}},
		{"env overrides file", "runner:\n  capacity: 4\n", map[string]string{"FORGELOAD_RUNNER_CAPACITY": "8"}, func(c *Config) {
			c.Runner.Capacity = 8
		}},
		{"empty env is ignored", "runner:\n  capacity: 4\n", map[string]string{"FORGELOAD_RUNNER_CAPACITY": ""}, func(c *Config) {
			c.Runner.Capacity = 4
		}},
		{"short cluster timings", "cluster:\n  heartbeat: 250ms\n  lease: 1250ms\n  fence_after: 875ms\n  sweep_interval: 250ms\n", map[string]string{
			"FORGELOAD_CLUSTER_COORDINATOR_LEASE":      "2s",
			"FORGELOAD_CLUSTER_COORDINATOR_LOST_AFTER": "500ms",
		}, func(c *Config) {
			c.Cluster.Heartbeat, c.Cluster.Lease, c.Cluster.FenceAfter, c.Cluster.SweepInterval = 250*time.Millisecond, 1250*time.Millisecond, 875*time.Millisecond, 250*time.Millisecond
			c.Cluster.CoordinatorLease, c.Cluster.CoordinatorLostAfter = 2*time.Second, 500*time.Millisecond
		}},
		{"env of every kind", "", map[string]string{
			"FORGELOAD_LOG_LEVEL":                 "debug",
			"FORGELOAD_RUNNER_LABELS":             "a, b ,,c:host",
			"FORGELOAD_RUNNER_ENVS":               "A=1,B=x=y",
			"FORGELOAD_RUNNER_FETCH_INTERVAL_MAX": "1m",
			"FORGELOAD_METRICS_ENABLED":           "true",
			"FORGELOAD_CLUSTER_REDIS_URL":         "rediss://u:p@redis:6380/1",
		}, func(c *Config) {
			c.Log.Level = "debug"
			c.Runner.Labels = []string{"a", "b", "c:host"}
			c.Runner.Envs = map[string]string{"A": "1", "B": "x=y"}
			c.Runner.FetchIntervalMax = time.Minute
			c.Metrics.Enabled = true
			c.Cluster.RedisURL = "rediss://u:p@redis:6380/1"
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Parse("f.yaml", []byte(tt.yaml), env(tt.env))
			if err != nil {
				t.Fatalf("Parse error: %v", err)
			}
			want := Default()
			tt.want(want)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Parse = %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		yaml string
		env  map[string]string
		want string // the whole error, or a prefix of it ending in "..."
	}{
		{"unknown key", "runner:\n  capacty: 2\n", nil,
			`f.yaml:2: runner: unknown key "capacty"; did you mean "capacity"? known keys: action_cache_dir, action_cache_max_mb, capacity, comment_token, comment_token_file, env_file, envs, fetch_interval, fetch_interval_max, fetch_timeout, file, final_report_timeout, insecure, labels, node, report_interval, shutdown_timeout, timeout`},
		{"unknown section", "runers:\n  capacity: 2\n", nil,
			`f.yaml:1: unknown key "runers"; did you mean "runner"? known keys: cache, cluster, container, load, log, metrics, runner`},
		{"not a number", "runner:\n  capacity: abc\n", nil,
			`f.yaml:2: runner.capacity: "abc" is not a whole number (want e.g. 2)`},
		{"float for int", "runner:\n  capacity: 1.5\n", nil,
			`f.yaml:2: runner.capacity: "1.5" is not a whole number (want e.g. 2)`},
		{"int out of range", "runner:\n  capacity: 99999999999\n", nil,
			`f.yaml:2: runner.capacity: "99999999999" is out of range (want at most 2147483647)`},
		{"bad bool", "metrics:\n  enabled: maybe\n", nil,
			`f.yaml:2: metrics.enabled: "maybe" is not true or false`},
		{"bad duration", "runner:\n  timeout: soon\n", nil,
			`f.yaml:2: runner.timeout: "soon" is not a duration (want Go syntax, e.g. 5s, 1m30s, 3h)`},
		{"duration without unit", "runner:\n  timeout: 5\n", nil,
			`f.yaml:2: runner.timeout: "5" has no unit (want a duration such as 5s, 5m or 5h)`},
		{"bad float", "load:\n  max_rate: .inf\n", nil,
			`f.yaml:2: load.max_rate: ".inf" is not a number (want e.g. 500 or 2.5)`},
		{"list for scalar", "runner:\n  capacity: [1]\n", nil,
			`f.yaml:2: runner.capacity: want a single value (a whole number, e.g. 2), got a list`},
		{"scalar for list", "runner:\n  labels: forgeload\n", nil,
			`f.yaml:2: runner.labels: want a list, e.g. [a, b], got "forgeload"`},
		{"scalar for section", "runner: 3\n", nil,
			`f.yaml:1: runner: want a mapping of keys (action_cache_dir, action_cache_max_mb, capacity, comment_token, comment_token_file, env_file, envs, fetch_interval, fetch_interval_max, fetch_timeout, file, final_report_timeout, insecure, labels, node, report_interval, shutdown_timeout, timeout), got "3"`},
		{"top level not a mapping", "- a\n", nil,
			`f.yaml:1: want a mapping of keys (cache, cluster, container, load, log, metrics, runner), got a list`},
		{"duplicate key", "runner:\n  capacity: 1\n  capacity: 2\n", nil,
			`f.yaml:3: runner.capacity: set twice (first on line 2); keep one`},
		{"alias", "log:\n  level: &l info\n  format: *l\n", nil,
			`f.yaml:2: log.level: YAML anchors and aliases (&name, *name) are not supported in the config; write the value out...`},
		{"syntax error", "runner:\n  capacity: [\n", nil,
			`f.yaml:2: invalid YAML: did not find expected node content (` + "`forgeload config generate`" + ` prints a valid example)`},
		{"syntax error on its own line", "runner:\n  capacity: 1\n- x\n", nil,
			`f.yaml:3: invalid YAML: did not find expected key ...`},
		{"syntax error on the first line", "runner: !x!y 1\n", nil,
			`f.yaml:1: invalid YAML: found undefined tag handle ...`},
		{"log level", "log:\n  level: verbose\n", nil,
			`f.yaml:2: log.level: "verbose" is not a level (want debug, info, warn or error)`},
		{"log format", "log:\n  format: xml\n", nil,
			`f.yaml:2: log.format: "xml" is not a format (want text or json)`},
		{"capacity zero", "runner:\n  capacity: 0\n", nil,
			`f.yaml:2: runner.capacity: 0 is below 1 (want how many jobs run at once, e.g. 1 or 4)`},
		{"no labels", "runner:\n  labels: []\n", nil,
			`f.yaml:2: runner.labels: is empty (want at least one label, e.g. [forgeload])`},
		{"bad label", "runner:\n  labels:\n    - ok\n    - 'x:docker'\n", nil,
			`f.yaml:4: runner.labels[1]: parse label "x:docker": the docker schema needs an image (want e.g. x:docker://node:20)`},
		{"duplicate label", "runner:\n  labels: [a, 'a:host']\n", nil,
			`f.yaml:2: runner.labels[1]: label name "a" is also runner.labels[0]; keep one`},
		{"bad env name", "runner:\n  envs:\n    'A B': x\n", nil,
			`f.yaml:3: runner.envs.A B: "A B" is not a valid variable name (want letters, digits and _, e.g. HTTP_PROXY)`},
		{"timeout zero", "runner:\n  timeout: 0s\n", nil,
			`f.yaml:2: runner.timeout: 0s must be above 0 (want e.g. 3h0m0s)`},
		{"negative shutdown", "runner:\n  shutdown_timeout: -1s\n", nil,
			`f.yaml:2: runner.shutdown_timeout: -1s is negative (want 0 or more, e.g. 30m0s)`},
		{"fetch timeout cap", "runner:\n  fetch_timeout: 2m\n", nil,
			`f.yaml:2: runner.fetch_timeout: 2m0s is above the 1m0s limit on every forge request (want at most 1m0s)`},
		{"fetch interval max below interval", "runner:\n  fetch_interval: 10s\n  fetch_interval_max: 5s\n", nil,
			`f.yaml:3: runner.fetch_interval_max: 5s is below runner.fetch_interval (10s); want at least 10s`},
		{"report interval", "runner:\n  report_interval: 0s\n", nil,
			`f.yaml:2: runner.report_interval: 0s must be above 0 (want e.g. 1s)`},
		{"capacity too large", "runner:\n  capacity: 100000000\n", nil,
			`f.yaml:2: runner.capacity: 100000000 is above the limit of 1000 jobs at once (want e.g. 1 or 4; run more daemons for more)`},
		{"report interval too short", "runner:\n  report_interval: 1ns\n", nil,
			`f.yaml:2: runner.report_interval: 1ns is outside 100ms to 1m0s (shorter floods the forge with calls, longer makes it treat running jobs as stale; want e.g. 1s)`},
		{"report interval too long", "runner:\n  report_interval: 2m\n", nil,
			`f.yaml:2: runner.report_interval: 2m0s is outside 100ms to 1m0s ...`},
		{"final report timeout too short", "runner:\n  final_report_timeout: 10ms\n", nil,
			`f.yaml:2: runner.final_report_timeout: 10ms is outside 1s to 10m0s (shorter gives up on a forge that is only slow, longer holds the job's slot through an outage; want e.g. 30s)`},
		{"final report timeout zero", "runner:\n  final_report_timeout: 0s\n", nil,
			`f.yaml:2: runner.final_report_timeout: 0s must be above 0 (want e.g. 30s)`},
		{"shutdown timeout too long", "runner:\n  shutdown_timeout: 100000h\n", nil,
			`f.yaml:2: runner.shutdown_timeout: 100000h0m0s is above the 24h0m0s limit (want e.g. 30m0s)`},
		{"bad cidr", "load:\n  deny_targets: [10.0.0.0/33]\n", nil,
			`f.yaml:2: load.deny_targets[0]: parse target rule "10.0.0.0/33": not a CIDR (want e.g. 10.0.0.0/8 or fd00::/8): ...`},
		{"url as target", "load:\n  allow_targets:\n    - http://x.example.com/\n", nil,
			`f.yaml:3: load.allow_targets[0]: parse target rule "http://x.example.com/": not a CIDR ...`},
		{"glob with port", "load:\n  allow_targets: ['x.example.com:80']\n", nil,
			`f.yaml:2: load.allow_targets[0]: parse target rule "x.example.com:80": ':' is not allowed in a host glob (want a CIDR, an IP, or a host name with * and ?, e.g. *.staging.example.com; no scheme, port or path)`},
		{"negative rate", "load:\n  max_rate: -1\n", nil,
			`f.yaml:2: load.max_rate: -1 is not allowed (want 0 for unlimited, or a rate in requests per second, e.g. 5000)`},
		{"negative concurrency", "load:\n  max_concurrency: -1\n", nil,
			`f.yaml:2: load.max_concurrency: -1 is negative (want 0 for unlimited, or e.g. 1000)`},
		{"progress interval", "load:\n  progress_interval: 0s\n", nil,
			`f.yaml:2: load.progress_interval: 0s must be above 0 (want e.g. 5s)`},
		{"metrics addr", "metrics:\n  addr: localhost\n", nil,
			`f.yaml:2: metrics.addr: "localhost" is not host:port (want host:port, e.g. 127.0.0.1:9101, or :9101 for every interface)`},
		{"metrics port", "metrics:\n  addr: 'x:http'\n", nil,
			`f.yaml:2: metrics.addr: "x:http" has port "http", which is not a number from 0 to 65535 (want host:port, e.g. 127.0.0.1:9101, or :9101 for every interface)`},
		{"jobs page without server", "metrics:\n  jobs_page: true\n", nil,
			`f.yaml:2: metrics.jobs_page: true needs the metrics server, which is off (set metrics.enabled: true, or metrics.jobs_page: false)`},
		{"jobs page not bool", "metrics:\n  enabled: true\n  jobs_page: 'yes please'\n", nil,
			`f.yaml:3: metrics.jobs_page: "yes please" is not true or false`},
		{"load retention", "metrics:\n  load_retention: 0s\n", nil,
			`f.yaml:2: metrics.load_retention: 0s must be above 0 (want e.g. 10m0s)`},
		{"redis scheme", "cluster:\n  redis_url: http://u:secret@r:6379\n", nil,
			`f.yaml:2: cluster.redis_url: scheme "http" is not redis or rediss (want redis://host:6379/0 or rediss://host:6380 for TLS)`},
		{"redis no host", "cluster:\n  redis_url: 'redis://'\n", nil,
			`f.yaml:2: cluster.redis_url: the URL has no host (want redis://host:6379/0 or rediss://host:6380 for TLS)`},
		{"cluster name", "cluster:\n  name: 'a:b'\n", nil,
			`f.yaml:2: cluster.name: "a:b" is not a valid name (want 1 to 64 letters, digits, '.', '_' or '-')`},
		{"negative segments", "cluster:\n  max_segments: -2\n", nil,
			`f.yaml:2: cluster.max_segments: -2 is negative (want 0 to run no shares of other runners' tests, or e.g. 1)`},
		{"fence not below lease", "cluster:\n  lease: 3s\n  fence_after: 3s\n", nil,
			`f.yaml:3: cluster.fence_after: 3s is not below cluster.lease (3s): a worker cut off from Redis would still be sending when its lease expires and another worker takes its share; want at most 2.1s (7/10 of the lease, as the defaults), or a longer cluster.lease`},
		{"heartbeat too close to the fence", "cluster:\n  heartbeat: 2s\n", nil,
			`f.yaml:2: cluster.heartbeat: 2s is more than a third of cluster.fence_after (3.5s): one late renewal would make a healthy worker stop its load; want at most 1.166s, or a longer cluster.fence_after`},
		{"zero sweep", "cluster:\n  sweep_interval: 0s\n", nil,
			`f.yaml:2: cluster.sweep_interval: 0s must be above 0 (want e.g. 1s)`},
		{"zero coordinator lost after", "", map[string]string{"FORGELOAD_CLUSTER_COORDINATOR_LOST_AFTER": "0s"},
			`env FORGELOAD_CLUSTER_COORDINATOR_LOST_AFTER: cluster.coordinator_lost_after: 0s must be above 0 (want e.g. 2s)`},
		{"short coordinator lease", "cluster:\n  coordinator_lease: 500ms\n", nil,
			`f.yaml:2: cluster.coordinator_lease: 500ms is below 1s: it is renewed every seventh of it, and renewals that short are missed on a busy machine or network; want e.g. 7s`},
		{"fence from env against the file's lease", "cluster:\n  lease: 2s\n", map[string]string{"FORGELOAD_CLUSTER_FENCE_AFTER": "3s"},
			`env FORGELOAD_CLUSTER_FENCE_AFTER: cluster.fence_after: 3s is not below cluster.lease (2s): ...`},
		{"env parse error names the variable", "", map[string]string{"FORGELOAD_RUNNER_CAPACITY": "lots"},
			`env FORGELOAD_RUNNER_CAPACITY: runner.capacity: "lots" is not a whole number (want e.g. 2)`},
		{"env validation error names the variable", "runner:\n  capacity: 2\n", map[string]string{"FORGELOAD_RUNNER_CAPACITY": "0"},
			`env FORGELOAD_RUNNER_CAPACITY: runner.capacity: 0 is below 1 (want how many jobs run at once, e.g. 1 or 4)`},
		{"env list item", "", map[string]string{"FORGELOAD_LOAD_DENY_TARGETS": "10.0.0.0/8,bad/x"},
			`env FORGELOAD_LOAD_DENY_TARGETS: load.deny_targets[1]: parse target rule "bad/x": not a CIDR ...`},
		{"env map entry hides its text", "", map[string]string{"FORGELOAD_RUNNER_ENVS": "A=1,hunter2"},
			`env FORGELOAD_RUNNER_ENVS: runner.envs: entry 2 is not NAME=value (want e.g. FORGELOAD_RUNNER_ENVS=A=1,B=2)`},
		{"errors are all reported", "runner:\n  capacity: 0\n  timeout: 0s\n", nil,
			"f.yaml:2: runner.capacity: 0 is below 1 (want how many jobs run at once, e.g. 1 or 4)\nf.yaml:3: runner.timeout: 0s must be above 0 (want e.g. 3h0m0s)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Parse("f.yaml", []byte(tt.yaml), env(tt.env))
			if err == nil {
				t.Fatalf("Parse = %+v, nil; want error %q", got, tt.want)
			}
			if want, ok := strings.CutSuffix(tt.want, "..."); ok {
				if !strings.HasPrefix(err.Error(), want) {
					t.Errorf("Parse error = %q, want prefix %q", err, want)
				}
			} else if err.Error() != tt.want {
				t.Errorf("Parse error = %q\nwant           %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "secret") || strings.Contains(err.Error(), "hunter2") {
				t.Errorf("Parse error %q leaks a secret", err)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(path, []byte("runner:\n  capacity: 3\n  bogus: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path, nil)
	if want := path + `:3: runner: unknown key "bogus"`; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("Load(%q) error = %v, want prefix %q", path, err, want)
	}
	if err := os.WriteFile(path, []byte("runner:\n  capacity: 3\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(path, os.Getenv)
	if err != nil || cfg.Runner.Capacity != 3 {
		t.Errorf("Load(%q) = %+v, %v; want capacity 3", path, cfg, err)
	}
	cfg, err = Load("", nil)
	if err != nil || !reflect.DeepEqual(cfg, Default()) {
		t.Errorf("Load(\"\") = %+v, %v; want defaults", cfg, err)
	}
	missing := filepath.Join(dir, "nope.yaml")
	if _, err := Load(missing, nil); err == nil || !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "config generate") {
		t.Errorf("Load(missing) error = %v, want a not-exist error that says how to make one", err)
	}
}

func TestEnvName(t *testing.T) {
	t.Parallel()
	if got, want := EnvName("runner.fetch_interval_max"), "FORGELOAD_RUNNER_FETCH_INTERVAL_MAX"; got != want {
		t.Errorf("EnvName = %q, want %q", got, want)
	}
}

// FuzzParse checks that Parse never panics and returns either a config that
// passes validation again or an error.
func FuzzParse(f *testing.F) {
	f.Add(forgeload.ExampleConfig, "")
	f.Add([]byte("runner:\n  capacity: 2\n  labels: [a, 'b:docker://x']\n"), "3")
	f.Add([]byte("log: {level: debug}\nload: {allow_targets: ['*.x', 10.0.0.0/8]}\n"), "")
	f.Add([]byte("a: &x [*x]\n"), "0")
	f.Add([]byte("runner:\n  envs: {A: [1]}\n  capacity: 99999999999\n"), "-1")
	f.Add([]byte("- - -\n"), "abc")
	f.Fuzz(func(t *testing.T, data []byte, capacity string) {
		cfg, err := Parse("fuzz.yaml", data, env(map[string]string{"FORGELOAD_RUNNER_CAPACITY": capacity}))
		if err != nil {
			if cfg != nil {
				t.Fatalf("Parse returned both a config and error %v", err)
			}
			if !strings.Contains(err.Error(), "fuzz.yaml") && !strings.Contains(err.Error(), "FORGELOAD_") {
				t.Fatalf("Parse error %q names neither the file nor the variable", err)
			}
			return
		}
		p := &parser{file: "again", src: map[string]string{}}
		if err := p.validate(cfg); err != nil {
			t.Fatalf("Parse returned a config that fails validation: %v", err)
		}
	})
}

func TestParseLabel(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    Label
		wantErr string
	}{
		{in: "forgeload", want: Label{Name: "forgeload", Schema: SchemaHost}},
		{in: " perf:host ", want: Label{Name: "perf", Schema: SchemaHost}},
		{in: "ubuntu:docker://node:20", want: Label{Name: "ubuntu", Schema: SchemaDocker, Arg: "node:20"}},
		{in: "ubuntu:docker:node", want: Label{Name: "ubuntu", Schema: SchemaDocker, Arg: "node"}},
		// An unknown schema makes the whole string an opaque host label.
		{in: "pool:abc", want: Label{Name: "pool:abc", Schema: SchemaHost}},
		{in: "", wantErr: "parse label: the label is empty"},
		{in: "a b", wantErr: `parse label "a b": it contains a space`},
		{in: ":host", wantErr: `parse label ":host": the name before the first ':' is empty`},
		{in: "x:host:y", wantErr: `parse label "x:host:y": the host schema takes no argument`},
		{in: "x:docker://", wantErr: `parse label "x:docker://": the docker schema needs an image`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			got, err := ParseLabel(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
					t.Errorf("ParseLabel(%q) = %+v, %v; want error %q", tt.in, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("ParseLabel(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestLabelNames(t *testing.T) {
	t.Parallel()
	got := LabelNames([]string{"forgeload", "u:docker://node:20", "forgeload:host", "pool:abc", "bad:docker", ""})
	want := []string{"forgeload", "u", "pool:abc", "bad"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("LabelNames = %q, want %q", got, want)
	}
}

func FuzzParseLabel(f *testing.F) {
	for _, s := range []string{"forgeload", "u:docker://node:20", "pool:abc", "x:host", ":", "a b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l, err := ParseLabel(s)
		if err != nil {
			return
		}
		if l.Name == "" || (l.Schema != SchemaHost && l.Schema != SchemaDocker) {
			t.Fatalf("ParseLabel(%q) = %+v: want a name and a known schema", s, l)
		}
	})
}

func writeRegistration(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestRegistrationRoundTrip is not parallel: it sets the process umask to 0
// to show that the file is 0600 whatever the umask.
func TestRegistrationRoundTrip(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	path := filepath.Join(t.TempDir(), ".runner")
	in := &Registration{ID: 7, UUID: "u-1", Name: "r1", Token: "tok", Address: "https://forge.example", Labels: []string{"forgeload"}, Ephemeral: true}
	for range 2 { // the second save replaces the first
		if err := SaveRegistration(path, in); err != nil {
			t.Fatalf("SaveRegistration: %v", err)
		}
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("mode = %v, want 0600", st.Mode().Perm())
	}
	if in.Warning != "" {
		t.Errorf("SaveRegistration modified its argument: Warning = %q", in.Warning)
	}
	got, err := LoadRegistration(path)
	if err != nil {
		t.Fatalf("LoadRegistration: %v", err)
	}
	want := *in
	want.Warning = RegistrationWarning
	if !reflect.DeepEqual(*got, want) {
		t.Errorf("LoadRegistration = %+v, want %+v", *got, want)
	}
	raw, _ := os.ReadFile(path)
	if !strings.HasPrefix(string(raw), "{\n  \"WARNING\": ") || !strings.Contains(string(raw), "\n  \"labels\": [\n    \"forgeload\"\n  ],\n") {
		t.Errorf("file is not 2-space-indented JSON with WARNING first:\n%s", raw)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only .runner (temporary files left behind?)", len(entries))
	}
}

func TestLoadRegistrationErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing")
	_, err := LoadRegistration(missing)
	if !errors.Is(err, ErrNotRegistered) || !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "run `forgeload register` first") {
		t.Errorf("LoadRegistration(missing) = %v, want ErrNotRegistered saying to register", err)
	}
	bad := filepath.Join(dir, "bad")
	writeRegistration(t, bad, "{not json")
	if _, err := LoadRegistration(bad); err == nil || !strings.Contains(err.Error(), "damaged: delete it and run `forgeload register` again") {
		t.Errorf("LoadRegistration(malformed) = %v, want a damaged-file error", err)
	}
	if err := SaveRegistration(filepath.Join(dir, "no", "such", ".runner"), &Registration{}); err == nil || !strings.Contains(err.Error(), "check that the directory exists") {
		t.Errorf("SaveRegistration(missing dir) = %v, want an error saying to check the directory", err)
	}
	partial := filepath.Join(dir, "partial")
	writeRegistration(t, partial, `{"uuid": "u"}`)
	if _, err := LoadRegistration(partial); err == nil || !strings.Contains(err.Error(), "[token address] missing") {
		t.Errorf("LoadRegistration(partial) = %v, want token and address missing", err)
	}
	newline := filepath.Join(dir, "newline")
	writeRegistration(t, newline, `{"uuid": "u", "token": "s3cret\nX-Evil: 1", "address": "http://x"}`)
	if _, err := LoadRegistration(newline); err == nil || !strings.Contains(err.Error(), "the token holds a space, line break") || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("LoadRegistration(token with a newline) = %v, want a refusal that does not quote the token", err)
	}
}

func TestLockRegistration(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), ".runner")
	unlock, err := LockRegistration(path)
	if err != nil {
		t.Fatalf("LockRegistration: %v", err)
	}
	// A second open file description conflicts even in the same process.
	_, err = LockRegistration(path)
	wantMsg := fmt.Sprintf("another forgeload daemon (pid %d) holds this registration", os.Getpid())
	if err == nil || !strings.Contains(err.Error(), wantMsg) {
		t.Errorf("second LockRegistration = %v, want %q", err, wantMsg)
	}
	if err := unlock(); err != nil {
		t.Fatalf("unlock: %v", err)
	}
	if _, err := os.Stat(path + ".lock"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("after unlock, stat %s.lock = %v, want it removed", path, err)
	}
	if err := unlock(); err != nil {
		t.Errorf("second unlock: %v", err)
	}
	unlock2, err := LockRegistration(path)
	if err != nil {
		t.Fatalf("LockRegistration after unlock: %v", err)
	}
	_ = unlock2()
}

// TestLockRegistrationExclusiveWithRemoval: unlock removes the .lock file,
// and lockers racing with that removal still never hold the lock together.
func TestLockRegistrationExclusiveWithRemoval(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), ".runner")
	var holders, worst atomic.Int32
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for got := 0; got < 20; {
				unlock, err := LockRegistration(path)
				if err != nil {
					runtime.Gosched()
					continue
				}
				got++
				n := holders.Add(1)
				if n > worst.Load() {
					worst.Store(n)
				}
				holders.Add(-1)
				if err := unlock(); err != nil {
					t.Errorf("unlock: %v", err)
				}
			}
		}()
	}
	wg.Wait()
	if w := worst.Load(); w != 1 {
		t.Errorf("at most %d lockers held the lock at once, want 1", w)
	}
}

// TestLockRegistrationOtherProcess holds the lock in a child process (this
// test binary re-run as a helper) and checks that the parent is refused with
// the child's PID.
func TestLockRegistrationOtherProcess(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), ".runner")
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestLockHelperProcess$")
	cmd.Env = append(os.Environ(), "FORGELOAD_LOCK_HELPER="+path)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = stdin.Close()
		_ = cmd.Wait()
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "locked\n" {
		t.Fatalf("helper said %q, %v; want locked", line, err)
	}
	_, err = LockRegistration(path)
	wantMsg := fmt.Sprintf("another forgeload daemon (pid %d) holds this registration", cmd.Process.Pid)
	if err == nil || !strings.Contains(err.Error(), wantMsg) {
		t.Errorf("LockRegistration while a child holds it = %v, want %q", err, wantMsg)
	}
}

// TestLockHelperProcess is the child of TestLockRegistrationOtherProcess: it
// holds the lock until its stdin closes.
func TestLockHelperProcess(t *testing.T) {
	t.Parallel()
	path := os.Getenv("FORGELOAD_LOCK_HELPER")
	if path == "" {
		t.Skip("helper process only")
	}
	unlock, err := LockRegistration(path)
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println("locked")
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
	_ = unlock()
	os.Exit(0)
}

// TestClusterPromises: the promises of docs/cluster.md are functions of
// the timings: 7 s, 3.5 s, 1.5 s and 10 s with the defaults.
func TestClusterPromises(t *testing.T) {
	t.Parallel()
	got := Default().Cluster.Promises()
	want := ClusterPromises{Takeover: 7 * time.Second, Fence: 3500 * time.Millisecond, Margin: 1500 * time.Millisecond, CoordinatorLost: 10 * time.Second}
	if got != want {
		t.Errorf("Default().Cluster.Promises() = %+v, want %+v", got, want)
	}
}

func TestSecretsNotPrinted(t *testing.T) {
	t.Parallel()
	cfg, err := Parse("f.yaml", []byte("cluster:\n  redis_url: redis://user:hunter2@r:6379/0\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{fmt.Sprintf("%v", cfg), fmt.Sprintf("%+v", *cfg), fmt.Sprint(cfg.Cluster)} {
		if strings.Contains(s, "hunter2") || !strings.Contains(s, "redis://user:xxxxx@r:6379/0") {
			t.Errorf("printed config %q: want the Redis password redacted", s)
		}
	}
	if got := (Cluster{RedisURL: "redis://%zz"}).String(); strings.Contains(got, "zz") {
		t.Errorf("Cluster.String() with an unparsable URL = %q, want it hidden", got)
	}
	reg := &Registration{UUID: "u", Token: "hunter2", Address: "https://f"}
	for _, s := range []string{fmt.Sprintf("%v", reg), fmt.Sprintf("%+v", *reg), fmt.Sprint(reg)} {
		if strings.Contains(s, "hunter2") || !strings.Contains(s, "Token:[redacted]") {
			t.Errorf("printed registration %q: want the token redacted", s)
		}
	}
}

func TestContainerSection(t *testing.T) {
	t.Parallel()
	c, err := Parse("f.yaml", []byte("container:\n  pull_policy: never\n  service_timeout: 90s\n"), nil)
	if err != nil || c.Container.PullPolicy != "never" || c.Container.ServiceTimeout != 90*time.Second {
		t.Fatalf("Parse = %+v, %v; want pull_policy never, service_timeout 90s", c.Container, err)
	}
	_, err = Parse("f.yaml", []byte("container:\n  pull_policy: sometimes\n"), nil)
	if err == nil || !strings.Contains(err.Error(), `f.yaml:2: container.pull_policy: "sometimes" is not a pull policy (want never, missing or always)`) {
		t.Fatalf("Parse error = %v, want one naming container.pull_policy and the choices", err)
	}
}

// The container allow-lists: names and globs as the admin writes them, from
// the file or the environment; a typo is an error naming the key and line.
func TestContainerAllowLists(t *testing.T) {
	t.Parallel()
	c, err := Parse("f.yaml", []byte("container:\n  valid_volumes: [/srv/fixtures/*, cache-*, forgeload-fixtures]\n  allowed_capabilities: [net_admin, CAP_SYS_PTRACE]\n  allowed_options: [--ulimit]\n"),
		func(k string) string {
			return map[string]string{"FORGELOAD_CONTAINER_ALLOWED_OPTIONS": "--ulimit,--sysctl"}[k]
		})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Container; strings.Join(got.ValidVolumes, " ") != "/srv/fixtures/* cache-* forgeload-fixtures" || strings.Join(got.AllowedCapabilities, " ") != "net_admin CAP_SYS_PTRACE" || strings.Join(got.AllowedOptions, " ") != "--ulimit --sysctl" {
		t.Fatalf("Parse = %+v", got)
	}
	if d := Default().Container; len(d.AllowedCapabilities) != 0 || len(d.AllowedOptions) != 0 || len(d.ValidVolumes) != 0 {
		t.Fatalf("Default().Container = %+v, want every allow-list empty", d)
	}
	_, err = Parse("f.yaml", []byte("container:\n  valid_volumes: [data/x, '/[']\n  allowed_capabilities: [SYS_ADMN]\n  allowed_options: [--privileged, --cap-add]\n"), nil)
	for _, want := range []string{
		`f.yaml:2: container.valid_volumes[0]: "data/x" is neither an absolute path glob`,
		`container.valid_volumes[1]: "/[" is neither`,
		`f.yaml:3: container.allowed_capabilities[0]: "SYS_ADMN" is not a Linux capability (want a name such as NET_ADMIN, or ALL)`,
		`f.yaml:4: container.allowed_options[0]: "--privileged" is not a flag this key can allow (want one of --group-add, --sysctl, --ulimit; capabilities go in container.allowed_capabilities)`,
		`container.allowed_options[1]: "--cap-add" is not a flag`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse error = %v\nwant it to contain %q", err, want)
		}
	}
}

// container.allow_build_network is off unless the file or the
// environment turns it on, and container.build_timeout is 10m unless set;
// a value of the wrong kind names the key.
func TestDockerActionBuildSettings(t *testing.T) {
	t.Parallel()
	if Default().Container.AllowBuildNetwork {
		t.Fatal("Default() allows the build network")
	}
	c, err := Parse("f.yaml", []byte("container:\n  allow_build_network: true\n"), nil)
	if err != nil || !c.Container.AllowBuildNetwork {
		t.Fatalf("Parse = %+v, %v; want allow_build_network on", c, err)
	}
	c, err = Parse("f.yaml", []byte("container: {}\n"), func(k string) string {
		return map[string]string{"FORGELOAD_CONTAINER_ALLOW_BUILD_NETWORK": "true"}[k]
	})
	if err != nil || !c.Container.AllowBuildNetwork {
		t.Fatalf("Parse with FORGELOAD_CONTAINER_ALLOW_BUILD_NETWORK = %+v, %v; want it on", c, err)
	}
	if _, err := Parse("f.yaml", []byte("container:\n  allow_build_network: sometimes\n"), nil); err == nil || !strings.Contains(err.Error(), "container.allow_build_network") {
		t.Fatalf("Parse error = %v, want one naming container.allow_build_network", err)
	}
	if d := Default().Container.BuildTimeout; d != 10*time.Minute {
		t.Fatalf("Default().Container.BuildTimeout = %v, want 10m", d)
	}
	if c, err = Parse("f.yaml", []byte("container:\n  build_timeout: 90s\n"), nil); err != nil || c.Container.BuildTimeout != 90*time.Second {
		t.Fatalf("Parse build_timeout: 90s = %v, %v", c.Container.BuildTimeout, err)
	}
	if _, err := Parse("f.yaml", []byte("container:\n  build_timeout: 0s\n"), nil); err == nil || !strings.Contains(err.Error(), "container.build_timeout") {
		t.Fatalf("Parse error = %v, want one naming container.build_timeout", err)
	}
}

// FuzzLoadRegistration: any .runner content is loaded or refused, never a
// panic, and what loads has every required field, with no character that
// could break the HTTP headers it is sent in.
func FuzzLoadRegistration(f *testing.F) {
	f.Add([]byte(`{"uuid": "u", "token": "t", "address": "http://x"}`))
	f.Add([]byte(`{"uuid": "u", "token": "t\nX: 1", "address": "http://x"}`))
	f.Add([]byte(`{"uuid": 5}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), ".runner")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		r, err := LoadRegistration(path)
		if err != nil {
			return
		}
		if r.UUID == "" || r.Token == "" || r.Address == "" {
			t.Fatalf("loaded %v with a required field empty", r)
		}
		for _, v := range []string{r.UUID, r.Token} {
			if strings.ContainsAny(v, "\r\n\x00 ") {
				t.Fatalf("loaded a uuid or token with a header-breaking character: %q", v)
			}
		}
	})
}

// TestActionCacheKeys: the action cache's directory and bound, and a bound
// out of range named with its line.
func TestActionCacheKeys(t *testing.T) {
	t.Parallel()
	c, err := Parse("f.yaml", []byte("runner:\n  action_cache_dir: /var/cache/fl\n  action_cache_max_mb: 50\n"), nil)
	if err != nil || c.Runner.ActionCacheDir != "/var/cache/fl" || c.Runner.ActionCacheMaxMB != 50 {
		t.Fatalf("Parse = %+v, %v", c.Runner, err)
	}
	_, err = Parse("f.yaml", []byte("runner:\n  action_cache_max_mb: 0\n"), nil)
	if err == nil || !strings.Contains(err.Error(), "f.yaml:2: runner.action_cache_max_mb: 0 is not from 1 to 1048576") {
		t.Fatalf("Parse error = %v", err)
	}
}

// TestCacheKeys: the cache server's section, and each bad value named
// with its fix.
func TestCacheKeys(t *testing.T) {
	t.Parallel()
	c, err := Parse("f.yaml", []byte("cache:\n  enabled: true\n  dir: /var/cache/fl\n  max_mb: 10\n  max_repo_mb: 4\n  host: 10.1.2.3\n  port: 8088\n"), nil)
	if err != nil || c.Cache != (Cache{Enabled: true, Dir: "/var/cache/fl", MaxMB: 10, MaxRepoMB: 4, Host: "10.1.2.3", Port: 8088}) {
		t.Fatalf("Parse = %+v, %v", c.Cache, err)
	}
	for _, tc := range []struct{ yaml, want string }{
		{"cache:\n  max_mb: 0\n", "f.yaml:2: cache.max_mb: 0 is not from 1 to 1048576"},
		{"cache:\n  port: 70000\n", "f.yaml:2: cache.port: 70000 is not a port"},
		{"cache:\n  max_mb: 10\n  max_repo_mb: 11\n", "f.yaml:3: cache.max_repo_mb: 11 is not from 0 to cache.max_mb (10)"},
		{"cache:\n  host: cache.example.com\n", `f.yaml:2: cache.host: "cache.example.com" is not an IP address`},
	} {
		if _, err := Parse("f.yaml", []byte(tc.yaml), nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %v, want %q", tc.yaml, err, tc.want)
		}
	}
}
