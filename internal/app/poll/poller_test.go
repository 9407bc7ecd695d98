package poll

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"connectrpc.com/connect"
	runnerv1 "gitea.dev/actions-proto-go/runner/v1"
	"github.com/sirupsen/logrus"
)

// fakeFetcher is a hand-written Fetcher. respond decides each answer; call
// counts from 0. It records the tasks_version of every request, the time of
// every call and the most calls ever in flight at once.
type fakeFetcher struct {
	respond func(ctx context.Context, call int) (*runnerv1.FetchTaskResponse, error)

	mu          sync.Mutex
	versions    []int64
	times       []time.Time
	inflight    int
	maxInflight int
}

func (f *fakeFetcher) FetchTask(ctx context.Context, req *connect.Request[runnerv1.FetchTaskRequest]) (*connect.Response[runnerv1.FetchTaskResponse], error) {
	f.mu.Lock()
	call := len(f.versions)
	f.versions = append(f.versions, req.Msg.GetTasksVersion())
	f.times = append(f.times, time.Now())
	f.inflight++
	f.maxInflight = max(f.maxInflight, f.inflight)
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.inflight--
		f.mu.Unlock()
	}()
	msg, err := f.respond(ctx, call)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(msg), nil
}

func (f *fakeFetcher) calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.versions)
}

func (f *fakeFetcher) gaps() []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	var g []time.Duration
	for i := 1; i < len(f.times); i++ {
		g = append(g, f.times[i].Sub(f.times[i-1]))
	}
	return g
}

func empty(version int64) (*runnerv1.FetchTaskResponse, error) {
	return &runnerv1.FetchTaskResponse{TasksVersion: version}, nil
}

func withTask(id, version int64) (*runnerv1.FetchTaskResponse, error) {
	return &runnerv1.FetchTaskResponse{Task: &runnerv1.Task{Id: id}, TasksVersion: version}, nil
}

// runnerFunc adapts a function to TaskRunner.
type runnerFunc func(ctx context.Context, task *runnerv1.Task) error

func (f runnerFunc) Run(ctx context.Context, task *runnerv1.Task) error { return f(ctx, task) }

func noopRunner() TaskRunner {
	return runnerFunc(func(context.Context, *runnerv1.Task) error { return nil })
}

// fakeObserver records every Observer call.
type fakeObserver struct {
	mu       sync.Mutex
	results  []string
	backoffs []time.Duration
	running  []int
}

func (o *fakeObserver) FetchDone(result string, _ time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.results = append(o.results, result)
}

func (o *fakeObserver) Backoff(d time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.backoffs = append(o.backoffs, d)
}

func (o *fakeObserver) Running(n int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.running = append(o.running, n)
}

func (o *fakeObserver) snapshot() fakeObserver {
	o.mu.Lock()
	defer o.mu.Unlock()
	return fakeObserver{
		results:  slices.Clone(o.results),
		backoffs: slices.Clone(o.backoffs),
		running:  slices.Clone(o.running),
	}
}

var (
	_ Fetcher    = (*fakeFetcher)(nil)
	_ TaskRunner = runnerFunc(nil)
	_ Observer   = (*fakeObserver)(nil)
)

// start runs p.Run in a goroutine and returns its result channel.
func start(p *Poller) <-chan error {
	errc := make(chan error, 1)
	go func() { errc <- p.Run(context.Background()) }()
	return errc
}

// stop shuts p down (cancelling tasks at once) and checks Run returned nil.
func stop(t *testing.T, p *Poller, errc <-chan error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = p.Shutdown(ctx)
	if err := <-errc; err != nil {
		t.Errorf("Run() = %v, want nil after Shutdown", err)
	}
}

// half makes the jitter factor exactly 1.
func half() float64 { return 0.5 }

func TestBackoffSequenceThroughLoop(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := &fakeFetcher{respond: func(context.Context, int) (*runnerv1.FetchTaskResponse, error) { return empty(1) }}
		obs := &fakeObserver{}
		p := New(f, noopRunner(), Options{FetchInterval: 2 * time.Second, FetchIntervalMax: 60 * time.Second, Rand: half, Observer: obs})
		errc := start(p)
		// Calls at 0, 2, 6, 14, 30, 62, 122, 182, 242 s.
		time.Sleep(242*time.Second + time.Second)
		stop(t, p, errc)

		s := time.Second
		want := []time.Duration{2 * s, 4 * s, 8 * s, 16 * s, 32 * s, 60 * s, 60 * s, 60 * s}
		if got := f.gaps(); !slices.Equal(got, want) {
			t.Errorf("gaps between FetchTask calls = %v, want %v", got, want)
		}
		o := obs.snapshot()
		if !slices.Equal(o.backoffs[:len(want)], want) {
			t.Errorf("Observer.Backoff calls = %v, want %v first", o.backoffs, want)
		}
		for i, r := range o.results {
			if r != ResultEmpty {
				t.Errorf("FetchDone result %d = %q, want %q", i, r, ResultEmpty)
			}
		}
	})
}

func TestBackoffJitterThroughLoop(t *testing.T) {
	t.Parallel()
	s := time.Second
	nominal := []time.Duration{2 * s, 4 * s, 8 * s, 16 * s, 20 * s, 20 * s}
	tests := []struct {
		name   string
		rand   func() float64
		lo, hi float64 // bounds of gap/nominal
	}{
		{"lowest draw waits 0.8x", func() float64 { return 0 }, 0.8, 0.8},
		{"highest draw waits just under 1.2x", func() float64 { return 1 - 1e-12 }, 1.2 - 1e-9, 1.2},
		{"default source stays within ±20%", nil, 0.8, 1.2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				f := &fakeFetcher{respond: func(context.Context, int) (*runnerv1.FetchTaskResponse, error) { return empty(1) }}
				p := New(f, noopRunner(), Options{FetchInterval: 2 * time.Second, FetchIntervalMax: 20 * time.Second, Rand: tt.rand})
				errc := start(p)
				time.Sleep(2 * time.Minute) // enough for len(nominal) gaps even at 1.2x
				stop(t, p, errc)
				gaps := f.gaps()
				if len(gaps) < len(nominal) {
					t.Fatalf("got %d gaps %v, want at least %d", len(gaps), gaps, len(nominal))
				}
				for i, want := range nominal {
					ratio := float64(gaps[i]) / float64(want)
					if ratio < tt.lo-1e-9 || ratio > tt.hi+1e-9 {
						t.Errorf("gap %d = %s (%.4fx of %s), want within [%.2fx, %.2fx]", i, gaps[i], ratio, want, tt.lo, tt.hi)
					}
				}
			})
		})
	}
}

func TestErrorsBackOffAndCountAsErrors(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := &fakeFetcher{respond: func(context.Context, int) (*runnerv1.FetchTaskResponse, error) {
			return nil, connect.NewError(connect.CodeUnavailable, errors.New("forge is down"))
		}}
		obs := &fakeObserver{}
		p := New(f, noopRunner(), Options{FetchInterval: time.Second, FetchIntervalMax: 4 * time.Second, Rand: half, Observer: obs})
		errc := start(p)
		time.Sleep(1*time.Second + 2*time.Second + 4*time.Second + 4*time.Second + time.Millisecond)
		stop(t, p, errc)
		s := time.Second
		if got, want := f.gaps(), []time.Duration{s, 2 * s, 4 * s, 4 * s}; !slices.Equal(got, want) {
			t.Errorf("gaps after errors = %v, want %v", got, want)
		}
		for i, r := range obs.snapshot().results {
			if r != ResultError {
				t.Errorf("FetchDone result %d = %q, want %q", i, r, ResultError)
			}
		}
	})
}

func TestDeadlineExceededCountsAsEmpty(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  func(ctx context.Context) error
	}{
		{"connect DeadlineExceeded", func(ctx context.Context) error {
			return connect.NewError(connect.CodeDeadlineExceeded, ctx.Err())
		}},
		{"bare context error", func(ctx context.Context) error { return ctx.Err() }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				// The forge holds every call open past our FetchTimeout.
				f := &fakeFetcher{respond: func(ctx context.Context, _ int) (*runnerv1.FetchTaskResponse, error) {
					<-ctx.Done()
					return nil, tt.err(ctx)
				}}
				obs := &fakeObserver{}
				p := New(f, noopRunner(), Options{
					FetchTimeout: 5 * time.Second, FetchInterval: time.Second, FetchIntervalMax: time.Second,
					ReadinessGrace: 10 * time.Second, Rand: half, Observer: obs,
				})
				errc := start(p)
				time.Sleep(time.Minute)
				if err := p.Ready(); err != nil {
					t.Errorf("Ready() = %v after a minute of long-poll timeouts, want nil", err)
				}
				stop(t, p, errc)
				o := obs.snapshot()
				if len(o.results) < 5 {
					t.Fatalf("got %d fetches, want at least 5", len(o.results))
				}
				for i, r := range o.results {
					if r != ResultEmpty {
						t.Errorf("FetchDone result %d = %q, want %q", i, r, ResultEmpty)
					}
				}
			})
		})
	}
}

func TestTasksVersion(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		script := []func() (*runnerv1.FetchTaskResponse, error){
			func() (*runnerv1.FetchTaskResponse, error) { return empty(5) },       // keep 5
			func() (*runnerv1.FetchTaskResponse, error) { return empty(3) },       // smaller: keep 5
			func() (*runnerv1.FetchTaskResponse, error) { return withTask(1, 7) }, // task: reset to 0
			func() (*runnerv1.FetchTaskResponse, error) { return empty(6) },       // larger than 0: keep 6
			func() (*runnerv1.FetchTaskResponse, error) {
				return nil, connect.NewError(connect.CodeInternal, errors.New("boom"))
			},
			func() (*runnerv1.FetchTaskResponse, error) { return empty(6) }, // an error keeps 6
		}
		want := []int64{0, 5, 5, 0, 6, 6}
		f := &fakeFetcher{respond: func(_ context.Context, call int) (*runnerv1.FetchTaskResponse, error) {
			if call < len(script) {
				return script[call]()
			}
			return empty(6)
		}}
		p := New(f, noopRunner(), Options{Capacity: 2, Rand: half})
		errc := start(p)
		for f.calls() < len(want) {
			time.Sleep(time.Second)
		}
		stop(t, p, errc)
		f.mu.Lock()
		got := slices.Clone(f.versions[:len(want)])
		f.mu.Unlock()
		if !slices.Equal(got, want) {
			t.Errorf("tasks_version sent = %v, want %v", got, want)
		}
	})
}

func TestNeverTwoFetchesAtOnce(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		// Every call takes a while and returns a task; tasks are short, so
		// slots keep freeing up while a fetch is in flight.
		f := &fakeFetcher{respond: func(_ context.Context, call int) (*runnerv1.FetchTaskResponse, error) {
			time.Sleep(100 * time.Millisecond)
			return withTask(int64(call), 0)
		}}
		r := runnerFunc(func(context.Context, *runnerv1.Task) error {
			time.Sleep(50 * time.Millisecond)
			return nil
		})
		p := New(f, r, Options{Capacity: 4})
		errc := start(p)
		time.Sleep(10 * time.Second)
		stop(t, p, errc)
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.maxInflight != 1 {
			t.Errorf("most FetchTask calls in flight at once = %d, want 1", f.maxInflight)
		}
		if len(f.versions) < 50 {
			t.Errorf("FetchTask calls = %d, want at least 50 (the loop should poll at once after a task)", len(f.versions))
		}
	})
}

func TestCapacityBoundsAndOverlap(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const capacity = 3
		f := &fakeFetcher{respond: func(_ context.Context, call int) (*runnerv1.FetchTaskResponse, error) {
			return withTask(int64(call), 0)
		}}
		var inside, maxInside atomic.Int64
		release := make(chan struct{}) // each send ends one task
		r := runnerFunc(func(ctx context.Context, _ *runnerv1.Task) error {
			n := inside.Add(1)
			for {
				m := maxInside.Load()
				if n <= m || maxInside.CompareAndSwap(m, n) {
					break
				}
			}
			defer inside.Add(-1)
			select {
			case <-release:
			case <-ctx.Done():
			}
			return nil
		})
		obs := &fakeObserver{}
		p := New(f, r, Options{Capacity: capacity, Observer: obs})
		errc := start(p)

		synctest.Wait()
		if got := inside.Load(); got != capacity {
			t.Fatalf("tasks blocked inside Run at once = %d, want %d", got, capacity)
		}
		if got := f.calls(); got != capacity {
			t.Errorf("FetchTask calls with every slot busy = %d, want %d", got, capacity)
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		if got := f.calls(); got != capacity {
			t.Errorf("FetchTask calls after an hour with every slot busy = %d, want %d (no polling while full)", got, capacity)
		}

		release <- struct{}{} // one slot frees: exactly one more fetch, one more task
		synctest.Wait()
		if got := f.calls(); got != capacity+1 {
			t.Errorf("FetchTask calls after one task ended = %d, want %d", got, capacity+1)
		}
		if got := inside.Load(); got != capacity {
			t.Errorf("tasks inside Run after refill = %d, want %d", got, capacity)
		}

		stop(t, p, errc)
		if got := maxInside.Load(); got != capacity {
			t.Errorf("most tasks inside Run at once = %d, want %d", got, capacity)
		}
		o := obs.snapshot()
		if got := slices.Max(o.running); got != capacity {
			t.Errorf("largest Observer.Running = %d, want %d", got, capacity)
		}
		if got := o.running[len(o.running)-1]; got != 0 {
			t.Errorf("last Observer.Running = %d, want 0", got)
		}
	})
}

func TestShutdownGraceful(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := &fakeFetcher{respond: func(_ context.Context, call int) (*runnerv1.FetchTaskResponse, error) {
			if call == 0 {
				return withTask(1, 0)
			}
			return empty(1)
		}}
		finish := make(chan struct{})
		ctxErrAtEnd := make(chan error, 1)
		r := runnerFunc(func(ctx context.Context, _ *runnerv1.Task) error {
			<-finish
			ctxErrAtEnd <- ctx.Err()
			return nil
		})
		p := New(f, r, Options{Capacity: 2, Rand: half})
		errc := start(p)
		time.Sleep(10 * time.Second)
		callsBefore := f.calls()

		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		shutc := make(chan error, 1)
		go func() { shutc <- p.Shutdown(ctx) }()
		synctest.Wait()
		select {
		case err := <-errc:
			if err != nil {
				t.Errorf("Run() = %v, want nil once Shutdown stopped polling", err)
			}
		default:
			t.Fatal("Run did not return after Shutdown stopped polling")
		}
		select {
		case err := <-shutc:
			t.Fatalf("Shutdown() = %v before the running task finished, want it to wait", err)
		default:
		}
		time.Sleep(20 * time.Second)
		if got := f.calls(); got != callsBefore {
			t.Errorf("FetchTask calls after Shutdown = %d, want %d (polling stops at once)", got, callsBefore)
		}

		close(finish)
		if err := <-shutc; err != nil {
			t.Errorf("Shutdown() = %v, want nil after the task finished in time", err)
		}
		if err := <-ctxErrAtEnd; err != nil {
			t.Errorf("task context error at its end = %v, want nil (a graceful shutdown does not cancel)", err)
		}
	})
}

func TestShutdownCancelsInFlightFetch(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		fetchErr := make(chan error, 1)
		f := &fakeFetcher{respond: func(ctx context.Context, _ int) (*runnerv1.FetchTaskResponse, error) {
			<-ctx.Done()
			fetchErr <- ctx.Err()
			return nil, connect.NewError(connect.CodeCanceled, ctx.Err())
		}}
		obs := &fakeObserver{}
		p := New(f, noopRunner(), Options{FetchTimeout: time.Hour, Observer: obs})
		errc := start(p)
		synctest.Wait()
		t0 := time.Now()
		if err := p.Shutdown(context.Background()); err != nil {
			t.Errorf("Shutdown() = %v, want nil with no tasks", err)
		}
		if err := <-errc; err != nil {
			t.Errorf("Run() = %v, want nil", err)
		}
		if got := <-fetchErr; !errors.Is(got, context.Canceled) {
			t.Errorf("in-flight FetchTask ctx error = %v, want context.Canceled", got)
		}
		if d := time.Since(t0); d != 0 {
			t.Errorf("Shutdown took %s, want 0 (the in-flight fetch is cancelled, not waited for)", d)
		}
		if got := obs.snapshot().results; len(got) != 0 {
			t.Errorf("FetchDone results = %v, want none for a fetch cut short by Shutdown", got)
		}
	})
}

// finalReporter is a TaskRunner that blocks until its ctx is cancelled, then
// does its "final reporting" on a detached context for report, like the real
// runner does.
type finalReporter struct {
	report   time.Duration
	reported atomic.Bool
}

func (r *finalReporter) Run(ctx context.Context, _ *runnerv1.Task) error {
	<-ctx.Done()
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	select {
	case <-time.After(r.report):
		r.reported.Store(true)
	case <-rctx.Done():
	}
	return ctx.Err()
}

func oneTask(_ context.Context, call int) (*runnerv1.FetchTaskResponse, error) {
	if call == 0 {
		return withTask(1, 0)
	}
	return empty(0)
}

func TestShutdownDeadlineCancelsAndWaitsForFinalReport(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r := &finalReporter{report: 5 * time.Second}
		p := New(&fakeFetcher{respond: oneTask}, r, Options{})
		errc := start(p)
		synctest.Wait()

		t0 := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err := p.Shutdown(ctx)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Shutdown() = %v, want context.DeadlineExceeded after cancelling the task", err)
		}
		if !r.reported.Load() {
			t.Error("Shutdown returned before the cancelled task finished its final report")
		}
		if d := time.Since(t0); d != 15*time.Second {
			t.Errorf("Shutdown took %s, want 15s (10s grace + 5s final report)", d)
		}
		if err := <-errc; err != nil {
			t.Errorf("Run() = %v, want nil", err)
		}
	})
}

func TestShutdownForce(t *testing.T) {
	t.Parallel()
	t.Run("already cancelled ctx cancels at once", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			r := &finalReporter{report: time.Second}
			p := New(&fakeFetcher{respond: oneTask}, r, Options{})
			errc := start(p)
			synctest.Wait()
			t0 := time.Now()
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			if err := p.Shutdown(ctx); !errors.Is(err, context.Canceled) {
				t.Errorf("Shutdown(cancelled) = %v, want context.Canceled", err)
			}
			if d := time.Since(t0); d != time.Second {
				t.Errorf("forced Shutdown took %s, want 1s (only the final report)", d)
			}
			if !r.reported.Load() {
				t.Error("forced Shutdown returned before the final report")
			}
			<-errc
		})
	})
	t.Run("second call forces a waiting first call", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			r := &finalReporter{report: time.Second}
			p := New(&fakeFetcher{respond: oneTask}, r, Options{})
			errc := start(p)
			synctest.Wait()
			t0 := time.Now()
			first := make(chan error, 1)
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
				defer cancel()
				first <- p.Shutdown(ctx)
			}()
			time.Sleep(10 * time.Second) // the second signal comes later
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			if err := p.Shutdown(ctx); !errors.Is(err, context.Canceled) {
				t.Errorf("second Shutdown = %v, want context.Canceled", err)
			}
			if err := <-first; err != nil {
				t.Errorf("first Shutdown = %v, want nil (its tasks ended before its deadline)", err)
			}
			if d := time.Since(t0); d != 11*time.Second {
				t.Errorf("shutdown took %s, want 11s, not the first call's hour", d)
			}
			<-errc
		})
	})
}

func TestShutdownBeforeRun(t *testing.T) {
	t.Parallel()
	f := &fakeFetcher{respond: oneTask}
	p := New(f, noopRunner(), Options{})
	if err := p.Shutdown(context.Background()); err != nil {
		t.Errorf("Shutdown() before Run = %v, want nil", err)
	}
	if err := p.Run(context.Background()); err != nil {
		t.Errorf("Run() after Shutdown = %v, want nil", err)
	}
	if got := f.calls(); got != 0 {
		t.Errorf("FetchTask calls after Shutdown = %d, want 0", got)
	}
}

func TestRunContextStopsPollingButNotTasks(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r := &finalReporter{}
		p := New(&fakeFetcher{respond: oneTask}, r, Options{})
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() { errc <- p.Run(ctx) }()
		synctest.Wait()
		cancel()
		if err := <-errc; err != nil {
			t.Errorf("Run() = %v after its ctx was cancelled, want nil", err)
		}
		synctest.Wait()
		if r.reported.Load() {
			t.Error("task was cancelled by Run's ctx, want it left for Shutdown")
		}
		sctx, scancel := context.WithCancel(context.Background())
		scancel()
		if err := p.Shutdown(sctx); !errors.Is(err, context.Canceled) {
			t.Errorf("Shutdown(cancelled) = %v, want context.Canceled", err)
		}
	})
}

func TestUnauthenticatedStopsWithErrUnregistered(t *testing.T) {
	t.Parallel()
	// A proper connect Unauthenticated, and Gitea 1.26's form: its gRPC
	// status error arrives as code unknown (HTTP 500).
	for name, unauth := range map[string]error{
		"connect":    connect.NewError(connect.CodeUnauthenticated, errors.New("unregistered runner")),
		"gitea 1.26": connect.NewError(connect.CodeUnknown, errors.New("rpc error: code = Unauthenticated desc = unregistered runner")),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			testUnauthenticated(t, unauth)
		})
	}
}

func testUnauthenticated(t *testing.T, unauth error) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeFetcher{respond: func(_ context.Context, call int) (*runnerv1.FetchTaskResponse, error) {
			if call < 2 {
				return empty(1)
			}
			return nil, unauth
		}}
		p := New(f, noopRunner(), Options{Rand: half})
		errc := start(p)
		var err error
		select {
		case err = <-errc:
		case <-time.After(time.Hour):
			t.Error("Run did not return an hour after Unauthenticated")
			_ = p.Shutdown(context.Background())
			<-errc
			return
		}
		if !errors.Is(err, ErrUnregistered) {
			t.Fatalf("Run() = %v, want an error wrapping ErrUnregistered", err)
		}
		for _, want := range []string{"no longer registered", "register again", "forgeload register", "unregistered runner"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("Run() error %q does not contain %q", err, want)
			}
		}
		if got := f.calls(); got != 3 {
			t.Errorf("FetchTask calls = %d, want 3 (none after Unauthenticated)", got)
		}
		if err := p.Ready(); !errors.Is(err, ErrUnregistered) {
			t.Errorf("Ready() = %v, want an error wrapping ErrUnregistered", err)
		}
		if err := p.Shutdown(context.Background()); err != nil {
			t.Errorf("Shutdown() = %v, want nil", err)
		}
	})
}

func TestPanickingTaskIsContained(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := &fakeFetcher{respond: func(_ context.Context, call int) (*runnerv1.FetchTaskResponse, error) {
			if call < 2 {
				return withTask(int64(call+1), 0)
			}
			return empty(0)
		}}
		var secondRan atomic.Bool
		r := runnerFunc(func(_ context.Context, task *runnerv1.Task) error {
			if task.GetId() == 1 {
				panic("boom in task one")
			}
			secondRan.Store(true)
			return nil
		})
		var buf syncBuffer
		l := logrus.New()
		l.SetOutput(&buf)
		obs := &fakeObserver{}
		// Capacity 1: the second task can only run if the panic released the slot.
		p := New(f, r, Options{Capacity: 1, Logger: logrus.NewEntry(l), Observer: obs})
		errc := start(p)
		time.Sleep(time.Second)
		stop(t, p, errc)
		if !secondRan.Load() {
			t.Error("the task after a panicking one did not run: the slot was not released or the loop died")
		}
		o := obs.snapshot()
		if got := o.running[len(o.running)-1]; got != 0 {
			t.Errorf("last Observer.Running = %d, want 0", got)
		}
		log := buf.String()
		for _, want := range []string{"task panicked", "boom in task one", "task_id=1", "runtime/debug.Stack"} {
			if !strings.Contains(log, want) {
				t.Errorf("log does not contain %q:\n%s", want, log)
			}
		}
	})
}

// TestRecoveryIsLogged: after FetchTask errors, the first answer is logged,
// so the daemon log says when the forge works again.
func TestRecoveryIsLogged(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := &fakeFetcher{respond: func(_ context.Context, call int) (*runnerv1.FetchTaskResponse, error) {
			if call < 3 {
				return nil, connect.NewError(connect.CodeUnavailable, errors.New("forge is down"))
			}
			return empty(1)
		}}
		var buf syncBuffer
		l := logrus.New()
		l.SetOutput(&buf)
		p := New(f, noopRunner(), Options{Logger: logrus.NewEntry(l), Rand: half, FetchInterval: time.Second, FetchIntervalMax: time.Second})
		errc := start(p)
		time.Sleep(time.Minute)
		stop(t, p, errc)
		log := buf.String()
		if n := strings.Count(log, "the forge answers again: fetching tasks works after 3 failed attempts"); n != 1 {
			t.Errorf("recovery logged %d times, want once:\n%s", n, log)
		}
	})
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestOnceRunsOneTaskAndReturns(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := &fakeFetcher{respond: func(_ context.Context, call int) (*runnerv1.FetchTaskResponse, error) {
			if call < 2 {
				return empty(1)
			}
			return withTask(int64(call), 0) // every later call would hand out more work
		}}
		var runs atomic.Int64
		r := runnerFunc(func(context.Context, *runnerv1.Task) error {
			runs.Add(1)
			time.Sleep(3 * time.Second)
			return nil
		})
		p := New(f, r, Options{Once: true, Capacity: 4, FetchInterval: 2 * time.Second, Rand: half})
		t0 := time.Now()
		errc := start(p)
		select {
		case err := <-errc:
			if err != nil {
				t.Errorf("Run() = %v, want nil", err)
			}
		case <-time.After(time.Hour):
			t.Error("Run did not return an hour after its one task ended")
			stop(t, p, errc)
			return
		}
		// Empty at 0 (wait 2s), empty at 2s (wait 4s), task at 6s running 3s.
		if d := time.Since(t0); d != 9*time.Second {
			t.Errorf("Run returned after %s, want 9s (after its one task ended)", d)
		}
		if got := runs.Load(); got != 1 {
			t.Errorf("tasks run = %d, want 1", got)
		}
		if got := f.calls(); got != 3 {
			t.Errorf("FetchTask calls = %d, want 3", got)
		}
		if err := p.Shutdown(context.Background()); err != nil {
			t.Errorf("Shutdown() = %v, want nil", err)
		}
	})
}

// manualClock is an injected clock the test moves by hand.
type manualClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *manualClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func TestReady(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		forgeDown := errors.New("forge is down")
		var failing atomic.Bool
		failing.Store(true)
		f := &fakeFetcher{respond: func(context.Context, int) (*runnerv1.FetchTaskResponse, error) {
			if failing.Load() {
				return nil, connect.NewError(connect.CodeUnavailable, forgeDown)
			}
			return empty(1)
		}}
		clock := &manualClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
		p := New(f, noopRunner(), Options{
			ReadinessGrace: time.Minute, FetchInterval: time.Second, FetchIntervalMax: time.Second,
			Rand: half, Now: clock.Now,
		})
		if err := p.Ready(); err != nil {
			t.Errorf("Ready() before any fetch = %v, want nil", err)
		}
		errc := start(p)
		synctest.Wait()
		if err := p.Ready(); err != nil {
			t.Errorf("Ready() right after the first error = %v, want nil (within grace)", err)
		}
		clock.Advance(30 * time.Second)
		time.Sleep(3 * time.Second) // more errors, still within grace on the injected clock
		if err := p.Ready(); err != nil {
			t.Errorf("Ready() after 30s of errors = %v, want nil (within grace)", err)
		}
		clock.Advance(31 * time.Second)
		err := p.Ready()
		if err == nil {
			t.Fatal("Ready() after 61s of errors = nil, want an error")
		}
		if !errors.Is(err, forgeDown) || !strings.Contains(err.Error(), "1m1s") {
			t.Errorf("Ready() = %v, want it to wrap the last error and say how long (1m1s)", err)
		}
		failing.Store(false)
		time.Sleep(2 * time.Second)
		if err := p.Ready(); err != nil {
			t.Errorf("Ready() after a successful fetch = %v, want nil", err)
		}
		stop(t, p, errc)
	})
}

// TestReadinessGraceZero: metrics.readiness_grace: 0 means "not ready on
// the first error", not a default grace.
func TestReadinessGraceZero(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := &fakeFetcher{respond: func(context.Context, int) (*runnerv1.FetchTaskResponse, error) {
			return nil, connect.NewError(connect.CodeUnavailable, errors.New("forge is down"))
		}}
		clock := &manualClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
		p := New(f, noopRunner(), Options{Rand: half, Now: clock.Now})
		if err := p.Ready(); err != nil {
			t.Errorf("Ready() before any fetch = %v, want nil", err)
		}
		errc := start(p)
		synctest.Wait()
		if err := p.Ready(); err == nil {
			t.Error("Ready() right after the first error with grace 0 = nil, want an error")
		}
		stop(t, p, errc)
	})
}

func TestOptions(t *testing.T) {
	t.Parallel()
	t.Run("zero value gets the defaults", func(t *testing.T) {
		t.Parallel()
		p := New(&fakeFetcher{}, noopRunner(), Options{})
		want := Options{Capacity: 1, FetchTimeout: 5 * time.Second, FetchInterval: 2 * time.Second,
			FetchIntervalMax: time.Minute, ReadinessGrace: 0}
		got := p.opts
		if got.Capacity != want.Capacity || got.FetchTimeout != want.FetchTimeout || got.FetchInterval != want.FetchInterval ||
			got.FetchIntervalMax != want.FetchIntervalMax || got.ReadinessGrace != want.ReadinessGrace {
			t.Errorf("defaults = %+v, want %+v", got, want)
		}
		if got.Logger == nil || got.Rand == nil || got.Now == nil {
			t.Error("defaults left Logger, Rand or Now nil")
		}
	})
	t.Run("a large interval raises the default max", func(t *testing.T) {
		t.Parallel()
		p := New(&fakeFetcher{}, noopRunner(), Options{FetchInterval: 2 * time.Minute})
		if p.optsErr != nil || p.opts.FetchIntervalMax != 2*time.Minute {
			t.Errorf("FetchIntervalMax = %s (err %v), want 2m0s", p.opts.FetchIntervalMax, p.optsErr)
		}
	})
	bad := []struct {
		name string
		o    Options
		want string
	}{
		{"negative capacity", Options{Capacity: -1}, "runner.capacity"},
		{"negative fetch timeout", Options{FetchTimeout: -time.Second}, "runner.fetch_timeout"},
		{"negative interval", Options{FetchInterval: -time.Second}, "runner.fetch_interval"},
		{"max below interval", Options{FetchInterval: 10 * time.Second, FetchIntervalMax: time.Second}, "raise runner.fetch_interval_max"},
		{"negative grace", Options{ReadinessGrace: -time.Second}, "ReadinessGrace"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := &fakeFetcher{}
			err := New(f, noopRunner(), tt.o).Run(context.Background())
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Run() with %s = %v, want an error mentioning %q", tt.name, err, tt.want)
			}
			if f.calls() != 0 {
				t.Errorf("FetchTask calls with invalid options = %d, want 0", f.calls())
			}
		})
	}
	t.Run("Run twice is an error", func(t *testing.T) {
		t.Parallel()
		p := New(&fakeFetcher{}, noopRunner(), Options{})
		_ = p.Shutdown(context.Background())
		_ = p.Run(context.Background())
		if err := p.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "already called") {
			t.Errorf("second Run() = %v, want an 'already called' error", err)
		}
	})
}
