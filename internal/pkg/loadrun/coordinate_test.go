package loadrun

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/forgeload/forgeload/internal/pkg/cluster"
	"github.com/forgeload/forgeload/internal/pkg/cluster/snapshot"
	"github.com/forgeload/forgeload/internal/pkg/load"
	"github.com/forgeload/forgeload/internal/pkg/load/build"
)

// fakeCluster records the run it is given and answers with a fixed
// outcome, feeding its seconds to OnSecond as the coordinator would.
type fakeCluster struct {
	plan cluster.Run
	out  *cluster.Outcome
	err  error
}

func (f *fakeCluster) Coordinate(_ context.Context, p cluster.Run, o cluster.CoordOptions, _ func(string) string) (*cluster.Outcome, error) {
	f.plan = p
	if f.out != nil {
		for _, s := range f.out.Seconds {
			o.OnSecond(s.Clone())
		}
	}
	return f.out, f.err
}

// TestCoordinateShipsTimeline: the coordinator decides the timeline (the
// runner's max_duration fills a missing duration, one Poisson seed for
// every worker) and ships it in the typed spec; it builds no run of its
// own (build.EngineOptions opens nothing). The merged seconds come back as
// the result, with thresholds evaluated on them and the plan's endpoint
// order kept.
func TestCoordinateShipsTimeline(t *testing.T) {
	t.Parallel()
	cfg := validated(t, "perf/api.yaml", `target: http://127.0.0.1:9/
headers: {X-Env: ci}
rate: 10
arrival: {model: poisson}
distributed: {workers: 2}
thresholds: ["http_req_failed:rate < 0.01"]
`, nil)
	sec := func(n int) *snapshot.Snapshot {
		s := snapshot.New(n)
		s.Endpoints = append(s.Endpoints, sampleSnapshot(n, time.Millisecond).Endpoints...)
		for i := range s.Endpoints {
			s.Stats.Merge(&s.Endpoints[i].Stats)
		}
		return s
	}
	fc := &fakeCluster{out: &cluster.Outcome{RunID: "r", StartAt: time.Now(), Seconds: []*snapshot.Snapshot{sec(0), sec(1)},
		Total: snapshot.New(-1), Workers: []cluster.WorkerRow{{ID: "w1", Total: sec(-1)}}}}
	var logs []string
	d, err := Coordinate(context.Background(), cfg, CoordSettings{Cluster: fc, Limits: build.Limits{MaxDuration: 3 * time.Second}, ProgressInterval: time.Second,
		Logf: func(f string, a ...any) { logs = append(logs, f) }})
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeSpec(fc.plan.Spec)
	if err != nil {
		t.Fatalf("the shipped spec does not decode: %v", err)
	}
	if got.Duration != 3*time.Second || got.Seed == 0 || got.Headers["X-Env"] != "ci" || got.Source() != "perf/api.yaml" {
		t.Errorf("shipped duration %s seed %d headers %v source %s, want 3s, a seed, the headers, perf/api.yaml", got.Duration, got.Seed, got.Headers, got.Source())
	}
	if fc.plan.Workers != 2 || fc.plan.Duration <= 3*time.Second {
		t.Errorf("plan workers %d duration %s, want 2 and the 3 s timeline plus grace", fc.plan.Workers, fc.plan.Duration)
	}
	if !strings.Contains(strings.Join(logs, "\n"), "poisson seed") {
		t.Errorf("no poisson seed line in %q", logs)
	}
	if checks := build.Evaluate(d.Thresholds, d.Result); d.Result.Requests != 30 || len(checks) != 1 || checks[0].Passed {
		t.Errorf("merged %d requests, checks %+v: want 30 and the failed-rate threshold failing (2 of 15 failed)", d.Result.Requests, checks)
	}
	if eps := d.Result.Endpoints; len(eps) != 2 || eps[0].Name != "get|items" {
		t.Errorf("endpoints %+v, want the plan's order", eps)
	}
	var b bytes.Buffer
	if err := d.WriteWorkers(&b, true); err != nil || !strings.Contains(b.String(), "| w1 |") {
		t.Errorf("worker table: %v\n%s", err, b.String())
	}
}

// TestCoordinateRefuses: without a cluster, a body_file, or a duration the
// test fails before anything is shipped, saying how to fix it; a failed
// run says it was the distributed test that failed.
func TestCoordinateRefuses(t *testing.T) {
	t.Parallel()
	dist := "distributed: {workers: 2}\n"
	for _, tc := range []struct {
		name, cfg string
		cl        Coordinator
		want      string
	}{
		{"no cluster", "target: http://127.0.0.1:9/\nduration: 1s\n" + dist, nil, "no cluster configured"},
		{"body file", "target: http://127.0.0.1:9/\nduration: 1s\nbody_file: b.json\n" + dist, &fakeCluster{}, "body_file is not supported"},
		{"no duration", "target: http://127.0.0.1:9/\ntotal: 10\n" + dist, &fakeCluster{}, "no duration"},
		{"run failed", "target: http://127.0.0.1:9/\nduration: 1s\n" + dist, &fakeCluster{err: errors.New("boom")}, "distributed load test: boom"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := validated(t, "x.yaml", tc.cfg, nil)
			_, err := Coordinate(context.Background(), cfg, CoordSettings{Cluster: tc.cl})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Coordinate = %v, want an error mentioning %q", err, tc.want)
			}
		})
	}
}

// TestCoordinateShipsFeederRows: the coordinator reads the feeder file
// (the workers cannot) and ships its rows inside the spec; a worker uses
// them and reads no file of its own.
func TestCoordinateShipsFeederRows(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "ids.csv")
	if err := os.WriteFile(path, []byte("id\n1\n2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := validated(t, "x.yaml", "target: http://127.0.0.1:9/row/{{id}}\nrate: 10\nduration: 1s\ndistributed: {workers: 2}\nfeeder: {path: "+path+"}\n", nil)
	fc := &fakeCluster{err: errors.New("stop after shipping")}
	if _, err := Coordinate(context.Background(), cfg, CoordSettings{Cluster: fc}); err == nil {
		t.Fatal("Coordinate succeeded without a run")
	}
	got, err := DecodeSpec(fc.plan.Spec)
	if err != nil {
		t.Fatalf("the shipped spec does not decode: %v", err)
	}
	if got.Feeder == nil || string(got.Feeder.Data) != "id\n1\n2\n" {
		t.Fatalf("shipped feeder %+v, want the file's rows", got.Feeder)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := build.LoadFeeder(got); err != nil {
		t.Errorf("a worker's feeder needs the file: %v", err)
	}
}

// TestShortfallPoissonCountsTheSeed: a Poisson run is measured against its
// seed's own sequence, which the workers send exactly, not against the
// mean: this seed has 354 arrivals in 2 s at 200 req/s, 11.5% under the
// mean of 400, and a run that sent all of them delivered its plan. A run
// that sent a third of them did not.
func TestShortfallPoissonCountsTheSeed(t *testing.T) {
	t.Parallel()
	o := load.Options{Rate: 200, Duration: 2 * time.Second, Arrival: load.Poisson, Seed: 2395355098601504321}
	sched := load.NewSchedule(&o)
	out := &cluster.Outcome{}
	if msg := shortfall(&o, o.Duration, sched, 354, out); msg != "" {
		t.Errorf("all 354 arrivals of the seed delivered: %s", msg)
	}
	if msg := shortfall(&o, o.Duration, sched, 118, out); !strings.Contains(msg, "118 of 354 planned") {
		t.Errorf("a third delivered: %q, want the shortfall against 354", msg)
	}
	u := load.Options{Rate: 200, Duration: 2 * time.Second}
	if msg := shortfall(&u, u.Duration, load.NewSchedule(&u), 354, out); !strings.Contains(msg, "354 of 400 planned") {
		t.Errorf("uniform arrivals: %q, want the shortfall against 400", msg)
	}
}

// The merged progress lines come every interval, the last window of the
// plan is rated over the seconds it holds, and the grace seconds after
// the plan's end get no line.
func TestProgressLines(t *testing.T) {
	t.Parallel()
	var lines []load.Progress
	p := newProgress(2*time.Second, 3, func(l load.Progress) { lines = append(lines, l) })
	for sec := range 5 {
		p.add(&load.Snapshot{Second: sec, Stats: load.Stats{Requests: 10 * int64(sec+1)}, TargetRPS: 20})
	}
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2 (at 2 s and at the plan's end, 3 s): %+v", len(lines), lines)
	}
	if l := lines[0]; l.Elapsed != 2*time.Second || l.Requests != 30 || l.RPS != 15 || l.TargetRPS != 20 {
		t.Errorf("first line %+v, want 2s, 30 requests, 15 req/s of 20", l)
	}
	if l := lines[1]; l.Elapsed != 3*time.Second || l.Requests != 60 || l.RPS != 30 {
		t.Errorf("last line %+v, want 3s, 60 requests, 30 req/s over its one second", l)
	}
}
