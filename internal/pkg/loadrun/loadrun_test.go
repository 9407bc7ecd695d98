package loadrun

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/forgeload/forgeload/internal/pkg/cluster"
	"github.com/forgeload/forgeload/internal/pkg/cluster/segment"
	"github.com/forgeload/forgeload/internal/pkg/cluster/snapshot"
	"github.com/forgeload/forgeload/internal/pkg/load"
	"github.com/forgeload/forgeload/internal/pkg/load/build"
	"github.com/forgeload/forgeload/internal/pkg/load/spec"
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
// through the cluster's typed form and its wire, and merges there exactly
// as engine snapshots merge (histograms included), endpoints in plan order.
func TestClusterSnapshotRoundTrip(t *testing.T) {
	t.Parallel()
	a, b := sampleSnapshot(4, time.Millisecond), sampleSnapshot(4, 40*time.Millisecond)
	merged := snapshot.New(4)
	merged.Merge(toCluster(a))
	merged.Merge(toCluster(b))
	raw, err := merged.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	wire, err := snapshot.Unmarshal(raw)
	if err != nil {
		t.Fatal(err)
	}
	got := fromCluster(wire)

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
	if a.Requests != 15 || a.Latency.Count() != 15 {
		t.Errorf("merging changed the engine's snapshot: %d requests, %d samples, want 15", a.Requests, a.Latency.Count())
	}
}

// validated parses and validates a config, with inline keys on top.
func validated(t *testing.T, name, text string, inline map[string]string) *spec.Config {
	t.Helper()
	cfg, err := spec.Parse(name, []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Override(inline); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestSpecRoundTrip: the worker gets the coordinator's validated config,
// inline keys applied, without parsing YAML again.
func TestSpecRoundTrip(t *testing.T) {
	t.Parallel()
	cfg := validated(t, "perf/api.yaml", "target: http://127.0.0.1:9/\nduration: 2s\nload_patterns:\n  - {type: step, steps: [{rps: 5, duration: 1s}]}\nthresholds: [\"http_req_duration:p99 < 300ms\"]\n",
		map[string]string{"distributed": "{workers: 3}", "duration": "3s"})
	b, err := EncodeSpec(cfg)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeSpec(b)
	if err != nil {
		t.Fatal(err)
	}
	if got.Duration != 3*time.Second || got.Distributed == nil || got.Distributed.Workers != 3 || got.Source() != "perf/api.yaml" ||
		len(got.Patterns) != 1 || len(got.Patterns[0].Steps) != 1 || len(got.Thresholds) != 1 || got.Timeout != cfg.Timeout {
		t.Errorf("decoded duration %s distributed %+v source %s patterns %+v thresholds %v timeout %s", got.Duration, got.Distributed, got.Source(), got.Patterns, got.Thresholds, got.Timeout)
	}
	// A worker builds its run from it directly: no parse, no validate.
	o, ths, err := build.EngineOptions(got, build.Limits{})
	if err != nil || len(o.Stages) != 1 || len(ths) != 1 {
		t.Errorf("engine options of the decoded spec: %d stages, %d thresholds, %v", len(o.Stages), len(ths), err)
	}
}

func TestDecodeSpecErrors(t *testing.T) {
	t.Parallel()
	ok, err := EncodeSpec(validated(t, "x.yaml", "target: http://127.0.0.1:9/\nrate: 1\n", nil))
	if err != nil {
		t.Fatal(err)
	}
	with := func(from, to string) string { return strings.Replace(string(ok), from, to, 1) }
	for _, tc := range []struct{ name, in, want string }{
		{"not json", "{", "decode distributed load spec"},
		{"version 1", `{"v":1,"name":"x.yaml","config":"dGFyZ2V0OiB4"}`, "version 1, this runner understands 2 and 3: run the same forgeload version on every cluster member"},
		{"newer version", `{"v":4}`, "version 4"},
		{"unknown field", with(`"Target":`, `"Targets":1,"Target":`), `unknown field "Targets"`},
		{"no config", `{"v":2,"name":"x.yaml"}`, "no config"},
		{"body file", with(`"BodyFile":""`, `"BodyFile":"/etc/passwd"`), "body_file"},
		{"feeder without rows", with(`"Feeder":null`, `"Feeder":{"Path":"/etc/passwd","Type":"csv","Recycle":false,"Data":null}`), "shipped no rows"},
		{"har file", with(`"HARFile":""`, `"HARFile":"/etc/passwd"`), "har_file"},
		{"too big", `{"v":2,"x":"` + strings.Repeat("a", MaxSpecBytes) + `"}`, "byte limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if _, err := DecodeSpec([]byte(tc.in)); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("DecodeSpec(%.60s) = %v, want an error mentioning %q", tc.in, err, tc.want)
			}
		})
	}
}

func FuzzDecodeSpec(f *testing.F) {
	cfg, err := spec.Parse("f.yaml", []byte("target: http://127.0.0.1:9/\nrate: 5\n"))
	if err != nil {
		f.Fatal(err)
	}
	b, err := EncodeSpec(cfg)
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{string(b), `{"v":2}`, `{}`, `[]`, ``} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		cfg, err := DecodeSpec(b)
		if err == nil && cfg == nil {
			t.Fatal("nil config without error")
		}
	})
}

func TestWriteWorkers(t *testing.T) {
	t.Parallel()
	tot := toCluster(sampleSnapshot(-1, time.Millisecond))
	out := &cluster.Outcome{RunID: "r1", StartAt: time.Unix(100, 0), Reassignments: 1, Workers: []cluster.WorkerRow{
		{ID: "w1", Host: "h1", Segments: []int{0, 1}, Dropped: 2, CPUPct: 41, ClockOffset: 3 * time.Millisecond, Total: tot},
		{ID: "w2", Host: "h2", Segments: []int{1}, Lost: true, Reason: "lease expired", LastSecond: 1, LostAt: 3500 * time.Millisecond, LostShare: 0.5},
	}}
	var txt, md bytes.Buffer
	// 100 req/s planned: w2 held half the plan from 2 s to 3.5 s unreported.
	plannedIn := func(from, to time.Duration) float64 { return 100 * (to - from).Seconds() }
	if err := WriteWorkers(&txt, out, 5*time.Second, false, plannedIn); err != nil {
		t.Fatal(err)
	}
	if err := WriteWorkers(&md, out, 5*time.Second, true, nil); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Workers (run r1, start 1970-01-01T00:01:40Z, 1 reassignments)", "w1      h1    0,1       15        3.0     2        41     3ms", "lost: lease expired; no metrics from 2s until it stopped sending (by 3.5s): up to 75 requests unreported"} {
		if !strings.Contains(txt.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, txt.String())
		}
	}
	if !strings.Contains(md.String(), "| w1 | h1 | 0,1 | 15 | 3.0 | 2 | 41 | 3ms | ok |") {
		t.Errorf("markdown:\n%s", md.String())
	}
}

// TestLostRowClosedTotal: in a closed-model total, a worker lost before it
// shipped any metrics shows what its last status said it had sent, never
// 0, and bounds what may be missing by the rest of its share of total.
func TestLostRowClosedTotal(t *testing.T) {
	t.Parallel()
	out := &cluster.Outcome{RunID: "r1", Workers: []cluster.WorkerRow{
		{ID: "w2", Host: "h2", Segments: []int{1}, Lost: true, Reason: "lease expired", LastSecond: -1, LostAt: 2 * time.Second, LostShare: 0.5, SentAtLeast: 200},
	}}
	rows := workerRows(out, 5*time.Second, rowBounds{closedTotal: 1000})
	if len(rows) != 1 || rows[0].Requests != 200 {
		t.Fatalf("lost row %+v, want 200 requests (what its status said it sent)", rows)
	}
	if want := "up to 300 requests unreported (the rest of its share of total)"; !strings.Contains(rows[0].Status, want) {
		t.Errorf("lost row status %q lacks %q", rows[0].Status, want)
	}
}

// TestPlanEndAndClosedShare: an open plan with a total ends at the arrival
// after its last one (not at duration) unless the duration comes first,
// and a closed-model total splits exactly over the segments.
func TestPlanEndAndClosedShare(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		o    load.Options
		want time.Duration
	}{
		{"total before duration", load.Options{Rate: 300, Total: 300, Duration: 30 * time.Second}, time.Second},
		{"duration before total", load.Options{Rate: 10, Total: 1000, Duration: 5 * time.Second}, 5 * time.Second},
		{"no total", load.Options{Rate: 300, Duration: 30 * time.Second}, 30 * time.Second},
		{"closed model", load.Options{Concurrency: 3, Total: 300, Duration: 30 * time.Second}, 30 * time.Second},
	} {
		if got := planEnd(&tc.o); got != tc.want {
			t.Errorf("%s: planEnd = %s, want %s", tc.name, got, tc.want)
		}
	}
	seq, err := segment.Equal(3)
	if err != nil {
		t.Fatal(err)
	}
	var sum uint64
	for i := range 3 {
		n, ok := closedShare(&load.Options{Concurrency: 6, Total: 301}, seq.ScaleFunc(i))
		if !ok {
			t.Fatalf("segment %d: no closed-model share of total 301", i)
		}
		sum += n
	}
	if sum != 301 {
		t.Errorf("closed-model shares of 301 sum to %d, want 301", sum)
	}
	if _, ok := closedShare(&load.Options{Rate: 100, Total: 301}, seq.ScaleFunc(0)); ok {
		t.Error("an open-model total got a per-segment share; it is striped by arrival index instead")
	}
}
