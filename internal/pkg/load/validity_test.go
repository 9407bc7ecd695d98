package load

import (
	"context"
	"runtime"
	"strings"

	"testing"
	"testing/synctest"
	"time"
)

// TestOpenPoolGrowsToMaxConcurrency: at 200 req/s against a 50 ms target
// (fake clock) about 10 requests are in flight. With one worker to start
// and MaxConcurrency 100 the pool grows to what the load needs, every
// arrival is sent on time and the run is valid. Capped at one worker, the
// same run queues: its lateness is the workers' (queued), never the
// generator's, and it is INVALID for the full pool and the dropped
// arrivals.
func TestOpenPoolGrowsToMaxConcurrency(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		req := &countingRequester{sleep: 50 * time.Millisecond}
		res, err := Run(t.Context(), Options{Requester: req, Rate: 200, Duration: 5 * time.Second, MaxConcurrency: 100})
		if err != nil {
			t.Fatal(err)
		}
		if res.Requests != 1000 || res.Dropped != 0 || res.Late != 0 || len(res.Invalid) != 0 {
			t.Errorf("grown pool: requests %d, dropped %d, late %d, invalid %+v; want 1000 on time, valid", res.Requests, res.Dropped, res.Late, res.Invalid)
		}
		if res.Workers < 10 || res.Workers > 20 || res.MaxWorkers != 100 {
			t.Errorf("workers %d of %d, want about 11 of 100", res.Workers, res.MaxWorkers)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		req := &countingRequester{sleep: 50 * time.Millisecond}
		res, err := Run(t.Context(), Options{Requester: req, Rate: 200, Duration: 5 * time.Second, MaxLateness: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if res.Requests+res.Dropped != 1000 || res.Requests > 121 || res.DroppedBy["late"] == 0 {
			t.Errorf("one worker: requests %d, dropped %d by %v; want about 120 sent (6 s with the grace, at 50 ms), the rest dropped late", res.Requests, res.Dropped, res.DroppedBy)
		}
		if res.GeneratorLate != 0 || res.GeneratorBound || !res.WorkerBound || res.Queued == 0 {
			t.Errorf("one worker: generator late %d (bound %v), worker-bound %v, queued %d; want the lateness the workers'",
				res.GeneratorLate, res.GeneratorBound, res.WorkerBound, res.Queued)
		}
		reasons := map[string]bool{}
		for _, x := range res.Invalid {
			reasons[x.Reason] = true
		}
		if !reasons["achieved_rate"] || !reasons["max_concurrency"] || reasons["generator_bound"] {
			t.Errorf("invalid = %+v, want achieved_rate and max_concurrency, not generator_bound", res.Invalid)
		}
	})
}

// unsentAfter reports the requests after the first n unsent, as a driver
// whose feeder ran out does.
type unsentAfter struct {
	countingRequester
	sent int64
}

func (u *unsentAfter) DoSample(ctx context.Context, s *Sample) error {
	if u.n.Load() >= u.sent {
		s.Unsent = DropFeeder
		return context.Canceled
	}
	return u.Do(ctx)
}

// TestUnsentIsDroppedNotARequest: a request the driver reports unsent is a
// dropped arrival with its reason, in the per-second snapshots and the
// totals, not a request with an error; and once the requests' context is
// cancelled, nothing more is handed to the driver.
func TestUnsentIsDroppedNotARequest(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		req := &unsentAfter{sent: 3}
		var perSecond int64
		res, err := Run(t.Context(), Options{Requester: req, Rate: 10, Duration: 2 * time.Second,
			OnSecond: func(s *Snapshot) { perSecond += s.DroppedBy["feeder_exhausted"] }})
		if err != nil {
			t.Fatal(err)
		}
		if res.Requests != 3 || res.Errors != 0 || res.DroppedBy["feeder_exhausted"] != 17 || perSecond != 17 {
			t.Errorf("requests %d (errors %d), dropped by %v (per second %d); want 3 requests, 17 feeder_exhausted", res.Requests, res.Errors, res.DroppedBy, perSecond)
		}
	})
}

// TestLogFailuresSkipsUnsent: a request that never left is a dropped
// arrival, not a failed request, so log_errors does not log it; and a
// retry does not resend it.
func TestLogFailuresSkipsUnsent(t *testing.T) {
	t.Parallel()
	logged := 0
	u := &unsentAfter{sent: 0}
	r := Retry(LogFailures(u, func(*Sample, error) { logged++ }), RetryPolicy{Retries: 3})
	var s Sample
	if err := r.DoSample(t.Context(), &s); err == nil || s.Unsent != DropFeeder || s.Attempts != 1 || logged != 0 {
		t.Errorf("err %v, unsent %v, attempts %d, logged %d; want an unsent error, one attempt, nothing logged", err, s.Unsent, s.Attempts, logged)
	}
}

// TestMergedDropsJudgedAsOneHost: a multi-host merge carries its drops'
// reasons, and is judged by the same rules as one host: two arrivals
// dropped late make it INVALID, as on one host. Arrivals dropped while a
// share moved to another host (handover) alone do not, unless they take
// the achieved ratio under 99%.
func TestMergedDropsJudgedAsOneHost(t *testing.T) {
	t.Parallel()
	a := &Result{Open: true, Stats: Stats{Requests: 900}}
	b := &Result{Open: true, Stats: Stats{Requests: 894}, Dropped: 2, DroppedBy: map[string]int64{"late": 2}}
	a.Merge(b)
	a.Finish()
	if len(a.Invalid) != 1 || a.Invalid[0].Reason != "dropped" || !strings.Contains(a.Invalid[0].Detail, "late: 2") {
		t.Errorf("merged, 2 dropped late: invalid = %+v, want dropped naming late", a.Invalid)
	}
	// A handover's drops are no worker's fault, but they count in the
	// achieved ratio: 10% of the load never sent is INVALID.
	h := &Result{Open: true, Stats: Stats{Requests: 900}, Dropped: 100, DroppedBy: map[string]int64{"handover": 100}}
	h.Finish()
	if len(h.Invalid) != 1 || h.Invalid[0].Reason != "achieved_rate" || h.WorkerBound {
		t.Errorf("100 of 1000 dropped in a handover: invalid = %+v, worker-bound %v; want achieved_rate, not worker-bound", h.Invalid, h.WorkerBound)
	}
	// A few alone are set aside; beside any other drop they are named.
	h = &Result{Open: true, Stats: Stats{Requests: 995}, Dropped: 5, DroppedBy: map[string]int64{"handover": 5}}
	h.Finish()
	if len(h.Invalid) != 0 {
		t.Errorf("5 of 1000 dropped in a handover: invalid = %+v, want valid", h.Invalid)
	}
	h = &Result{Open: true, Stats: Stats{Requests: 995}, Dropped: 6, DroppedBy: map[string]int64{"handover": 5, "stop": 1}}
	h.Finish()
	if len(h.Invalid) != 1 || h.Invalid[0].Reason != "dropped" || !strings.Contains(h.Invalid[0].Detail, "handover: 5, stop: 1") {
		t.Errorf("1 dropped at the stop beside a handover: invalid = %+v, want dropped naming both", h.Invalid)
	}
}

// TestHandoverDropsDoNotInvalidate: a share taken over at plan time 1 s
// whose engine starts a second later counts the second it missed as
// dropped in the handover, which the summary reports; the few drops of a
// quick takeover alone do not make a run invalid, but a handover that
// cost over 1% of the load does (achieved_rate).
func TestHandoverDropsDoNotInvalidate(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		res, err := Run(t.Context(), Options{Requester: &countingRequester{}, Concurrency: 4, Rate: 100, Duration: 3 * time.Second,
			StartAt: time.Now().Add(-time.Second), Offset: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if res.DroppedBy["handover"] != 100 {
			t.Fatalf("dropped by %v: want 100 dropped in the handover", res.DroppedBy)
		}
		if !strings.Contains(fmtCounts(res.DroppedBy), "handover: 100") {
			t.Errorf("drops %v, want the handover reported", res.DroppedBy)
		}
		// A third of this share was never sent: a handover is no excuse
		// for a run that did not deliver its load.
		if len(res.Invalid) != 1 || res.Invalid[0].Reason != "achieved_rate" || !strings.Contains(res.Invalid[0].Detail, "handover: 100") {
			t.Errorf("invalid %+v, want achieved_rate naming the handover", res.Invalid)
		}
		// The few arrivals of a quick takeover alone do not invalidate.
		few := &Result{Open: true, Stats: Stats{Requests: 995}, Dropped: 5, DroppedBy: map[string]int64{"handover": 5}}
		if inv := few.Validity(); len(inv) != 0 {
			t.Errorf("5 handover drops of 1000: invalid %+v, want valid", inv)
		}
		few.Requests = 985
		few.Dropped, few.DroppedBy["handover"] = 15, 15
		if inv := few.Validity(); len(inv) != 1 || inv[0].Reason != "achieved_rate" {
			t.Errorf("15 handover drops of 1000: invalid %+v, want achieved_rate (98.5%% sent)", inv)
		}
	})
}

// cpuRequester spends its CPU time on each request: a generator whose
// requests wait for its own CPU, not for the target.
type cpuRequester struct{ spin time.Duration }

func (c cpuRequester) DoSample(ctx context.Context, _ *Sample) error { return c.Do(ctx) }

func (c cpuRequester) Do(context.Context) error {
	for start := time.Now(); time.Since(start) < c.spin; {
	}
	return nil
}

// TestOpenPoolDoesNotGrowOnABusyCPU: when the requests wait for the
// generator's own CPU (here each spends 1 ms of it, at twice the rate the
// process's CPUs can serve), every worker is in a request and arrivals are
// late, but more workers would only share the same CPU: the pool stays
// small, and the lateness is the generator's, not queued for workers. The
// old rule grew the pool (to 58 workers in a run here).
func TestOpenPoolDoesNotGrowOnABusyCPU(t *testing.T) {
	rate := 2000 * float64(runtime.GOMAXPROCS(0))
	res, err := Run(t.Context(), Options{Requester: cpuRequester{spin: time.Millisecond}, Rate: rate,
		Duration: 300 * time.Millisecond, MaxConcurrency: 400})
	if err != nil {
		t.Fatal(err)
	}
	if res.Workers > 25 {
		t.Errorf("workers = %d of %d, want the pool held small: the CPU, not the target, was behind", res.Workers, res.MaxWorkers)
	}
	// The first millisecond, before the CPU is measured, may queue a few.
	if res.Queued*20 > res.Requests || res.GeneratorLate == 0 {
		t.Errorf("queued %d of %d, generator late %d; want the lateness the generator's", res.Queued, res.Requests, res.GeneratorLate)
	}
}
