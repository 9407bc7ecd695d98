package load

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"sync"

	"github.com/forgeload/forgeload/internal/pkg/guard"
)

// panicTrap catches panics in what the engine calls from its own
// goroutines: the requester (drivers, retry, failure logging) and the
// Progress and OnSecond callbacks. The first panic stops the run, and Run
// returns it as an error, so a bug reached by one job's input fails that
// job instead of ending the process.
type panicTrap struct {
	stop  context.CancelCauseFunc
	mu    sync.Mutex
	first *guard.PanicError
}

// catch, deferred after a deferred guard.Recover, records a recovered
// panic and stops the run. It looks for the *guard.PanicError that Recover
// sets with a type assertion: errors.As would allocate its target.
func (t *panicTrap) catch(errp *error) {
	if pe, ok := (*errp).(*guard.PanicError); ok {
		t.record(pe)
	}
}

// recoverRequest is deferred by every request: one deferred call that
// recovers a panic itself (recover works only in the deferred function),
// records it as catch does and returns it as the request's error: two
// deferred calls (guard.Recover, then catch) cost more on every request.
func (t *panicTrap) recoverRequest(errp *error) {
	if v := recover(); v != nil {
		pe := &guard.PanicError{Value: v, Stack: debug.Stack()}
		*errp = pe
		t.record(pe)
	}
}

// record keeps the first panic and stops the run.
func (t *panicTrap) record(pe *guard.PanicError) {
	t.mu.Lock()
	if t.first == nil {
		t.first = pe
	}
	t.mu.Unlock()
	t.stop(pe)
}

func (t *panicTrap) err() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.first == nil {
		return nil
	}
	return fmt.Errorf("load engine: the run was stopped by %w", t.first)
}

// Panic returns the recovered panic inside an error Run returned, with its
// stack, or nil.
func Panic(err error) *guard.PanicError {
	var pe *guard.PanicError
	if errors.As(err, &pe) {
		return pe
	}
	return nil
}

// trapPanics wraps o's requester and callbacks with t and returns the run
// context t stops.
func trapPanics(ctx context.Context, o *Options) (context.Context, *panicTrap, context.CancelCauseFunc) {
	ctx, stop := context.WithCancelCause(ctx)
	t := &panicTrap{stop: stop}
	g := &guardedRequester{r: o.Requester, t: t}
	if guard.Faults {
		g.names = strings.Join(o.Endpoints, " ")
	}
	o.Requester = g
	if f := o.Progress; f != nil {
		o.Progress = func(p Progress) { t.call(func() { f(p) }) }
	}
	if f := o.OnSecond; f != nil {
		o.OnSecond = func(s *Snapshot) { t.call(func() { f(s) }) }
	}
	return ctx, t, stop
}

// call runs a callback, trapping a panic in it.
func (t *panicTrap) call(f func()) {
	err := guard.Run(func() error { f(); return nil })
	t.catch(&err)
}

// guardedRequester is the requester the engine's workers call.
type guardedRequester struct {
	r     Requester
	t     *panicTrap
	names string // endpoint names, for guard.Fault in fault-injection builds
}

func (g *guardedRequester) Do(ctx context.Context) (err error) {
	defer g.t.recoverRequest(&err)
	guard.Fault("worker", g.names)
	return g.r.Do(ctx)
}

func (g *guardedRequester) DoSample(ctx context.Context, s *Sample) (err error) {
	defer g.t.recoverRequest(&err)
	guard.Fault("worker", g.names)
	return g.r.DoSample(ctx, s)
}
