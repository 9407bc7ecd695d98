package run

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/forgeload/forgeload/internal/pkg/cluster"
	"github.com/forgeload/forgeload/internal/pkg/cluster/snapshot"
	"github.com/forgeload/forgeload/internal/pkg/load"
	"github.com/forgeload/forgeload/internal/pkg/load/plan"
)

func sampleSnapshot(sec int, base time.Duration) *load.Snapshot {
	s := &load.Snapshot{Second: sec, Dropped: 2, InFlight: 3}
	ep := func(name string, n int, code int) load.EndpointStats {
		st := load.Stats{Requests: int64(n), Errors: 1, BytesIn: 100, BytesOut: 50, Retries: 1, Late: 1,
			Status: map[int]int64{code: int64(n)}, Classes: map[string]int64{"timeout": 1}, Latency: load.NewHistogram()}
		for i := range n {
			st.Latency.Record(base + time.Duration(i)*time.Millisecond)
		}
		return load.EndpointStats{Name: name, Stats: st}
	}
	s.Endpoints = []load.EndpointStats{ep("get|items", 10, 200), ep("", 5, 503)}
	for i := range s.Endpoints {
		s.Stats.Merge(&s.Endpoints[i].Stats)
	}
	return s
}

// TestClusterSnapshotRoundTrip: an engine snapshot survives the trip
// through the cluster's form and merges there exactly as engine
// snapshots merge (histograms included), endpoints in plan order.
func TestClusterSnapshotRoundTrip(t *testing.T) {
	t.Parallel()
	a, b := sampleSnapshot(4, time.Millisecond), sampleSnapshot(4, 40*time.Millisecond)
	merged := ToClusterSnapshot(a)
	merged.Merge(ToClusterSnapshot(b))
	raw, err := merged.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	wire, err := snapshot.Unmarshal(raw)
	if err != nil {
		t.Fatal(err)
	}
	got := FromClusterSnapshot(wire, []string{"get|items", ""})

	var want load.Result
	want.AddSnapshot(a)
	want.AddSnapshot(b)
	var have load.Result
	have.AddSnapshot(got)
	if got.Second != 4 || got.Dropped != 4 || got.InFlight != 6 {
		t.Errorf("second %d dropped %d in-flight %d, want 4, 4, 6", got.Second, got.Dropped, got.InFlight)
	}
	if have.Requests != want.Requests || have.Errors != want.Errors || have.BytesIn != want.BytesIn || have.Retries != want.Retries ||
		have.Late != want.Late || have.Status[200] != 20 || have.Status[503] != 10 || have.Classes["timeout"] != 4 {
		t.Errorf("totals %+v, want %+v", have.Stats, want.Stats)
	}
	if !have.Latency.Equal(want.Latency) {
		t.Errorf("merged histogram differs: p99 %s, want %s", have.Latency.Quantile(0.99), want.Latency.Quantile(0.99))
	}
	if len(got.Endpoints) != 2 || got.Endpoints[0].Name != "get|items" || got.Endpoints[1].Name != "" {
		t.Fatalf("endpoints %+v, want get|items then the unnamed one", got.Endpoints)
	}
	if got.Endpoints[0].Requests != 20 || got.Endpoints[0].Latency.Count() != 20 {
		t.Errorf("endpoint get|items: %d requests, %d samples, want 20", got.Endpoints[0].Requests, got.Endpoints[0].Latency.Count())
	}
}

func TestSpecRoundTrip(t *testing.T) {
	t.Parallel()
	b, err := EncodeSpec("perf/api.yaml", []byte("target: http://127.0.0.1:9/\nrate: 100\nduration: 2s\n"), map[string]string{"rate": "300", "distributed": "{workers: 3}"})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := DecodeSpec(b)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Rate != 300 || cfg.Duration != 2*time.Second || cfg.Distributed == nil || cfg.Distributed.Workers != 3 || cfg.Source() != "perf/api.yaml" {
		t.Errorf("decoded rate %v duration %s distributed %+v source %s", cfg.Rate, cfg.Duration, cfg.Distributed, cfg.Source())
	}
}

func TestDecodeSpecErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, in, want string }{
		{"not json", "{", "decode distributed load spec"},
		{"version", `{"v":2}`, "version 2"},
		{"bad config", `{"v":1,"name":"x.yaml","config":"` + b64("rate: [") + `"}`, "x.yaml"},
		{"unknown key", `{"v":1,"config":"` + b64("target: http://127.0.0.1:9/\nrat: 1\n") + `"}`, "rat"},
		{"bad inline", `{"v":1,"config":"` + b64("target: http://127.0.0.1:9/\n") + `","inline":{"rate":"fast"}}`, "rate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if _, err := DecodeSpec([]byte(tc.in)); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("DecodeSpec(%s) = %v, want an error mentioning %q", tc.in, err, tc.want)
			}
		})
	}
}

func b64(s string) string {
	b, _ := EncodeSpec("", []byte(s), nil)
	// Pull the base64 config out of a real encoding.
	_, rest, _ := strings.Cut(string(b), `"config":"`)
	v, _, _ := strings.Cut(rest, `"`)
	return v
}

func FuzzDecodeSpec(f *testing.F) {
	for _, s := range []string{`{"v":1,"config":"` + b64("target: http://127.0.0.1:9/\nrate: 5\n") + `"}`, `{"v":1}`, `{}`, `[]`, ``} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		cfg, err := DecodeSpec(b)
		if err == nil && cfg == nil {
			t.Fatal("nil config without error")
		}
	})
}

func TestCheckShare(t *testing.T) {
	t.Parallel()
	third := func(v int) int { return v / 3 }
	for _, tc := range []struct {
		name  string
		o     load.Options
		share float64
		l     plan.Limits
		want  string
	}{
		{"share under max_rate", load.Options{Rate: 300, Concurrency: 10}, 1.0 / 3, plan.Limits{MaxRate: 150}, ""},
		{"share over max_rate", load.Options{Rate: 300, Concurrency: 10}, 2.0 / 3, plan.Limits{MaxRate: 150}, "load.max_rate"},
		{"ramp peak", load.Options{Stages: []load.Stage{load.Ramp(10, 900, time.Second)}}, 1.0 / 3, plan.Limits{MaxRate: 250}, "300 req/s"},
		{"open concurrency is per host", load.Options{Rate: 10, Concurrency: 50}, 0.5, plan.Limits{MaxConcurrency: 40}, "load.max_concurrency"},
		{"closed vus scale", load.Options{VUs: 90}, 1.0 / 3, plan.Limits{MaxConcurrency: 30}, ""},
		{"closed vus over", load.Options{VUs: 99}, 1.0 / 3, plan.Limits{MaxConcurrency: 30}, "concurrency/vus 33"},
		{"duration", load.Options{Rate: 1, Duration: time.Hour}, 0.5, plan.Limits{MaxDuration: time.Minute}, "load.max_duration"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := checkShare(&tc.o, tc.share, third, tc.l)
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("checkShare = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestWriteWorkers(t *testing.T) {
	t.Parallel()
	tot := ToClusterSnapshot(sampleSnapshot(-1, time.Millisecond))
	out := &cluster.Outcome{RunID: "r1", StartAt: time.Unix(100, 0), Reassignments: 1, Workers: []cluster.WorkerRow{
		{ID: "w1", Host: "h1", Segments: []int{0, 1}, Dropped: 2, CPUPct: 41, ClockOffset: 3 * time.Millisecond, Total: tot},
		{ID: "w2", Host: "h2", Segments: []int{1}, Lost: true, Reason: "lease expired"},
	}}
	var txt, md bytes.Buffer
	if err := WriteWorkers(&txt, out, 5*time.Second, false); err != nil {
		t.Fatal(err)
	}
	if err := WriteWorkers(&md, out, 5*time.Second, true); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Workers (run r1, start 1970-01-01T00:01:40Z, 1 reassignments)", "w1      h1    0,1       15        3.0     2        41     3ms", "lost: lease expired"} {
		if !strings.Contains(txt.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, txt.String())
		}
	}
	if !strings.Contains(md.String(), "| w1 | h1 | 0,1 | 15 | 3.0 | 2 | 41 | 3ms | ok |") {
		t.Errorf("markdown:\n%s", md.String())
	}
}
