package build

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/forgeload/forgeload/internal/pkg/load"
	"github.com/forgeload/forgeload/internal/pkg/load/spec"
)

func parse(t *testing.T, yaml string) *spec.Config {
	t.Helper()
	cfg, err := spec.Parse("test.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestPlanRunsConfigAgainstServer(t *testing.T) {
	t.Parallel()
	var fails, oks atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/bad" {
			fails.Add(1)
			w.WriteHeader(500)
			return
		}
		if r.Header.Get("X-Key") != "v" || r.Method != http.MethodPost {
			w.WriteHeader(400)
			return
		}
		oks.Add(1)
	}))
	defer srv.Close()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "body.json"), []byte(`{"a":1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := parse(t, `
target: `+srv.URL+`
method: POST
headers: {X-Key: v}
body_file: `+filepath.Join(dir, "body.json")+`
concurrency: 4
total: 200
retries: 1
endpoints:
  - name: good
    weight: 3
  - name: bad
    path: /bad
    weight: 1
thresholds:
  - "http_req_failed:rate < 50%"
  - "http_req_duration:p99 < 10s"
  - "http_req_failed{endpoint=good}:rate < 1%"
  - "http_req_failed{endpoint=bad}:rate < 1%"
`)
	p, err := New(cfg, Settings{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	res, err := p.Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	checks := Evaluate(p.Thresholds, res)
	if res.Requests != 200 || oks.Load()+fails.Load() != 200+res.Retries {
		t.Errorf("requests = %d, server saw %d ok + %d failed with %d retries", res.Requests, oks.Load(), fails.Load(), res.Retries)
	}
	if len(checks) != 4 {
		t.Fatalf("checks = %+v, want 4", checks)
	}
	want := []bool{true, true, true, false}
	for i, c := range checks {
		if c.Passed != want[i] {
			t.Errorf("check %q passed = %v (actual %s), want %v", c.Name, c.Passed, c.Actual, want[i])
		}
	}
}

func TestPlanMapsLoadModel(t *testing.T) {
	t.Parallel()
	cfg := parse(t, `
target: http://127.0.0.1:1/
concurrency: 10
arrival: {model: poisson}
seed: 42
load_patterns:
  - {type: ramp, from_rps: 10, to_rps: 100, duration: 10s}
  - {type: step, steps: [{rps: 50, duration: 5s}, {rps: 70, duration: 5s}]}
  - {type: spike, rps: 500, duration: 2s}
`)
	p, err := New(cfg, Settings{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	o := p.Options
	want := []load.Stage{load.Ramp(10, 100, 10*time.Second), load.Step(50, 5*time.Second), load.Step(70, 5*time.Second), load.Spike(500, 2*time.Second)}
	if len(o.Stages) != len(want) {
		t.Fatalf("stages = %+v, want %+v", o.Stages, want)
	}
	for i := range want {
		if o.Stages[i] != want[i] {
			t.Errorf("stage %d = %+v, want %+v", i, o.Stages[i], want[i])
		}
	}
	if o.Arrival != load.Poisson || o.Seed != 42 || o.Concurrency != 10 {
		t.Errorf("arrival %v seed %d concurrency %d, want poisson 42 10", o.Arrival, o.Seed, o.Concurrency)
	}

	cfg = parse(t, `
target: http://127.0.0.1:1/
duration: 30s
vus: {start: 2, stages: [{duration: 10s, target: 20}, {duration: 10s, target: 5}]}
think_time: 100ms
`)
	p, err = New(cfg, Settings{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	o = p.Options
	if o.VUs != 2 || len(o.VUStages) != 2 || o.VUStages[0].Target != 20 || o.ThinkTime != 100*time.Millisecond {
		t.Errorf("closed model mapped to vus %d stages %+v think %v", o.VUs, o.VUStages, o.ThinkTime)
	}
}

func TestPlanLimits(t *testing.T) {
	t.Parallel()
	l := Limits{MaxRate: 100, MaxConcurrency: 10, MaxDuration: time.Minute}
	for _, tc := range []struct {
		yaml, want string
	}{
		{"target: http://x/\nrate: 500\nduration: 10s\n", "load.max_rate"},
		{"target: http://x/\nload_patterns: [{type: spike, rps: 200, duration: 1s}]\n", "load.max_rate"},
		{"target: http://x/\nconcurrency: 50\nrate: 10\nduration: 10s\n", "load.max_concurrency"},
		{"target: http://x/\nrate: 10\nduration: 2h\n", "load.max_duration"},
	} {
		_, err := New(parse(t, tc.yaml), Settings{Limits: l})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: New = %v, want an error naming %s", tc.yaml, err, tc.want)
		}
	}
	p, err := New(parse(t, "target: http://x/\nrate: 10\ntotal: 100\n"), Settings{Limits: l})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.Options.Duration != time.Minute {
		t.Errorf("open-ended plan duration = %v, want the 1m limit", p.Options.Duration)
	}
}

// TestPlanBuildsExamples builds a plan from every example load config.
func TestPlanBuildsExamples(t *testing.T) {
	t.Parallel()
	files, _ := filepath.Glob("../../../../examples/load/*.*")
	if len(files) == 0 {
		t.Skip("no examples/load")
	}
	for _, f := range files {
		cfg, err := spec.Load(f)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if err := cfg.Validate(); err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		p, err := New(cfg, Settings{})
		if err != nil {
			t.Errorf("New(%s) = %v", f, err)
			continue
		}
		if len(p.Options.Endpoints) == 0 || p.Options.Requester == nil {
			t.Errorf("%s: plan without endpoints or requester", f)
		}
		p.Close()
	}
}

// TestConfinedFilesStayInTheRoot: with a config confined to a workspace,
// the body, feeder and proto files it names are read inside it only.
func TestConfinedFilesStayInTheRoot(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "users.csv"), []byte("id\n1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(ws)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	for _, c := range []struct{ cfg, want string }{
		{"target: http://127.0.0.1:9/\nfeeder: {path: /etc/passwd, type: csv}\n", "outside the workspace"},
		{"target: http://127.0.0.1:9/\nbody_file: /dev/zero\n", "outside the workspace"},
		{"target: http://127.0.0.1:9/\nprotocol: grpc\ngrpc: {proto_file: /etc/passwd, service: S, method: M}\n", "outside the workspace"},
		{"target: http://127.0.0.1:9/\nendpoints: [{protocol: grpc, target: '127.0.0.1:9', grpc: {proto_file: /etc/passwd, service: S, method: M}}]\n", "outside the workspace"},
		{"target: http://127.0.0.1:9/\nfeeder: {path: users.csv}\n", ""},
	} {
		cfg, err := spec.Parse("t.yaml", []byte(c.cfg))
		if err != nil {
			t.Fatalf("Parse(%q): %v", c.cfg, err)
		}
		cfg.ConfineTo(root)
		p, err := New(cfg, Settings{})
		if c.want == "" {
			if err != nil {
				t.Fatalf("New(%q) = %v, want a plan", c.cfg, err)
			}
			p.Close()
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%q) = %v, want %q", c.cfg, err, c.want)
		}
	}
}
