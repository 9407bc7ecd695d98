package summary

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/forgeload/forgeload/internal/pkg/load"
)

// The checks section totals the response checks; a result without checks
// has none.
func TestSummaryChecks(t *testing.T) {
	t.Parallel()
	r := &load.Result{Checks: []load.CheckStats{{Name: "a", Passed: 1, Failed: 2}, {Name: "b", Passed: 4, Failed: 1}, {Name: "c", Failed: 4}}}
	s := Of(r, nil)
	if s.Checks == nil || s.Checks.Passed != 5 || s.Checks.Failed != 7 || s.Checks.Rate != 5.0/12 {
		t.Errorf("summary checks = %+v, want 5 passed, 7 failed, rate 5/12", s.Checks)
	}
	if Of(&load.Result{}, nil).Checks != nil {
		t.Error("a result without checks has a checks summary")
	}
}

// A name used by two windows is one phase for thresholds, two rows in
// the summary.
func TestSummaryPhaseNameOverTwoWindows(t *testing.T) {
	t.Parallel()
	r := &load.Result{Elapsed: 4 * time.Second}
	r.SetPhases([]load.Phase{{Name: "hold", End: time.Second}, {Name: "spike", Start: time.Second, End: 2 * time.Second}, {Name: "hold", Start: 2 * time.Second, End: 4 * time.Second}})
	for sec := range 4 {
		s := &load.Snapshot{Second: sec, Stats: load.Stats{Requests: 10, Latency: load.NewHistogram()},
			Endpoints: []load.EndpointStats{{Name: "api", Stats: load.Stats{Requests: 10}}}}
		for range 10 {
			s.Latency.Record(time.Millisecond)
		}
		r.AddSnapshot(s)
	}
	s := Of(r, nil)
	if len(s.Phases) != 3 || s.Phases[2].Name != "hold" || s.Phases[2].RPS != 10 {
		t.Errorf("summary phases = %+v", s.Phases)
	}
	var md bytes.Buffer
	if err := s.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "| Phase | From | To | Requests |") || !strings.Contains(md.String(), "| spike | 1s | 2s | 10 |") {
		t.Errorf("markdown summary lacks the phases table:\n%s", md.String())
	}
}

// A protocol driver's counters and timings have a section of their own in
// every writer.
func TestSummaryProtocol(t *testing.T) {
	t.Parallel()
	a, b := load.NewProtocolRecorder("websocket"), load.NewProtocolRecorder("websocket")
	a.Add("messages_sent", 2)
	a.Time("connect", 3*time.Millisecond)
	b.Add("messages_sent", 3)
	b.Add("close_4001", 1)
	b.Time("connect", 5*time.Millisecond)
	r1 := &load.Result{Protocol: a.Stats()}
	r1.Merge(&load.Result{Protocol: b.Stats()})
	s := Of(r1, nil)
	var txt, js, md bytes.Buffer
	if err := s.WriteText(&txt); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(txt.String(), "\nwebsocket\n") || !strings.Contains(txt.String(), "close_4001: 1, messages_sent: 5") ||
		!strings.Contains(txt.String(), "connect p50 / p99 / max") {
		t.Errorf("text summary lacks the protocol section:\n%s", txt.String())
	}
	if err := s.WriteMarkdown(&md); err != nil || !strings.Contains(md.String(), "| websocket Counters |") {
		t.Errorf("markdown summary lacks the protocol rows (err %v):\n%s", err, md.String())
	}
	if err := s.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back struct {
		Protocol struct {
			Counters map[string]int64 `json:"counters"`
			Timings  map[string]struct {
				Max float64 `json:"max_ms"`
			} `json:"timings"`
		} `json:"protocol"`
	}
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || back.Protocol.Counters["messages_sent"] != 5 || back.Protocol.Timings["connect"].Max < 4.9 {
		t.Errorf("json protocol = %+v (err %v)", back.Protocol, err)
	}
}

// The resource use of the system under test has its rows in the text
// summary and its list in the JSON one.
func TestSummarySUT(t *testing.T) {
	t.Parallel()
	var rs load.Resources
	t0 := time.Unix(0, 0)
	for i := range 4 {
		rs.Observe(load.ResourceSample{Target: "api", Time: t0.Add(time.Duration(i) * time.Second), Interval: 900 * time.Millisecond,
			CPUCores: float64(i) / 4, CPULimitCores: 1, MemBytes: uint64(i+1) << 20, MemLimitBytes: 64 << 20})
	}
	s := Of(&load.Result{Elapsed: 4 * time.Second, SUT: rs.Summaries()}, nil)
	var text, js bytes.Buffer
	if err := s.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "SUT api CPU peak / mean") || !strings.Contains(text.String(), "4 readings covering 3.6 s of the run's 4.0 s") ||
		!strings.Contains(text.String(), "0.75 / 0.38 cores (75.00% / 37.50% of 1.00)") || !strings.Contains(text.String(), "4.0 MiB / 2.5 MiB (limit 64.0 MiB)") {
		t.Errorf("text summary lacks the SUT rows:\n%s", text.String())
	}
	if err := s.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back Summary
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || len(back.SUT) != 1 || back.SUT[0].CPUCoresMax != 0.75 {
		t.Errorf("JSON summary SUT = %+v, %v", back.SUT, err)
	}
}

// The generator verdict of a stalled generator names the stall and the
// arrivals it skipped.
func TestGeneratorVerdictNamesTheStall(t *testing.T) {
	t.Parallel()
	var r load.Result
	r.Merge(&load.Result{Stats: load.Stats{Requests: 100, Stalled: 30}, Dropped: 30, DroppedBy: map[string]int64{"stalled": 30}})
	r.Merge(&load.Result{Stats: load.Stats{Requests: 50}})
	r.Finish()
	s := Of(&r, nil)
	if v := GeneratorVerdict(&s); !strings.Contains(v, "the generator stalled") || !strings.Contains(v, "30 overdue arrivals") {
		t.Errorf("generator verdict %q does not name the stall and its 30 skipped arrivals", v)
	}
}
