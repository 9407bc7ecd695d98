// Package poll owns the Poller: the one loop that asks the forge for work
// (FetchTask) and hands each task to a [TaskRunner]. It takes a capacity slot
// before every FetchTask, so it never fetches while every slot is busy and
// never has two FetchTask calls in flight; it keeps the tasks_version cache
// (send 0 first, keep a returned version only if larger, reset to 0 after a
// task); it backs off after empty responses and errors with the capped
// exponential [Interval] plus ±20% [backoff.Jitter]; it recovers a panicking task so
// that only that task fails; it reports readiness through [Poller.Ready]; and
// it stops in two phases with [Poller.Shutdown]: polling stops at once, running
// tasks are cancelled only when the caller's deadline passes.
//
// # Wiring in the daemon
//
// `forgeload daemon` (internal/app/cmd, runDaemon) runs [Poller.Run] on a
// context that the first SIGINT or SIGTERM cancels. Cancelling Run's ctx
// stops polling at once but leaves running tasks alone: they run on a
// context that keeps ctx's values but not its cancellation. Run returns
// (nil, an error wrapping ErrUnregistered when the forge no longer knows
// the runner, or nil in once mode after its task ended), and the daemon always
// calls [Poller.Shutdown], which owns the task goroutines: with a context
// bounded by runner.shutdown_timeout, which a second signal cancels so that
// Shutdown cancels the tasks at once. Shutdown returns when every task has
// returned; tasks do their final reporting on their own detached context:
//
//	runErr := p.Run(ctx) // ctx: cancelled by the first signal
//	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
//	defer cancel()
//	go func() { // a second signal: cancel the running tasks now
//		select {
//		case <-sigterm:
//			cancel()
//		case <-sctx.Done():
//		}
//	}()
//	shutdownErr := p.Shutdown(sctx)
package poll
