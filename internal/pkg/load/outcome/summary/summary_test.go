package summary

import (
	"bytes"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/forgeload/forgeload/internal/pkg/load"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// goldenResult builds a fixed two-endpoint result from snapshots, the way
// the engine and the cluster coordinator do.
func goldenResult() *load.Result {
	r := &load.Result{Open: true, TargetRPS: 100, Elapsed: 10 * time.Second}
	for sec := range 10 {
		s := &load.Snapshot{Second: sec, TargetRPS: 100, Dropped: int64(sec % 2), InFlight: 2}
		if s.Dropped > 0 {
			s.DroppedBy = map[string]int64{"late": s.Dropped}
		}
		if sec >= 3 && sec < 7 {
			s.GeneratorLate, s.GeneratorLateMax = 15, time.Duration(sec)*10*time.Millisecond
		}
		for j, name := range []string{"GET /users", "POST /orders"} {
			e := load.EndpointStats{Name: name}
			e.Latency = load.NewHistogram()
			for i := range 50 {
				d := time.Duration(1000+i*100*(j+1)) * time.Microsecond
				e.Latency.Record(d)
			}
			e.Requests, e.BytesIn, e.BytesOut = 50, 50*512, 50*64
			e.Status = map[int]int64{200: 48}
			if j == 1 {
				e.Errors, e.Classes, e.Retries = 2, map[string]int64{"http_5xx": 2}, 3
				e.Status[503] = 2
				e.Messages.Add("unexpected status 503", 2)
			} else {
				e.Status[200] = 49
				e.Errors, e.Classes = 1, map[string]int64{"timeout": 1}
				e.Messages.Add("Get: context deadline exceeded (Client.Timeout exceeded while awaiting headers)", 1)
				e.Late, e.Queued = 4, 1
			}
			s.Endpoints = append(s.Endpoints, e)
			s.Stats.Merge(&e.Stats)
		}
		r.AddSnapshot(s)
	}
	r.Finish()
	return r
}

func TestSummaryGolden(t *testing.T) {
	t.Parallel()
	checks := []load.Check{
		{Name: "http_req_duration:p99 < 300ms", Actual: "5.90ms", Passed: true},
		{Name: "http_req_failed:rate < 0.1%", Actual: "0.30%", Passed: false},
	}
	// One result for the three writers: building it (ten seconds of
	// histograms, each encoded) is this test's cost under -race, and a
	// writer that changed the result it is given would be a data race
	// between these parallel subtests.
	r := goldenResult()
	for _, tc := range []struct {
		file string
		fn   func(*Summary, io.Writer) error
	}{
		{"summary.txt.golden", (*Summary).WriteText},
		{"summary.json.golden", (*Summary).WriteJSON},
		{"summary.md.golden", (*Summary).WriteMarkdown},
	} {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			s := Of(r, checks)
			if err := tc.fn(&s, &buf); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", tc.file)
			if *update {
				if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if got := buf.String(); got != string(want) {
				t.Errorf("%s differs from the golden file (go test -update rewrites it):\ngot:\n%s\nwant:\n%s", tc.file, got, want)
			}
		})
	}
}

// TestSummaryFlagsWhatBoundTheRun checks that arrivals that waited for a
// free worker flag the run worker-bound (the target or the worker cap),
// and that only sustained evidence of the generator's own lateness (at
// least load.GeneratorBehindSeconds seconds with arrivals sent more than
// GeneratorLateTolerance late while a worker was free) flags it
// generator-bound: a timer a few milliseconds late, or a hiccup of a
// second or two, never does.
func TestSummaryFlagsWhatBoundTheRun(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name         string
		late, queued int64
		dropped      map[string]int64
		genLate      []int64 // per second, of 100 requests each
		gen, worker  bool
	}{
		{name: "on time", late: 5},
		{name: "target stalls", late: 300, queued: 290, worker: true},
		{name: "dropped", dropped: map[string]int64{"late": 3}, worker: true},
		// Late by a few ms on a busy machine: the old rule said YES.
		{name: "timers a few ms late", late: 300},
		{name: "hiccup of two seconds", late: 300, genLate: []int64{0, 60, 60, 0, 0}},
		{name: "generator behind", late: 300, genLate: []int64{0, 30, 30, 30, 0}, gen: true},
		{name: "both", late: 300, queued: 150, genLate: []int64{30, 30, 30, 30, 30}, gen: true, worker: true},
	} {
		r := &load.Result{Open: true, Elapsed: 5 * time.Second}
		for sec := range 5 {
			snap := &load.Snapshot{Second: sec, Stats: load.Stats{Requests: 200, Late: tc.late / 5, Queued: tc.queued / 5}}
			if sec < len(tc.genLate) && tc.genLate[sec] > 0 {
				snap.GeneratorLate, snap.GeneratorLateMax = 2*tc.genLate[sec], 40*time.Millisecond
			}
			if sec == 0 {
				snap.DroppedBy = tc.dropped
				for _, n := range tc.dropped {
					snap.Dropped += n
				}
			}
			r.AddSnapshot(snap)
		}
		r.Finish()
		if r.GeneratorBound != tc.gen || r.WorkerBound != tc.worker {
			t.Errorf("%s: generator-bound %v, worker-bound %v; want %v, %v", tc.name, r.GeneratorBound, r.WorkerBound, tc.gen, tc.worker)
		}
		var buf bytes.Buffer
		s := Of(r, nil)
		if err := s.WriteText(&buf); err != nil {
			t.Fatal(err)
		}
		out := buf.String()
		if strings.Contains(out, "Generator-bound           YES") != tc.gen || strings.Contains(out, "Worker-bound              YES") != tc.worker {
			t.Errorf("%s: summary flags do not match the result:\n%s", tc.name, out)
		}
		if tc.worker && !strings.Contains(out, "Raise max_concurrency") || tc.gen && !strings.Contains(out, "Lower the rate") {
			t.Errorf("%s: summary does not say what to change:\n%s", tc.name, out)
		}
		if tc.gen && !strings.Contains(out, "(up to 40.00ms late); behind in ") {
			t.Errorf("%s: summary shows no evidence (how many, how late, when):\n%s", tc.name, out)
		}
		if strings.Contains(out, "Thresholds") {
			t.Error("text summary has a thresholds section without checks")
		}
	}
}
