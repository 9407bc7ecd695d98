package spec

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

const examplesDir = "../../../../examples/load"

// TestExamples loads every example config users copy from, checks that it
// validates, and asserts the values the engine will see.
func TestExamples(t *testing.T) {
	t.Parallel()
	abs, err := filepath.Abs(examplesDir)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		file  string
		check func(t *testing.T, c *Config)
	}{
		{"simple.yaml", func(t *testing.T, c *Config) {
			eq(t, "Target", c.Target, "https://api.example.com/v1/health")
			eq(t, "Method", c.Method, "GET")
			eq(t, "Headers", c.Headers, map[string]string{"Accept": "application/json", "X-Load-Test": "forgeload"})
			eq(t, "Rate", c.Rate, 500.0)
			eq(t, "Concurrency", c.Concurrency, 50)
			eq(t, "Duration", c.Duration, time.Minute)
			eq(t, "Timeout", c.Timeout, 5*time.Second)
			eq(t, "Retries", c.Retries, 1)
			eq(t, "Arrival", c.Arrival.Model, ArrivalUniform)
			eq(t, "Protocol", c.Protocol, ProtocolHTTP)
			eq(t, "Thresholds", c.Thresholds, []string{"http_req_duration:p99 < 300ms", "http_req_failed:rate < 1%", "http_requests:rate > 480"})
		}},
		{"api.json", func(t *testing.T, c *Config) {
			eq(t, "Method", c.Method, "POST")
			eq(t, "Body", c.Body, `{"query":"load test","limit":20}`)
			eq(t, "Rate", c.Rate, 1000.0)
			eq(t, "Total", c.Total, int64(60000))
			eq(t, "Duration", c.Duration, 2*time.Minute)
			eq(t, "Timeout", c.Timeout, 10*time.Second)
			eq(t, "Arrival", c.Arrival.Model, ArrivalPoisson)
			eq(t, "Seed", c.Seed, int64(42))
			eq(t, "len(Thresholds)", len(c.Thresholds), 4)
		}},
		{"patterns.yaml", func(t *testing.T, c *Config) {
			want := []Pattern{
				{Name: "warmup", Type: PatternRamp, FromRPS: 10, ToRPS: 200, Duration: 2 * time.Minute},
				{Name: "plateaus", Type: PatternStep, Steps: []Step{{RPS: 200, Duration: 3 * time.Minute}, {RPS: 300, Duration: 3 * time.Minute}}},
				{Name: "flash-sale", Type: PatternSpike, RPS: 800, Duration: 30 * time.Second},
				{Name: "cooldown", Type: PatternRamp, FromRPS: 300, ToRPS: 0, Duration: 2 * time.Minute},
			}
			eq(t, "Patterns", c.Patterns, want)
			var span time.Duration
			for _, p := range c.Patterns {
				span += p.Span()
			}
			eq(t, "total span", span, 10*time.Minute+30*time.Second)
			eq(t, "Rate", c.Rate, 0.0)
			eq(t, "Thresholds", c.Thresholds, []string{"http_req_duration:p99 < 500ms", "http_req_duration:p50 < 80ms", "http_req_failed:rate < 0.5%"})
		}},
		{"endpoints.yaml", func(t *testing.T, c *Config) {
			if len(c.Endpoints) != 4 {
				t.Fatalf("len(Endpoints) = %d, want 4", len(c.Endpoints))
			}
			eq(t, "weights", []int{c.Endpoints[0].Weight, c.Endpoints[1].Weight, c.Endpoints[2].Weight, c.Endpoints[3].Weight}, []int{60, 30, 10, 1})
			eq(t, "Endpoints[0].Path", c.Endpoints[0].Path, "/users?limit=50")
			eq(t, "Endpoints[2].Method", c.Endpoints[2].Method, "POST")
			eq(t, "Endpoints[2].Headers", c.Endpoints[2].Headers, map[string]string{"Content-Type": "application/json"})
			eq(t, "Endpoints[2].BodyFile", c.Endpoints[2].BodyFile, filepath.Join(abs, "bodies", "order.json"))
			eq(t, "Endpoints[3].URL", c.Endpoints[3].URL, "https://status.example.com/api/v2/status.json")
			body, err := os.ReadFile(c.Endpoints[2].BodyFile)
			if err != nil || len(body) == 0 {
				t.Errorf("reading resolved body_file: %v", err)
			}
		}},
		{"closed-model.yaml", func(t *testing.T, c *Config) {
			eq(t, "VUs", c.VUs, VUs{Count: 50, Start: 0, Stages: []VUStage{
				{Duration: time.Minute, Target: 50}, {Duration: 5 * time.Minute, Target: 50}, {Duration: 30 * time.Second, Target: 0},
			}})
			eq(t, "VUs.Span", c.VUs.Span(), 6*time.Minute+30*time.Second)
			eq(t, "ThinkTime", c.ThinkTime, ThinkTime{Min: 500 * time.Millisecond, Max: 2 * time.Second})
			eq(t, "Rate", c.Rate, 0.0)
			eq(t, "Concurrency", c.Concurrency, 0)
			eq(t, "Headers", c.Headers, map[string]string{"Cookie": "session=load-test"})
		}},
		{"distributed.yaml", func(t *testing.T, c *Config) {
			eq(t, "Distributed", *c.Distributed, Distributed{Workers: 4, MinWorkers: 3, JoinTimeout: 90 * time.Second, OnWorkerLoss: LossReassign})
			eq(t, "Min", c.Distributed.Min(), 3)
			eq(t, "Rate", c.Rate, 40000.0)
		}},
		{"crankfire.yaml", func(t *testing.T, c *Config) {
			eq(t, "Method", c.Method, "GET")
			eq(t, "Duration", c.Duration, 90*time.Second)
			eq(t, "Timeout", c.Timeout, 30*time.Second)
			eq(t, "Arrival", c.Arrival.Model, ArrivalPoisson)
			eq(t, "JSONOutput", c.JSONOutput, true)
			eq(t, "LogErrors", c.LogErrors, true)
			eq(t, "Patterns", c.Patterns, []Pattern{{Name: "ramp-up", Type: PatternRamp, FromRPS: 10, ToRPS: 100, Duration: 30 * time.Second}})
		}},
	}
	seen := map[string]bool{}
	for _, tt := range tests {
		seen[tt.file] = true
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(abs, tt.file)
			c, err := Load(path)
			if err != nil {
				t.Fatalf("Load(%s): %v", tt.file, err)
			}
			if err := c.Validate(); err != nil {
				t.Fatalf("Validate(%s): %v", tt.file, err)
			}
			eq(t, "Source", c.Source(), path)
			tt.check(t, c)
		})
	}
	// Every example file is covered by a case above.
	files, _ := filepath.Glob(filepath.Join(abs, "*.*"))
	for _, f := range files {
		if !seen[filepath.Base(f)] {
			t.Errorf("example %s has no test case", filepath.Base(f))
		}
	}
}

func eq[T any](t *testing.T, what string, got, want T) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s = %#v, want %#v", what, got, want)
	}
}

// docBlock is one fenced yaml or json block of a page of docs/.
type docBlock struct {
	page string
	line int // of the block's first line
	text string
}

// docBlocks returns the fenced yaml and json blocks of every page of
// docs/ and of README.md, with a list item's indent taken off.
func docBlocks(t *testing.T) []docBlock {
	t.Helper()
	pages, _ := filepath.Glob("../../../../docs/*.md")
	pages = append(pages, "../../../../README.md")
	fence := regexp.MustCompile("^( *)```(yaml|json)\\s*$")
	var blocks []docBlock
	for _, p := range pages {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(b), "\n")
		for i := 0; i < len(lines); i++ {
			m := fence.FindStringSubmatch(lines[i])
			if m == nil {
				continue
			}
			var body []string
			j := i + 1
			for ; j < len(lines) && strings.TrimSpace(lines[j]) != "```"; j++ {
				body = append(body, strings.TrimPrefix(lines[j], m[1]))
			}
			blocks = append(blocks, docBlock{page: filepath.Base(p), line: i + 2, text: strings.Join(body, "\n") + "\n"})
			i = j
		}
	}
	return blocks
}

// otherYAMLKeys are top-level keys of the other YAML the docs show:
// workflows, workflow steps, action metadata (action.yml) and the daemon
// config.
var otherYAMLKeys = map[string]bool{"jobs": true, "on": true, "name": true, "steps": true, "with": true, "uses": true, "runs": true, "inputs": true, "outputs": true,
	"runner": true, "cluster": true, "load": true, "metrics": true, "forge": true, "cache": true, "services": true, "container": true, "scrape_configs": true}

// TestDocsLoadConfigs reads every load config the docs show, as a newcomer
// copies it, and checks that it parses and validates. A block that shows
// part of a config (no target) is checked with a target added; blocks of
// workflows and of the daemon config are left to their own tests. Before,
// the per-phase example named an endpoint it did not define and the
// checks:rate example had no checks, so both were refused as written.
func TestDocsLoadConfigs(t *testing.T) {
	t.Parallel()
	checked := 0
	for _, b := range docBlocks(t) {
		var top map[string]any
		if yaml.Unmarshal([]byte(b.text), &top) != nil || top == nil {
			continue // a list (workflow steps) or not YAML
		}
		skip := false
		for k := range top {
			skip = skip || otherYAMLKeys[k]
		}
		if skip {
			continue
		}
		name := fmt.Sprintf("%s:%d", b.page, b.line)
		c, err := Parse(name, []byte(b.text))
		if err != nil {
			t.Errorf("docs/%s: the example does not parse: %v\n%s", name, err, b.text)
			continue
		}
		if c.Target == "" {
			c.Target = "http://127.0.0.1:8080/"
		}
		if err := c.Validate(); err != nil {
			t.Errorf("docs/%s: the example is refused: %v\n%s", name, err, b.text)
		}
		checked++
	}
	if checked < 15 {
		t.Errorf("checked %d load configs of the docs, want at least 15: is the block format still ```yaml?", checked)
	}
}
