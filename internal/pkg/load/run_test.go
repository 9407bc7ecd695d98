package load

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// countingRequester counts calls and optionally sleeps (fake clock under
// synctest) before answering.
type countingRequester struct {
	n     atomic.Int64
	sleep time.Duration
	err   error
}

func (c *countingRequester) Do(ctx context.Context) error {
	c.n.Add(1)
	if c.sleep > 0 {
		t := time.NewTimer(c.sleep)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return c.err
}

func TestRunTotalExact(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		o    Options
	}{
		{"closed", Options{Concurrency: 7, Total: 1000}},
		{"open", Options{Concurrency: 4, Total: 500, Rate: 1000}},
		{"open poisson", Options{Concurrency: 4, Total: 300, Rate: 2000, Arrival: Poisson, Seed: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				req := &countingRequester{sleep: time.Millisecond}
				tc.o.Requester = req
				tc.o.MaxLateness = -1
				res, err := Run(t.Context(), tc.o)
				if err != nil {
					t.Fatal(err)
				}
				want := int64(tc.o.Total)
				if got := req.n.Load(); got != want {
					t.Errorf("requester calls = %d, want %d", got, want)
				}
				if res.Requests != want {
					t.Errorf("Result.Requests = %d, want %d", res.Requests, want)
				}
				if res.Latency.Count() != want {
					t.Errorf("histogram count = %d, want %d", res.Latency.Count(), want)
				}
			})
		})
	}
}

func TestRunRateAccuracyFakeClock(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		req := &countingRequester{sleep: 2 * time.Millisecond}
		res, err := Run(t.Context(), Options{Requester: req, Concurrency: 50, Rate: 5000, Duration: 3 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if res.Requests != 15000 {
			t.Errorf("requests = %d, want 15000", res.Requests)
		}
		if res.Dropped != 0 || res.GeneratorBound {
			t.Errorf("dropped = %d, generator-bound = %v; want none", res.Dropped, res.GeneratorBound)
		}
		if res.TargetRPS != 5000 {
			t.Errorf("target rps = %v, want 5000", res.TargetRPS)
		}
		// Latency is measured from the intended time: exactly the 2 ms sleep.
		if p := res.Quantile(0.99); p != 2*time.Millisecond {
			t.Errorf("p99 = %v, want 2ms", p)
		}
		for _, s := range res.Seconds[:3] {
			if s.Requests < 4990 || s.Requests > 5010 {
				t.Errorf("second %d: %d requests, want 5000±10", s.Second, s.Requests)
			}
		}
	})
}

func TestRunDropsWhenAllWorkersBusy(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		// One worker, an arrival every 10 ms, requests taking 25 ms: of each
		// 3 arrivals (30 ms) one is sent and two find the worker busy.
		req := &countingRequester{sleep: 25 * time.Millisecond}
		res, err := Run(t.Context(), Options{Requester: req, Concurrency: 1, Rate: 100, Total: 300, MaxLateness: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if res.Requests+res.Dropped != 300 {
			t.Errorf("requests %d + dropped %d != 300", res.Requests, res.Dropped)
		}
		if res.Requests != 100 || res.Dropped != 200 {
			t.Errorf("requests = %d, dropped = %d; want 100 and 200", res.Requests, res.Dropped)
		}
		if !res.GeneratorBound {
			t.Error("GeneratorBound = false, want true")
		}
	})
}

func TestRunCoordinatedOmissionFakeClock(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		// The target stalls for 1 s every 5 s; at 1000 req/s over 50
		// workers, arrivals during the stall wait for a worker and their
		// latency, measured from the intended time, includes the wait.
		start := time.Now()
		req := RequesterFunc(func(ctx context.Context) error {
			// Stalls at [3s, 4s) and [8s, 9s), so both drain before the end.
			el := (time.Since(start) + time.Second) % (5 * time.Second)
			d := time.Millisecond
			if el >= 4*time.Second {
				d = 5*time.Second - el + time.Millisecond
			}
			time.Sleep(d)
			return nil
		})
		res, err := Run(t.Context(), Options{Requester: req, Concurrency: 50, Rate: 1000, Duration: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		within := func(name string, got, want time.Duration) {
			t.Helper()
			if got < want*95/100 || got > want*105/100 {
				t.Errorf("%s = %v, want %v ±5%%", name, got, want)
			}
		}
		within("p90", res.Quantile(0.90), 500*time.Millisecond)
		within("p99", res.Quantile(0.99), 950*time.Millisecond)
		within("p99.9", res.Quantile(0.999), 995*time.Millisecond)
		if res.Dropped != 0 || res.Late == 0 || !res.GeneratorBound {
			t.Errorf("dropped = %d late = %d bound = %v; want 0, >0, true", res.Dropped, res.Late, res.GeneratorBound)
		}
	})
}

func TestRunTwoPhaseStop(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		// Requests take 3 s; the context is cancelled at 1 s; with a 500 ms
		// grace, in-flight requests are cancelled at 1.5 s.
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		req := &countingRequester{sleep: 3 * time.Second}
		start := time.Now()
		res, err := Run(ctx, Options{Requester: req, Concurrency: 3, Grace: 500 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if el := time.Since(start); el != 1500*time.Millisecond {
			t.Errorf("run took %v, want 1.5s", el)
		}
		if !res.Interrupted {
			t.Error("Interrupted = false, want true")
		}
		if res.Requests != 3 || res.Classes["canceled"] != 3 {
			t.Errorf("requests = %d, classes = %v; want 3 canceled", res.Requests, res.Classes)
		}
		if req.n.Load() != 3 {
			t.Errorf("calls = %d, want 3 (no new iterations after stop)", req.n.Load())
		}
	})
}

func TestRunGraceLetsInFlightFinish(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		req := &countingRequester{sleep: 300 * time.Millisecond}
		res, err := Run(t.Context(), Options{Requester: req, Concurrency: 4, Rate: 10, Duration: time.Second, Grace: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if res.Requests != 10 || res.Errors != 0 {
			t.Errorf("requests = %d errors = %d, want 10 and 0", res.Requests, res.Errors)
		}
		// The drain after the plan's end does not dilute the achieved rate.
		if res.Elapsed != time.Second || res.RPS() != 10 {
			t.Errorf("elapsed = %v rps = %v, want 1s and 10", res.Elapsed, res.RPS())
		}
	})
}

func TestRunErrorCounting(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var n atomic.Int64
		req := RequesterFunc(func(ctx context.Context) error {
			switch n.Add(1) % 4 {
			case 0:
				return StatusError{Code: 503}
			case 1:
				return errors.New("boom")
			}
			return nil
		})
		res, err := Run(t.Context(), Options{Requester: req, Concurrency: 1, Total: 100})
		if err != nil {
			t.Fatal(err)
		}
		if res.Errors != 50 || res.Classes["http_5xx"] != 25 || res.Classes["other"] != 25 {
			t.Errorf("errors = %d classes = %v, want 50 = 25 http_5xx + 25 other", res.Errors, res.Classes)
		}
		if got := res.ErrorRate(); got != 0.5 {
			t.Errorf("ErrorRate = %v, want 0.5", got)
		}
	})
}

func TestRunVURamp(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var maxSeen atomic.Int64
		var inflight atomic.Int64
		req := RequesterFunc(func(ctx context.Context) error {
			v := inflight.Add(1)
			for {
				m := maxSeen.Load()
				if v <= m || maxSeen.CompareAndSwap(m, v) {
					break
				}
			}
			time.Sleep(10 * time.Millisecond)
			inflight.Add(-1)
			return nil
		})
		var seconds []*Snapshot
		res, err := Run(t.Context(), Options{
			Requester: req, VUs: 0, VUStages: []VUStage{{Duration: 2 * time.Second, Target: 10}, {Duration: 2 * time.Second, Target: 10}},
			Duration: 4 * time.Second, ScaleVUs: func(v int) int { return v / 2 },
			OnSecond: func(s *Snapshot) { seconds = append(seconds, s) },
		})
		if err != nil {
			t.Fatal(err)
		}
		if maxSeen.Load() != 5 {
			t.Errorf("max concurrent VUs = %d, want 5 (10 scaled by half)", maxSeen.Load())
		}
		if len(seconds) < 4 || seconds[0].Requests >= seconds[3].Requests {
			t.Errorf("ramp not visible in per-second requests: %d snapshots", len(seconds))
		}
		if res.Requests == 0 {
			t.Error("no requests")
		}
	})
}

func TestRunThinkTime(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		req := &countingRequester{}
		res, err := Run(t.Context(), Options{Requester: req, VUs: 2, ThinkTime: 100 * time.Millisecond, ThinkTimeMax: 300 * time.Millisecond, Duration: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		// Each VU does one request per 200 ms on average: about 100 in 10 s.
		if res.Requests < 80 || res.Requests > 120 {
			t.Errorf("requests = %d, want about 100", res.Requests)
		}
	})
}

func TestRunStartAtAndOnSecond(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		req := &countingRequester{}
		at := time.Now().Add(2 * time.Second)
		var got []int
		var sum int64
		res, err := Run(t.Context(), Options{Requester: req, Concurrency: 2, Rate: 100, Duration: 3 * time.Second, StartAt: at,
			OnSecond: func(s *Snapshot) { got = append(got, s.Second); sum += s.Requests }})
		if err != nil {
			t.Fatal(err)
		}
		if !res.Start.Equal(at) {
			t.Errorf("start = %v, want %v", res.Start, at)
		}
		if sum != res.Requests || res.Requests != 300 {
			t.Errorf("snapshots sum %d, result %d, want 300", sum, res.Requests)
		}
		if len(got) < 3 || got[0] != 0 || got[1] != 1 {
			t.Errorf("seconds = %v, want 0,1,2…", got)
		}
	})
}

func TestRunOffsetSkipsEarlierArrivals(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		req := &countingRequester{}
		res, err := Run(t.Context(), Options{Requester: req, Concurrency: 2, Rate: 100, Duration: 3 * time.Second, Offset: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if res.Requests != 100 {
			t.Errorf("requests = %d, want 100 (the last second only)", res.Requests)
		}
		if res.Elapsed != time.Second {
			t.Errorf("elapsed = %v, want 1s", res.Elapsed)
		}
	})
}

func TestValidate(t *testing.T) {
	t.Parallel()
	req := &countingRequester{}
	for _, tc := range []struct {
		name string
		o    Options
	}{
		{"no requester", Options{}},
		{"negative rate", Options{Requester: req, Rate: -1}},
		{"bad stage", Options{Requester: req, Stages: []Stage{{Duration: 0, From: 1, To: 2}}}},
		{"rate and vus", Options{Requester: req, Rate: 5, VUs: 3}},
		{"offset past end", Options{Requester: req, Rate: 5, Duration: time.Second, Offset: time.Second}},
	} {
		if err := tc.o.Validate(); err == nil {
			t.Errorf("%s: Validate() = nil, want an error", tc.name)
		}
	}
	if err := (&Options{Requester: req, Rate: 5}).Validate(); err != nil {
		t.Errorf("valid options: Validate() = %v", err)
	}
}

func TestRunStripedHostsFireTheSingleHostPlan(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const hosts = 3
		plan := Options{Concurrency: 4, Stages: []Stage{Ramp(0, 300, 2*time.Second)}, Rate: 150, Duration: 4 * time.Second, Total: 500, Arrival: Poisson, Seed: 9}
		single := plan
		single.Requester = &countingRequester{}
		want, err := Run(t.Context(), single)
		if err != nil {
			t.Fatal(err)
		}
		results := make([]*Result, hosts)
		done := make(chan struct{})
		for i := range hosts {
			o := plan
			o.Requester = &countingRequester{}
			o.Owns = func(k uint64) bool { return k%hosts == uint64(i) }
			go func() {
				defer func() { done <- struct{}{} }()
				results[i], _ = Run(t.Context(), o)
			}()
		}
		for range hosts {
			<-done
		}
		merged := &Result{}
		for _, r := range results {
			if r.Requests < want.Requests/hosts-1 || r.Requests > want.Requests/hosts+1 {
				t.Errorf("one host sent %d, want about %d", r.Requests, want.Requests/hosts)
			}
			merged.Merge(r)
		}
		if merged.Requests != want.Requests || want.Requests != 500 {
			t.Errorf("hosts together sent %d, single host %d, want 500", merged.Requests, want.Requests)
		}
		for i, s := range want.Seconds {
			if i < len(merged.Seconds) && merged.Seconds[i].Requests != s.Requests {
				t.Errorf("second %d: hosts together %d, single host %d", s.Second, merged.Seconds[i].Requests, s.Requests)
			}
		}
	})
}

func TestRunSendsBacklogDueBeforeTheEnd(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		// One worker, 100 arrivals in 1 s, 15 ms each: at the end a third
		// of the plan is still due; it is sent (late) in the grace period,
		// not dropped.
		req := &countingRequester{sleep: 15 * time.Millisecond}
		res, err := Run(t.Context(), Options{Requester: req, Concurrency: 1, Rate: 100, Duration: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if res.Requests != 100 || res.Dropped != 0 || res.Late == 0 {
			t.Errorf("requests = %d dropped = %d late = %d; want 100, 0, > 0", res.Requests, res.Dropped, res.Late)
		}
		// Short grace: what is still due when it expires is dropped.
		req = &countingRequester{sleep: 15 * time.Millisecond}
		res, err = Run(t.Context(), Options{Requester: req, Concurrency: 1, Rate: 100, Duration: time.Second, Grace: 100 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if res.Requests+res.Dropped != 100 || res.Dropped == 0 {
			t.Errorf("requests = %d dropped = %d; want some dropped, 100 in all", res.Requests, res.Dropped)
		}
	})
}
