package poll

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"connectrpc.com/connect"
	runnerv1 "gitea.dev/actions-proto-go/runner/v1"
	"github.com/sirupsen/logrus"

	"github.com/forgeload/forgeload/internal/pkg/backoff"
	"github.com/forgeload/forgeload/internal/pkg/client"
)

// Defaults applied by [New] to zero-valued [Options] fields.
const (
	// DefaultCapacity is the number of tasks run at once when Options.Capacity is 0.
	DefaultCapacity = 1
	// DefaultFetchTimeout bounds one FetchTask call when Options.FetchTimeout is 0.
	DefaultFetchTimeout = 5 * time.Second
	// DefaultFetchInterval is the base backoff when Options.FetchInterval is 0.
	DefaultFetchInterval = 2 * time.Second
	// DefaultFetchIntervalMax caps the backoff when Options.FetchIntervalMax is 0
	// (raised to FetchInterval if that is larger).
	DefaultFetchIntervalMax = 60 * time.Second
)

// Values of the result argument of [Observer.FetchDone]; they are the values
// of the poll_fetch_total{result} label.
const (
	ResultTask  = "task"
	ResultEmpty = "empty"
	ResultError = "error"
)

// ErrUnregistered is returned (wrapped) by [Poller.Run] and [Poller.Ready]
// when the forge answers FetchTask that it does not know the runner
// ([client.IsUnauthenticated], either form): the runner's
// registration was deleted or its token is wrong, and polling has stopped.
var ErrUnregistered = errors.New("the runner is no longer registered with the forge: register again with `forgeload register`")

// Fetcher is the one forge RPC the Poller needs. The forge client
// (connect-go's generated RunnerServiceClient) satisfies it.
type Fetcher interface {
	FetchTask(context.Context, *connect.Request[runnerv1.FetchTaskRequest]) (*connect.Response[runnerv1.FetchTaskResponse], error)
}

// TaskRunner runs one forge task to its end. The Poller calls Run in its own
// goroutine, once per task, with a context that is cancelled only when
// [Poller.Shutdown]'s deadline passes. The runner reports to the forge itself
// (including its final report, on a context of its own); the Poller only logs
// the returned error.
type TaskRunner interface {
	Run(ctx context.Context, task *runnerv1.Task) error
}

// Observer receives the Poller's metrics. It must be safe for concurrent use:
// Running is called from task goroutines. A nil Observer in [Options] means no
// metrics.
type Observer interface {
	// FetchDone is called after each FetchTask call with ResultTask,
	// ResultEmpty or ResultError and the call's duration. ResultError is
	// exactly the case that counts client_errors_total{method="FetchTask"}.
	FetchDone(result string, d time.Duration)
	// Backoff is called with the wait before the next FetchTask (0 after a
	// task, when the Poller polls again at once).
	Backoff(d time.Duration)
	// Running is called with the number of tasks running, whenever it changes.
	Running(n int)
}

// Options configures a [Poller]. The zero value of every field works and
// means the documented default.
type Options struct {
	// Capacity is how many tasks may run at once (runner.capacity).
	// 0 means DefaultCapacity; negative is an error.
	Capacity int
	// FetchTimeout bounds each FetchTask call (runner.fetch_timeout). When it
	// expires the call counts as an empty response. 0 means DefaultFetchTimeout.
	FetchTimeout time.Duration
	// FetchInterval is the base backoff after an empty response or error
	// (runner.fetch_interval). 0 means DefaultFetchInterval.
	FetchInterval time.Duration
	// FetchIntervalMax caps the backoff before jitter
	// (runner.fetch_interval_max). 0 means DefaultFetchIntervalMax, or
	// FetchInterval if that is larger. It must not be less than FetchInterval.
	FetchIntervalMax time.Duration
	// ReadinessGrace is how long FetchTask errors may last, without a success
	// in between, before Ready reports an error. 0 means no grace: Ready
	// fails from the first error (metrics.readiness_grace: 0).
	ReadinessGrace time.Duration
	// Once makes Run poll until it gets one task, run it, wait for it and
	// return nil (daemon --once, or an ephemeral registration).
	Once bool
	// Logger receives the Poller's logs. nil discards them.
	Logger *logrus.Entry
	// Observer receives metrics. nil means none.
	Observer Observer
	// Rand returns uniform numbers in [0, 1) for the backoff jitter. It is
	// only called from Run's goroutine. nil means math/rand/v2.Float64.
	Rand func() float64
	// Now is the clock used for readiness and fetch durations. nil means
	// time.Now.
	Now func() time.Time
}

// withDefaults fills zero fields and validates the rest.
func (o Options) withDefaults() (Options, error) {
	if o.Capacity < 0 {
		return o, fmt.Errorf("poll: invalid options: Capacity is %d: set runner.capacity to 1 or more", o.Capacity)
	}
	for _, d := range []struct {
		field, key string
		v          time.Duration
	}{
		{"FetchTimeout", "runner.fetch_timeout", o.FetchTimeout},
		{"FetchInterval", "runner.fetch_interval", o.FetchInterval},
		{"FetchIntervalMax", "runner.fetch_interval_max", o.FetchIntervalMax},
		{"ReadinessGrace", "readiness grace", o.ReadinessGrace},
	} {
		if d.v < 0 {
			return o, fmt.Errorf("poll: invalid options: %s is %s: set %s to a positive duration, or 0 for the default", d.field, d.v, d.key)
		}
	}
	if o.Capacity == 0 {
		o.Capacity = DefaultCapacity
	}
	if o.FetchTimeout == 0 {
		o.FetchTimeout = DefaultFetchTimeout
	}
	if o.FetchInterval == 0 {
		o.FetchInterval = DefaultFetchInterval
	}
	if o.FetchIntervalMax == 0 {
		o.FetchIntervalMax = max(DefaultFetchIntervalMax, o.FetchInterval)
	}
	if o.FetchIntervalMax < o.FetchInterval {
		return o, fmt.Errorf("poll: invalid options: FetchIntervalMax (%s) is less than FetchInterval (%s): raise runner.fetch_interval_max or lower runner.fetch_interval", o.FetchIntervalMax, o.FetchInterval)
	}
	if o.Logger == nil {
		l := logrus.New()
		l.SetOutput(io.Discard)
		o.Logger = logrus.NewEntry(l)
	}
	if o.Rand == nil {
		o.Rand = rand.Float64
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o, nil
}

// Poller fetches tasks from the forge and runs them, up to a capacity, until
// it is shut down. Build it with [New]; the zero value is not usable. Run may
// be called once; Shutdown and Ready are safe to call concurrently with Run
// and with each other.
type Poller struct {
	fetcher Fetcher
	runner  TaskRunner
	opts    Options
	optsErr error
	log     *logrus.Entry

	sem      chan struct{}  // one token per running task or in-flight fetch
	tasks    sync.WaitGroup // task goroutines; Add only from Run's loop
	running  atomic.Int64
	pollDone chan struct{} // closed when Run's loop has stopped (if Run started)

	mu         sync.Mutex
	started    bool
	stopping   bool
	cancelPoll context.CancelFunc
	cancelJobs context.CancelFunc
	errSince   time.Time // start of the current run of FetchTask errors; zero if none
	lastErr    error
	unreg      error // the Unauthenticated error, once seen
}

// New returns a Poller that fetches with f and runs tasks with r. Invalid
// options are reported by Run.
func New(f Fetcher, r TaskRunner, o Options) *Poller {
	opts, err := o.withDefaults()
	p := &Poller{
		fetcher:  f,
		runner:   r,
		opts:     opts,
		optsErr:  err,
		log:      opts.Logger,
		pollDone: make(chan struct{}),
	}
	if err == nil {
		p.sem = make(chan struct{}, opts.Capacity)
	}
	return p
}

// Run polls until ctx is cancelled, Shutdown is called, the forge says the
// runner is unregistered, or (with Options.Once) one task has run.
//
// It returns nil when polling was stopped by ctx or Shutdown, and in once
// mode after its task ended (or when ctx is cancelled while it runs; Shutdown
// then still owns the task). It returns an error wrapping [ErrUnregistered]
// when FetchTask answers Unauthenticated, and an error for invalid options or
// a second call. Tasks still running when Run returns are waited for (and
// cancelled at its deadline) by [Poller.Shutdown], which the caller must call.
func (p *Poller) Run(ctx context.Context) error {
	if p.optsErr != nil {
		return p.optsErr
	}
	p.mu.Lock()
	if p.started {
		p.mu.Unlock()
		return errors.New("poll: run: Run was already called on this Poller: build a new one with New for each run")
	}
	p.started = true
	if p.stopping {
		p.mu.Unlock()
		close(p.pollDone)
		return nil
	}
	pollCtx, cancelPoll := context.WithCancel(ctx)
	jobsCtx, cancelJobs := context.WithCancel(context.WithoutCancel(ctx))
	p.cancelPoll, p.cancelJobs = cancelPoll, cancelJobs
	p.mu.Unlock()
	defer cancelPoll()

	onceDone, err := p.loop(pollCtx, jobsCtx)
	close(p.pollDone)
	if err != nil {
		return err
	}
	if onceDone != nil {
		select {
		case <-onceDone:
		case <-ctx.Done():
		}
	}
	return nil
}

// fetchResult classifies one FetchTask call.
type fetchResult int

const (
	fetchEmpty fetchResult = iota
	fetchTask
	fetchError
	fetchUnauthenticated
	fetchStopped
)

// loop is Run's polling loop. It is the only caller of p.tasks.Add. In once
// mode it returns a channel closed when the one task has ended.
func (p *Poller) loop(ctx, jobsCtx context.Context) (<-chan struct{}, error) {
	var (
		version int64 // tasks_version cache
		misses  int   // consecutive empty responses or errors
		fails   int   // consecutive errors, for the recovery line
	)
	for {
		select {
		case p.sem <- struct{}{}:
		case <-ctx.Done():
			return nil, nil
		}
		if ctx.Err() != nil {
			<-p.sem
			return nil, nil
		}
		res, task, newVersion, err := p.fetch(ctx, version)
		if newVersion > version {
			version = newVersion
		}
		if (res == fetchTask || res == fetchEmpty) && fails > 0 {
			p.log.Infof("the forge answers again: fetching tasks works after %d failed attempts", fails)
			fails = 0
		}
		switch res {
		case fetchStopped:
			<-p.sem
			return nil, nil
		case fetchUnauthenticated:
			<-p.sem
			return nil, fmt.Errorf("poll: fetch task: %w (forge said: %w)", ErrUnregistered, err)
		case fetchTask:
			version = 0
			misses = 0
			p.observeBackoff(0)
			done := p.dispatch(jobsCtx, task)
			if p.opts.Once {
				return done, nil
			}
			continue
		case fetchError:
			fails++
			p.log.WithError(err).Warn("fetching a task from the forge failed; backing off")
		}
		<-p.sem
		misses++
		wait := backoff.Jitter(Interval(misses, p.opts.FetchInterval, p.opts.FetchIntervalMax), p.opts.Rand())
		p.observeBackoff(wait)
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, nil
		}
	}
}

// fetch makes one FetchTask call bounded by FetchTimeout and classifies it.
func (p *Poller) fetch(ctx context.Context, version int64) (fetchResult, *runnerv1.Task, int64, error) {
	fctx, cancel := context.WithTimeout(ctx, p.opts.FetchTimeout)
	defer cancel()
	start := p.opts.Now()
	resp, err := p.fetcher.FetchTask(fctx, connect.NewRequest(&runnerv1.FetchTaskRequest{TasksVersion: version}))
	d := p.opts.Now().Sub(start)

	if err == nil {
		p.markSuccess()
		var msg *runnerv1.FetchTaskResponse
		if resp != nil {
			msg = resp.Msg
		}
		if task := msg.GetTask(); task != nil {
			p.observeFetch(ResultTask, d)
			return fetchTask, task, msg.GetTasksVersion(), nil
		}
		p.observeFetch(ResultEmpty, d)
		return fetchEmpty, nil, msg.GetTasksVersion(), nil
	}
	switch {
	case ctx.Err() != nil:
		// Polling was stopped; the call was cut short, not answered.
		return fetchStopped, nil, 0, err
	case client.IsUnauthenticated(err):
		p.observeFetch(ResultError, d)
		p.mu.Lock()
		p.unreg = err
		p.mu.Unlock()
		return fetchUnauthenticated, nil, 0, err
	case errors.Is(fctx.Err(), context.DeadlineExceeded),
		errors.Is(err, context.DeadlineExceeded),
		connect.CodeOf(err) == connect.CodeDeadlineExceeded:
		// Our own long-poll timeout: the forge had nothing for us in time.
		p.markSuccess()
		p.observeFetch(ResultEmpty, d)
		return fetchEmpty, nil, 0, nil
	default:
		p.observeFetch(ResultError, d)
		p.mu.Lock()
		if p.errSince.IsZero() {
			p.errSince = p.opts.Now()
		}
		p.lastErr = err
		p.mu.Unlock()
		return fetchError, nil, 0, err
	}
}

// dispatch runs task in a goroutine that releases the slot taken by the loop
// when the task ends. The returned channel is closed at that point.
func (p *Poller) dispatch(ctx context.Context, task *runnerv1.Task) <-chan struct{} {
	done := make(chan struct{})
	p.tasks.Add(1)
	p.observeRunning(p.running.Add(1))
	go func() {
		defer p.tasks.Done()
		defer close(done)
		defer func() { <-p.sem }()
		defer func() { p.observeRunning(p.running.Add(-1)) }()
		p.runTask(ctx, task)
	}()
	return done
}

// runTask runs one task behind a panic recovery, so a panic fails that task
// only.
func (p *Poller) runTask(ctx context.Context, task *runnerv1.Task) {
	log := p.log.WithField("task_id", task.GetId())
	defer func() {
		if r := recover(); r != nil {
			log.WithField("panic", fmt.Sprint(r)).WithField("stack", string(debug.Stack())).
				Error("task panicked: the task fails and the runner keeps polling")
		}
	}()
	log.Info("task started")
	// The TaskRunner logs the task's end with its result; an error is all
	// the Poller adds.
	if err := p.runner.Run(ctx, task); err != nil {
		log.WithError(err).Warn("task ended with an error")
	}
}

// Shutdown stops polling at once (an in-flight FetchTask is cancelled) and
// waits for running tasks until ctx ends. If ctx ends first, it cancels the
// tasks' context, waits for every task to return (tasks do their final
// reporting on their own detached context) and returns ctx.Err(); otherwise
// it returns nil. An already-cancelled ctx cancels running tasks at once: use
// it for a second signal, also while an earlier Shutdown call is waiting.
// Shutdown may be called before, during or after Run; it returns only after
// Run's polling loop has stopped.
func (p *Poller) Shutdown(ctx context.Context) error {
	p.mu.Lock()
	p.stopping = true
	started := p.started
	if p.cancelPoll != nil {
		p.cancelPoll()
	}
	p.mu.Unlock()
	if started {
		<-p.pollDone // after this, no more tasks.Add
	}

	done := make(chan struct{})
	go func() {
		p.tasks.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	default:
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
	}
	p.mu.Lock()
	if p.cancelJobs != nil {
		p.cancelJobs()
	}
	p.mu.Unlock()
	p.log.WithField("running", p.running.Load()).Warn("shutdown deadline reached: cancelling running tasks")
	<-done
	return ctx.Err()
}

// Ready reports whether the Poller is healthy enough to take work. It returns
// an error wrapping [ErrUnregistered] after the forge answered
// Unauthenticated, and an error while FetchTask errors (not empty responses
// or long-poll timeouts) have lasted longer than Options.ReadinessGrace
// without a successful call in between. Otherwise it returns nil.
func (p *Poller) Ready() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.unreg != nil {
		return fmt.Errorf("poll: not ready: %w", ErrUnregistered)
	}
	if p.errSince.IsZero() {
		return nil
	}
	if failing := p.opts.Now().Sub(p.errSince); failing > p.opts.ReadinessGrace || p.opts.ReadinessGrace == 0 {
		return fmt.Errorf("poll: not ready: FetchTask has failed for %s, longer than the %s grace (last error: %w): check that the forge is reachable and healthy",
			failing.Round(time.Second), p.opts.ReadinessGrace, p.lastErr)
	}
	return nil
}

func (p *Poller) markSuccess() {
	p.mu.Lock()
	p.errSince = time.Time{}
	p.lastErr = nil
	p.mu.Unlock()
}

func (p *Poller) observeFetch(result string, d time.Duration) {
	if p.opts.Observer != nil {
		p.opts.Observer.FetchDone(result, d)
	}
}

func (p *Poller) observeBackoff(d time.Duration) {
	if p.opts.Observer != nil {
		p.opts.Observer.Backoff(d)
	}
}

func (p *Poller) observeRunning(n int64) {
	if p.opts.Observer != nil {
		p.opts.Observer.Running(int(n))
	}
}
