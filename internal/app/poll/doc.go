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
// The daemon builds the Poller with [New], starts [Poller.Run] in a goroutine
// and keeps its error. On the first SIGTERM it calls [Poller.Shutdown] with a
// context bounded by runner.shutdown_timeout; a second SIGTERM cancels that
// context, which makes Shutdown cancel the tasks at once. Shutdown returns when
// every task has returned (tasks do their final reporting on their own
// detached context), and Run returns as soon as polling has stopped:
//
//	errc := make(chan error, 1)
//	go func() { errc <- p.Run(ctx) }()
//	var runErr error
//	select {
//	case <-sigterm: // polling is still running; Shutdown stops it
//	case runErr = <-errc: // ErrUnregistered, or nil in once mode
//		errc = nil
//	}
//	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
//	defer cancel()
//	go func() { // second signal: force
//		select {
//		case <-sigterm:
//			cancel()
//		case <-sctx.Done():
//		}
//	}()
//	shutdownErr := p.Shutdown(sctx) // always call it: it owns the task goroutines
//	if errc != nil {
//		runErr = <-errc // returns at once: Shutdown stopped polling
//	}
//
// Cancelling Run's ctx also stops polling, but leaves running tasks alone: the
// tasks run on a context that keeps ctx's values but not its cancellation, and
// only Shutdown cancels them. Always call Shutdown after Run to wait for them.
package poll
