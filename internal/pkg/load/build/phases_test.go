package build

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/forgeload/forgeload/internal/pkg/load"
	"github.com/forgeload/forgeload/internal/pkg/load/outcome/summary"
)

// A service slow for its first second fails a p99 bound over the whole
// run, but the plateau phase, which excludes that warm-up, passes it.
func TestPhaseThresholdExcludesWarmup(t *testing.T) {
	t.Parallel()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) <= 10 { // the arrivals of the first half second
			time.Sleep(time.Second) // the slow warm-up under test, not a synchronisation
		}
	}))
	defer srv.Close()
	cfg := parse(t, `
target: `+srv.URL+`
concurrency: 20
endpoints:
  - name: api
load_patterns:
  - name: warmup
    type: constant
    rps: 20
    duration: 2s
  - name: plateau
    type: constant
    rps: 20
    duration: 2s
thresholds:
  - http_req_duration:p99 < 500ms
  - http_req_duration{phase:plateau}:p99 < 500ms
  - http_req_duration{endpoint:api,phase:plateau}:p99 < 500ms
  - http_requests{phase:plateau}:count > 30
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
	want := []bool{false, true, true, true}
	for i, c := range checks {
		if c.Passed != want[i] {
			t.Errorf("%s: passed = %v, want %v (actual %s)", c.Name, c.Passed, want[i], c.Actual)
		}
	}
	if len(res.Phases) != 2 || res.Phases[0].Name != "warmup" || res.Phases[1].Name != "plateau" {
		t.Fatalf("phases = %+v, want warmup then plateau", res.Phases)
	}
	if w, pl := res.Phases[0].Requests, res.Phases[1].Requests; w+pl != res.Requests {
		t.Errorf("phase requests %d + %d != %d in all", w, pl, res.Requests)
	}
	s := summary.Of(res, checks)
	var text, js bytes.Buffer
	if err := s.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "\nPhases\n") || !strings.Contains(text.String(), "plateau") {
		t.Errorf("text summary has no phases table:\n%s", text.String())
	}
	if !strings.Contains(js.String(), `"phases": [`) || !strings.Contains(js.String(), `"name": "warmup"`) {
		t.Errorf("JSON result has no phases:\n%s", js.String())
	}
}

// A phase threshold evaluated on a result without that phase fails with
// an error that lists the phases.
func TestPhaseThresholdUnknownPhaseListsPhases(t *testing.T) {
	t.Parallel()
	res := &load.Result{}
	res.SetPhases([]load.Phase{{Name: "warmup", End: time.Second}, {Name: "plateau", Start: time.Second, End: 2 * time.Second}})
	res.AddSnapshot(&load.Snapshot{Second: 0, Stats: load.Stats{Requests: 1}})
	cfg := parse(t, "target: http://127.0.0.1:1\ntotal: 1\nthresholds: ['http_req_failed:count < 1']\n")
	ths, err := cfg.ParsedThresholds()
	if err != nil {
		t.Fatal(err)
	}
	ths[0].Phase, ths[0].Source = "soak", "http_req_failed{phase:soak}:count < 1"
	c := Evaluate(ths, res)[0]
	if c.Passed || !strings.Contains(c.Actual, `no phase named "soak"; the phases are: warmup, plateau`) {
		t.Errorf("check = %+v, want a failure listing the phases", c)
	}
}

// Every request fails: an abort_on_fail failure-rate threshold with a
// delay of 1s stops a 30 s plan within about two seconds.
func TestAbortOnFailStopsTheRun(t *testing.T) {
	t.Parallel()
	var seen atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.Add(1)
		w.WriteHeader(http.StatusInternalServerError)
	}))
	defer srv.Close()
	cfg := parse(t, `
target: `+srv.URL+`
rate: 50
duration: 30s
thresholds:
  - http_req_duration:p99 < 300ms
  - expr: http_req_failed:rate < 1%
    abort_on_fail: true
    delay: 1s
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
	var ab *Abort
	if !errors.As(p.Stopped(), &ab) {
		t.Fatalf("Stopped() = %v, want an *Abort", p.Stopped())
	}
	if ab.Threshold.Source != "http_req_failed:rate < 1%" || ab.At < time.Second {
		t.Errorf("abort = %v, want the failure-rate threshold at 1s or later", ab)
	}
	// 1,500 arrivals are planned; the run ends after about 100.
	if planned := int64(50 * 30); res.Requests > planned/5 || seen.Load() > planned/5 {
		t.Errorf("the run sent %d requests (server saw %d) of %d planned: it was not stopped early", res.Requests, seen.Load(), planned)
	}
	if !strings.HasPrefix(ab.Error(), "aborted: http_req_failed:rate < 1% (0.01) at ") {
		t.Errorf("abort message = %q", ab.Error())
	}
}

// Before its delay, an abort_on_fail threshold does not stop the run; a
// threshold without abort_on_fail never does.
func TestWatchHonoursDelay(t *testing.T) {
	t.Parallel()
	cfg := parse(t, `
target: http://127.0.0.1:1
rate: 10
duration: 10s
thresholds:
  - http_req_failed:rate < 50%
  - expr: http_req_failed:count < 1
    abort_on_fail: true
    delay: 3s
`)
	ths, err := cfg.ParsedThresholds()
	if err != nil {
		t.Fatal(err)
	}
	w := NewWatch(ths, nil)
	failing := func(sec int) *load.Snapshot {
		return &load.Snapshot{Second: sec, Stats: load.Stats{Requests: 10, Errors: 10}}
	}
	for sec := range 2 {
		if a := w.Add(failing(sec)); a != nil {
			t.Fatalf("second %d: aborted before the delay: %v", sec, a)
		}
	}
	a := w.Add(failing(2))
	if a == nil || a.At != 3*time.Second || a.Threshold.Source != "http_req_failed:count < 1" {
		t.Fatalf("abort = %v, want http_req_failed:count < 1 at 3s", a)
	}
	if NewWatch(ths[:1], nil) != nil {
		t.Error("a watch of thresholds without abort_on_fail is not nil")
	}
}

// TestDescribeMarksAbortThresholds: the report's config table shows
// which thresholds abort the run.
func TestDescribeMarksAbortThresholds(t *testing.T) {
	t.Parallel()
	cfg := parse(t, "target: http://127.0.0.1:1\nrate: 1\nduration: 5s\nthresholds:\n  - http_req_duration:p99 < 1s\n  - expr: http_req_failed:rate < 1%\n    abort_on_fail: true\n    delay: 2s\n")
	for _, row := range Describe(cfg) {
		if row.Key == "thresholds" {
			if want := "http_req_duration:p99 < 1s\nhttp_req_failed:rate < 1%  [abort_on_fail, delay 2s]"; row.Value != want {
				t.Errorf("thresholds row = %q, want %q", row.Value, want)
			}
			return
		}
	}
	t.Error("Describe has no thresholds row")
}
