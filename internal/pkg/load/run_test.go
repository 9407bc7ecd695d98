package load

import (
	"context"
	"errors"
	"fmt"
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

func (c *countingRequester) DoSample(ctx context.Context, _ *Sample) error { return c.Do(ctx) }

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
		if !res.WorkerBound || res.GeneratorBound {
			t.Errorf("worker-bound = %v, generator-bound = %v; want true, false (the one worker was busy)", res.WorkerBound, res.GeneratorBound)
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
		// Every late arrival waited for a worker while all 50 were stuck
		// in the stall: the target bound the run, not the generator.
		if res.Dropped != 0 || res.Late == 0 || res.Queued != res.Late {
			t.Errorf("dropped = %d late = %d queued = %d; want 0, >0, all late queued", res.Dropped, res.Late, res.Queued)
		}
		if !res.WorkerBound || res.GeneratorBound {
			t.Errorf("worker-bound = %v, generator-bound = %v; want true, false", res.WorkerBound, res.GeneratorBound)
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

// TestRunLateMidPlanStartDropsInsteadOfBursting: a share taken over at plan
// time 1 s whose engine only starts a second later (its setup or its host
// stalled) starts where the plan is then. The second it missed is counted as
// dropped, not sent at once beside the new owner's regular load.
func TestRunLateMidPlanStartDropsInsteadOfBursting(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		req := &countingRequester{}
		res, err := Run(t.Context(), Options{Requester: req, Concurrency: 4, Rate: 100, Duration: 3 * time.Second,
			StartAt: time.Now().Add(-time.Second), Offset: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if res.Requests != 100 || res.Dropped != 100 {
			t.Errorf("requests = %d, dropped = %d; want 100 sent (plan 2s to 3s) and 100 dropped (the stalled second)", res.Requests, res.Dropped)
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
		{"too many users", Options{Requester: req, Concurrency: 10_000_000}},
	} {
		if err := tc.o.Validate(); err == nil {
			t.Errorf("%s: Validate() = nil, want an error", tc.name)
		}
	}
	for _, o := range []Options{
		{Requester: req, Rate: 5},
		{Requester: req, Rate: 5, Concurrency: 10_000_000},   // workers start as needed
		{Requester: req, Total: 10, Concurrency: 10_000_000}, // only 10 users can ever send
	} {
		if err := o.Validate(); err != nil {
			t.Errorf("valid options: Validate() = %v", err)
		}
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

// TestRunAbsurdRateEnds runs 1e12 req/s for 200 ms on the real clock: the
// arrivals that were never sent are counted, not walked one by one (which
// took minutes and ignored Ctrl-C).
func TestRunAbsurdRateEnds(t *testing.T) {
	t.Parallel()
	for _, model := range []ArrivalModel{Uniform, Poisson} {
		t.Run(model.String(), func(t *testing.T) {
			t.Parallel()
			absurdRateEnds(t, model)
		})
	}
}

func absurdRateEnds(t *testing.T, model ArrivalModel) {
	done := make(chan *Result, 1)
	go func() {
		req := &countingRequester{sleep: time.Millisecond}
		res, err := Run(t.Context(), Options{Requester: req, Concurrency: 2, Rate: 1e12, Arrival: model, Duration: 200 * time.Millisecond})
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	// Generous: the run takes about 1.2 s (plan and grace); before the
	// fix it took about 30 minutes.
	timer := time.NewTimer(time.Minute)
	select {
	case res := <-done:
		timer.Stop()
		if total := float64(res.Requests + res.Dropped); total < 1e11 {
			t.Errorf("%v: requests %d + dropped %d, want about 2e11 arrivals accounted for", model, res.Requests, res.Dropped)
		}
	case <-timer.C:
		t.Fatalf("%v: a 200 ms run at 1e12 req/s has not ended after a minute", model)
	}
}

// TestRunInterruptCapsGrace checks that a run stopped by its context
// cancels in-flight requests after MaxInterruptGrace even with a long
// configured grace.
func TestRunInterruptCapsGrace(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		req := &countingRequester{sleep: time.Minute}
		start := time.Now()
		res, err := Run(ctx, Options{Requester: req, Concurrency: 2, Rate: 10, Grace: 30 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if el := time.Since(start); el != time.Second+MaxInterruptGrace {
			t.Errorf("run took %v, want %v", el, time.Second+MaxInterruptGrace)
		}
		if !res.Interrupted {
			t.Error("Interrupted = false, want true")
		}
	})
}

// TestRunTotalBoundRate checks the achieved rate of a run that Total ends:
// N arrivals at rate r span N/r seconds, so 5 requests at 10 req/s are 10
// req/s (they were reported as 12.5, i.e. N·r/(N-1)), in the result and in
// the last progress line.
func TestRunTotalBoundRate(t *testing.T) {
	t.Parallel()
	for _, model := range []ArrivalModel{Uniform, Poisson} {
		synctest.Test(t, func(t *testing.T) {
			req := &countingRequester{sleep: time.Millisecond}
			var last Progress
			res, err := Run(t.Context(), Options{Requester: req, Concurrency: 2, Rate: 10, Total: 5, Arrival: model, Seed: 9,
				ProgressInterval: time.Second, Progress: func(p Progress) { last = p }})
			if err != nil {
				t.Fatal(err)
			}
			if res.Requests != 5 {
				t.Fatalf("%v: requests = %d, want 5", model, res.Requests)
			}
			if model == Uniform {
				if res.Elapsed != 500*time.Millisecond || res.RPS() != 10 || last.RPS != 10 {
					t.Errorf("elapsed = %v, rps = %v, progress rps = %v; want 500ms, 10, 10", res.Elapsed, res.RPS(), last.RPS)
				}
			} else if res.RPS() != last.RPS || res.Elapsed <= 400*time.Millisecond {
				// The last slot ends at the sixth Poisson arrival, after the fifth.
				t.Errorf("poisson: elapsed = %v, rps = %v, progress rps = %v; want the run to cover the fifth arrival's slot", res.Elapsed, res.RPS(), last.RPS)
			}
			if res.TargetRPS != 10 {
				t.Errorf("%v: target = %v, want 10", model, res.TargetRPS)
			}
		})
	}
}

// TestRunLeaseStopsEverySend: while Options.Lease says no (from 1 s to
// 2 s), nothing is sent, in either model, and sending resumes when it says
// yes again; the open model counts the refused arrivals as dropped.
func TestRunLeaseStopsEverySend(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		o    Options
		want int64
	}{
		// Arrivals every 1 ms; those from 1 s to 1.999 s are refused.
		{"open", Options{Concurrency: 4, Rate: 1000, Duration: 3 * time.Second}, 2000},
		// Three users, one request every 10 ms each, except from 1 s to 2 s.
		{"closed", Options{Concurrency: 3, Duration: 2995 * time.Millisecond, ThinkTime: 9 * time.Millisecond}, 600},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				req := &countingRequester{sleep: time.Millisecond}
				start := time.Now()
				tc.o.Requester = req
				tc.o.Lease = func() bool { d := time.Since(start); return d < time.Second || d >= 2*time.Second }
				res, err := Run(t.Context(), tc.o)
				if err != nil {
					t.Fatal(err)
				}
				if got := req.n.Load(); got != tc.want {
					t.Errorf("requests sent = %d, want %d (none while the lease was out)", got, tc.want)
				}
				if tc.o.Rate > 0 && res.Dropped != 1000 {
					t.Errorf("dropped = %d, want the 1000 arrivals refused by the lease counted", res.Dropped)
				}
			})
		})
	}
}

// TestRunStartsWorkersLazily runs 10 requests with a concurrency of ten
// million, and a longer open run with a max concurrency of ten million:
// the open model starts no more workers than Total, and past its starting
// pool starts them as the load needs them; the closed model starts no
// more than Total; so the run costs what its requests cost (it took 30 s
// and 4.5 GB).
func TestRunStartsWorkersLazily(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		o    Options
		max  int64
	}{
		{"open", Options{Concurrency: 10_000_000, Rate: 1000, Total: 10}, 10},
		{"open long", Options{MaxConcurrency: 10_000_000, Rate: 1000, Duration: 2 * time.Second}, 3},
		{"closed", Options{Concurrency: 10_000_000, Total: 10}, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				req := &countingRequester{sleep: time.Millisecond}
				tc.o.Requester = req
				e := newEngine(&tc.o)
				res := e.run(t.Context())
				if want := int64(tc.o.Total); want > 0 && res.Requests != want {
					t.Errorf("requests = %d, want %d", res.Requests, want)
				}
				if got := e.started.Load(); got > tc.max {
					t.Errorf("started %d workers, want at most %d", got, tc.max)
				}
				if res.WorkerBound || res.Late > 0 {
					t.Errorf("late = %d, worker-bound = %v; want none", res.Late, res.WorkerBound)
				}
			})
		})
	}
}

// TestOpenPoolStartsWithConcurrency: under a rate, concurrency is the
// starting pool (issue 31): a run with concurrency 8 starts 8 workers,
// though a no-op target never keeps one busy enough for the pool to grow
// (before, the pool started with one and stayed there).
func TestOpenPoolStartsWithConcurrency(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		res, err := Run(t.Context(), Options{Requester: noop{}, Concurrency: 8, MaxConcurrency: 20, Rate: 100, Duration: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if res.Workers < 8 || res.MaxWorkers != 20 || res.Requests != 100 {
			t.Errorf("workers %d of %d, %d requests; want at least 8 of 20, 100", res.Workers, res.MaxWorkers, res.Requests)
		}
	})
}

// TestSleepUntilIsPrecise checks, on the real clock, that a worker waiting
// for an arrival never sends it early, however the wait is split between
// its timer and the kernel sleep. (How late it wakes depends on the
// machine, so it is measured in docs/benchmarks.md, not asserted here.)
func TestSleepUntilIsPrecise(t *testing.T) {
	t.Parallel()
	e := newEngine(&Options{Requester: noop{}, Rate: 1})
	e.precise = time.Millisecond
	defer e.begin(t.Context())()
	w := e.newWorker(0)
	for _, d := range []time.Duration{0, 300 * time.Microsecond, time.Millisecond, 1700 * time.Microsecond, 5 * time.Millisecond} {
		intended := time.Now().Add(d)
		if !e.sleepUntil(w, intended) {
			t.Fatalf("sleepUntil(+%v) = false without a stop", d)
		}
		if early := time.Until(intended); early > 0 {
			t.Errorf("sleepUntil(+%v) returned %v early", d, early)
		}
	}
	// A stop during the wait ends it, and an arrival that was not yet due
	// is not counted as dropped.
	e.closeStop()
	if e.sleepUntil(w, time.Now().Add(time.Hour)) || e.dropped.Load() != 0 {
		t.Errorf("after the stop: sleepUntil = true or dropped = %d; want false, 0", e.dropped.Load())
	}
}

// stubbornRequester holds every request for d, ignoring its context: a
// driver bug the engine must not wait out.
type stubbornRequester struct{ d time.Duration }

func (s stubbornRequester) DoSample(context.Context, *Sample) error { time.Sleep(s.d); return nil }
func (s stubbornRequester) Do(context.Context) error                { time.Sleep(s.d); return nil }

// TestRunCancelDuringDrainStops checks that a cancel while in-flight
// requests drain after the plan's end stops the run within
// MaxInterruptGrace, whatever the grace says. Before, the drain watched
// no cancel: a job with graceful_shutdown 1h against a target that never
// answered ignored the forge's cancel and signals until its requests
// timed out.
func TestRunCancelDuringDrainStops(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 1500*time.Millisecond)
		defer cancel()
		req := &countingRequester{sleep: 10 * time.Minute}
		start := time.Now()
		res, err := Run(ctx, Options{Requester: req, Concurrency: 2, Rate: 10, Duration: time.Second, Grace: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		if el, want := time.Since(start), 1500*time.Millisecond+MaxInterruptGrace; el != want {
			t.Errorf("run took %v, want %v (cancelled at 1.5s, in the drain)", el, want)
		}
		if !res.Interrupted || res.Classes["canceled"] != 2 {
			t.Errorf("interrupted = %v, classes = %v; want true and 2 canceled", res.Interrupted, res.Classes)
		}
	})
}

// TestRunDeadlineCutsGrace checks that Options.Deadline ends the drain
// whatever the grace says (the runner's load.max_duration).
func TestRunDeadlineCutsGrace(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		req := &countingRequester{sleep: 10 * time.Minute}
		start := time.Now()
		res, err := Run(t.Context(), Options{Requester: req, Concurrency: 2, Rate: 10, Duration: time.Second, Grace: time.Hour, Deadline: 1500 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if el := time.Since(start); el != 1500*time.Millisecond {
			t.Errorf("run took %v, want 1.5s (the deadline)", el)
		}
		if res.Classes["canceled"] != 2 {
			t.Errorf("classes = %v, want 2 canceled", res.Classes)
		}
		// A deadline before the plan's end stops the plan there.
		start = time.Now()
		if _, err := Run(t.Context(), Options{Requester: req, Concurrency: 2, Rate: 10, Duration: time.Hour, Deadline: time.Second}); err != nil {
			t.Fatal(err)
		}
		if el := time.Since(start); el != time.Second {
			t.Errorf("run with a 1h duration took %v, want 1s (the deadline)", el)
		}
	})
}

// TestRunBoundsWaitForStubbornRequests checks that a requester that
// ignores its cancelled context holds Run for at most MaxCancelWait.
func TestRunBoundsWaitForStubbornRequests(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		start := time.Now()
		res, err := Run(ctx, Options{Requester: stubbornRequester{10 * time.Minute}, Concurrency: 2, Rate: 10, Grace: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		if el, want := time.Since(start), time.Second+MaxInterruptGrace+MaxCancelWait; el != want {
			t.Errorf("run took %v, want %v", el, want)
		}
		if !res.Interrupted {
			t.Error("Interrupted = false, want true")
		}
		// The abandoned workers end when their calls return (fake time).
		time.Sleep(10 * time.Minute)
		synctest.Wait()
	})
}

// TestRecorderMemoryFollowsEndpoints: a run's recorder shards hold at most
// maxRecorderHists latency histograms (about 140 KB each) whatever its
// endpoints and concurrency, and none before an endpoint's first request.
// Before, every shard held one per endpoint from the start: 10,000
// endpoints took the daemon out of memory.
func TestRecorderMemoryFollowsEndpoints(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, 10, 1000, 10_000} {
		names := make([]string, n)
		for i := range names {
			names[i] = fmt.Sprint("e", i)
		}
		e := newEngine(&Options{Requester: &countingRequester{}, Endpoints: names, Concurrency: 10_000})
		if slots := len(e.recs) * n; slots > max(maxRecorderHists, n) {
			t.Errorf("%d endpoints: %d shards hold %d histogram slots, want at most %d", n, len(e.recs), slots, max(maxRecorderHists, n))
		}
		for _, r := range e.recs {
			for j := range r.eps {
				if r.eps[j].hist != nil {
					t.Fatalf("%d endpoints: a histogram exists before any request", n)
				}
			}
		}
		w := e.newWorker(0)
		w.record(n-1, time.Millisecond, &Sample{Endpoint: n - 1}, nil, onTime)
		s := e.snapshot(0, new(dropMarks))
		for j, ep := range s.Endpoints {
			if (ep.Latency != nil) != (j == n-1) {
				t.Fatalf("%d endpoints: snapshot endpoint %d has histogram %v, want one only for the endpoint that had a request", n, j, ep.Latency != nil)
			}
		}
		if s.Requests != 1 || s.Latency.Count() != 1 {
			t.Errorf("%d endpoints: snapshot has %d requests, %d samples, want 1", n, s.Requests, s.Latency.Count())
		}
	}
}

// TestRunCountsInFlightOverShards: each recorder shard counts its own
// workers' requests in flight, and a second's snapshot adds them all up.
func TestRunCountsInFlightOverShards(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		req := &countingRequester{sleep: 1500 * time.Millisecond}
		var first atomic.Int64
		first.Store(-1)
		o := Options{Requester: req, Concurrency: 10, Duration: 2 * time.Second, Grace: time.Second,
			OnSecond: func(s *Snapshot) { first.CompareAndSwap(-1, int64(s.InFlight)) }}
		if _, err := Run(t.Context(), o); err != nil {
			t.Fatal(err)
		}
		if got := first.Load(); got != 10 {
			t.Errorf("in flight at the end of second 0 = %d, want all 10 workers", got)
		}
	})
}
