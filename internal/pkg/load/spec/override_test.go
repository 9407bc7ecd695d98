package spec

import (
	"strings"
	"testing"
	"time"
)

const fileForOverride = `target: https://api.example.com
headers:
  Accept: application/json
  X-Env: staging
rate: 100
concurrency: 20
duration: 5m
arrival: {model: poisson}
thresholds:
  - http_req_duration:p99 < 1s
distributed:
  workers: 4
  min_workers: 3
`

// TestOverridePrecedence checks that inline keys win over the file, as a
// workflow step's with: does in DESIGN.md section 4.
func TestOverridePrecedence(t *testing.T) {
	t.Parallel()
	c := mustParse(t, fileForOverride)
	err := c.Override(map[string]string{
		"rate":                "500",
		"duration":            "1m",
		"Arrival-Model":       "uniform",
		"thresholds":          "http_req_duration:p99 < 300ms\nhttp_req_failed:rate < 1%\n",
		"headers":             "X-Env: prod\nX-Run: ci",
		"distributed.workers": "8",
		"method":              "post",
		"body":                ` {"a": 1} `,
	})
	if err != nil {
		t.Fatalf("Override: %v", err)
	}
	eq(t, "Rate", c.Rate, 500.0)
	eq(t, "Duration", c.Duration, time.Minute)
	eq(t, "Concurrency (file)", c.Concurrency, 20)
	eq(t, "Arrival", c.Arrival.Model, ArrivalUniform)
	eq(t, "Thresholds", c.Thresholds, []string{"http_req_duration:p99 < 300ms", "http_req_failed:rate < 1%"})
	eq(t, "Headers (merged)", c.Headers, map[string]string{"Accept": "application/json", "X-Env": "prod", "X-Run": "ci"})
	eq(t, "Distributed (merged)", *c.Distributed, Distributed{Workers: 8, MinWorkers: 3, JoinTimeout: DefaultJoinTimeout, OnWorkerLoss: LossReassign})
	eq(t, "Method", c.Method, "POST")
	eq(t, "Body (as written)", c.Body, ` {"a": 1} `)
	if err := c.Validate(); err != nil {
		t.Fatalf("Validate after Override: %v", err)
	}
}

// TestOverrideLoadModel checks that choosing a load model inline clears
// the file's conflicting one, but two inline models still conflict.
func TestOverrideLoadModel(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		file  string
		kv    map[string]string
		check func(t *testing.T, c *Config)
		err   string // Validate error, when expected
	}{
		{"inline rate replaces file patterns", "target: https://x.example.com\nduration: 1m\nload_patterns: [{type: spike, rps: 5, duration: 1s}]\n",
			map[string]string{"rate": "50"}, func(t *testing.T, c *Config) {
				eq(t, "Patterns", len(c.Patterns), 0)
				eq(t, "Has(load_patterns)", c.Has("load_patterns"), false)
				eq(t, "Has(load_patterns[0].rps)", c.Has("load_patterns[0].rps"), false)
			}, ""},
		{"inline vus replaces file rate and concurrency", "target: https://x.example.com\nrate: 10\nconcurrency: 5\nduration: 1m\n",
			map[string]string{"vus": "12", "think_time": "{min: 1s, max: 3s}"}, func(t *testing.T, c *Config) {
				eq(t, "Rate", c.Rate, 0.0)
				eq(t, "Concurrency", c.Concurrency, 0)
				eq(t, "VUs", c.VUs, VUs{Count: 12})
				eq(t, "ThinkTime", c.ThinkTime, ThinkTime{Min: time.Second, Max: 3 * time.Second})
			}, ""},
		{"inline patterns replace file rate", "target: https://x.example.com\nrate: 10\nduration: 1m\n",
			map[string]string{"load_patterns": `[{"type": "ramp", "from_rps": 1, "to_rps": 9, "duration": "10s"}]`}, func(t *testing.T, c *Config) {
				eq(t, "Rate", c.Rate, 0.0)
				eq(t, "Patterns", c.Patterns, []Pattern{{Type: PatternRamp, FromRPS: 1, ToRPS: 9, Duration: 10 * time.Second}})
			}, ""},
		{"inline concurrency replaces file vus", "target: https://x.example.com\nvus: 3\nduration: 1m\n",
			map[string]string{"concurrency": "7"}, func(t *testing.T, c *Config) {
				eq(t, "VUs", c.VUs, VUs{})
				eq(t, "Concurrency", c.Concurrency, 7)
			}, ""},
		{"inline concurrency keeps file rate", "target: https://x.example.com\nrate: 10\nduration: 1m\n",
			map[string]string{"concurrency": "7"}, func(t *testing.T, c *Config) {
				eq(t, "Rate", c.Rate, 10.0)
			}, ""},
		{"two inline models conflict", "target: https://x.example.com\nduration: 1m\n",
			map[string]string{"rate": "5", "vus": "5"}, nil,
			"inline: vus: vus and rate are both set: rate is the open model (arrivals per second), vus the closed model (users that loop); remove one"},
		{"inline error is reported inline", "target: https://x.example.com\nrate: 1\n",
			map[string]string{"duration": "-5s"}, nil,
			"inline: duration: -5s is negative (want e.g. 1m, or 0 for no cap)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := mustParse(t, tt.file)
			if err := c.Override(tt.kv); err != nil {
				t.Fatalf("Override(%v): %v", tt.kv, err)
			}
			err := c.Validate()
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("Validate error =\n  %v\nwant\n  %s", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Validate: %v", err)
			}
			tt.check(t, c)
		})
	}
}

func TestOverrideErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		kv   map[string]string
		want string
	}{
		{map[string]string{"rate": "fast"}, `inline: rate: "fast" is not a number of requests per second (want e.g. 500)`},
		{map[string]string{"rte": "5"}, `inline: unknown key "rte"; did you mean "rate"? known keys: ` + strings.Join(knownKeys(), ", ")},
		{map[string]string{"config": "perf/api.yaml"}, `inline: unknown key "config"; known keys: ` + strings.Join(knownKeys(), ", ")},
		{map[string]string{"rate.max": "5"}, `inline: rate.max: rate is not a block, so "rate.max" has no sub-keys; set rate itself`},
		{map[string]string{"distributed.worker": "5"}, `inline: distributed: unknown key "worker"; did you mean "workers"? known keys: join_timeout, min_workers, on_worker_loss, workers`},
		{map[string]string{"headers": "a: [b"}, `inline: headers: not valid YAML or JSON: line 1: did not find expected ',' or ']'`},
		{map[string]string{"endpoints": "{name: a}"}, `inline: endpoints: want a list of endpoints ({name, weight, path, ...}), got a mapping`},
		{map[string]string{"duration": "soon"}, `inline: duration: "soon" is not a duration (want e.g. 30s, 5m, 1m30s, or a number of seconds)`},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			t.Parallel()
			c := mustParse(t, base)
			err := c.Override(tt.kv)
			if err == nil || err.Error() != tt.want {
				t.Errorf("Override(%v) error =\n  %v\nwant\n  %s", tt.kv, err, tt.want)
			}
		})
	}
}

func TestOverrideValues(t *testing.T) {
	t.Parallel()
	c := mustParse(t, base)
	err := c.OverrideValues(map[string]any{
		"rate":       750,
		"timeout":    2 * time.Second,
		"dashboard":  true,
		"endpoints":  []any{map[string]any{"name": "a", "path": "/a", "weight": 2}},
		"thresholds": []any{"http_req_failed:rate < 1%"},
		"seed":       "99",
	})
	if err != nil {
		t.Fatalf("OverrideValues: %v", err)
	}
	eq(t, "Rate", c.Rate, 750.0)
	eq(t, "Timeout", c.Timeout, 2*time.Second)
	eq(t, "Dashboard", c.Dashboard, true)
	eq(t, "Endpoints", c.Endpoints, []Endpoint{{Name: "a", Path: "/a", Weight: 2}})
	eq(t, "Thresholds", c.Thresholds, []string{"http_req_failed:rate < 1%"})
	eq(t, "Seed", c.Seed, int64(99))
	if err := c.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}

	// An inline config with no file at all: the CLI with only flags.
	var flags Config
	if err := flags.Override(map[string]string{"target": "https://x.example.com", "rate": "5", "total": "10"}); err != nil {
		t.Fatalf("Override on zero Config: %v", err)
	}
	if err := flags.Validate(); err != nil {
		t.Errorf("Validate flags-only config: %v", err)
	}
	eq(t, "Method", flags.Method, DefaultMethod)
}
