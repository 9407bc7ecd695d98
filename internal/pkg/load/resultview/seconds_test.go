package resultview

import (
	"testing"
	"time"

	"github.com/forgeload/forgeload/internal/pkg/load"
)

// TestLastPartialSecondIsNotAFall: a run of 3.5 s at 100 req/s ends on a
// half second with 50 requests and a drain second past its end with the 2
// requests that were in flight. The rate chart ends at 100 req/s on the
// half second and draws no drain second; before, it ended on 50 and then 2,
// a fall that never happened.
func TestLastPartialSecondIsNotAFall(t *testing.T) {
	t.Parallel()
	r := &load.Result{Start: time.Date(2026, 11, 27, 15, 0, 0, 0, time.UTC), Open: true, TargetRPS: 100}
	for sec := range 3 {
		r.AddSnapshot(sampleSnapshot(sec, []string{"home", "api"}))
	}
	r.AddSnapshot(snapshotOf(3, 100, 50))
	r.AddSnapshot(snapshotOf(4, 0, 2))
	r.Elapsed = 3500 * time.Millisecond
	r.Finish()
	var rate *Chart
	for _, c := range Build(r, nil).Charts {
		if c.ID == "rate" {
			rate = c
		}
	}
	if rate == nil {
		t.Fatal("no rate chart")
	}
	for _, s := range rate.Series {
		last := s.Points[len(s.Points)-1]
		if last.X != 3 || last.Y != 100 {
			t.Errorf("rate series %s ends at (%v, %v), want (3, 100): the half second per second, no drain second", s.Name, last.X, last.Y)
		}
	}
	// A live run (no elapsed yet) is drawn as measured.
	if got := chartSeconds(r.Seconds, 0); len(got) != len(r.Seconds) {
		t.Errorf("chartSeconds without elapsed kept %d of %d seconds", len(got), len(r.Seconds))
	}
}

// snapshotOf is second sec of one endpoint with n requests of 1 ms at the
// asked rate target.
func snapshotOf(sec int, target float64, n int) *load.Snapshot {
	s := &load.Snapshot{Second: sec, TargetRPS: target}
	es := load.EndpointStats{Name: "home"}
	es.Latency = load.NewHistogram()
	for range n {
		es.Latency.Record(time.Millisecond)
		es.Requests++
	}
	es.Status = map[int]int64{200: int64(n)}
	s.Endpoints = append(s.Endpoints, es)
	s.Stats.Merge(&es.Stats)
	return s
}

// TestDashboardHeadlineComparesLikeWithLike feeds the live dashboard a
// ramp run exactly on plan (10, 20, ... 50 req/s): the headline's asked
// rate is the plan's mean over the same seconds as the achieved rate, so
// both read 30 (it showed the current 50 against an achieved mean of 30),
// and the duration reads the elapsed of the planned time.
func TestDashboardHeadlineComparesLikeWithLike(t *testing.T) {
	t.Parallel()
	d := NewDashboard(nil)
	d.SetPlannedDuration(30 * time.Second)
	for sec := range 5 {
		d.Second(snapshotOf(sec, float64(10*(sec+1)), 10*(sec+1)))
	}
	d.mu.Lock()
	v := d.view()
	d.mu.Unlock()
	cards := map[string]Card{}
	for _, c := range v.Cards {
		cards[c.Key] = c
	}
	if a, p := cards["rps"], cards["target_rps"]; a.Raw != "30" || p.Raw != "30" || p.Label != "Planned rate so far" {
		t.Errorf("headline: achieved %s (%s), asked %s (%s); want both 30, the plan's mean so far", a.Raw, a.Label, p.Raw, p.Label)
	}
	if e := cards["elapsed_s"]; e.Value != "5 s of 30 s planned" {
		t.Errorf("duration card = %q, want %q", e.Value, "5 s of 30 s planned")
	}
}
