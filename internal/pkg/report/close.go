package report

import (
	"context"
	"errors"
	"fmt"
	"time"

	"connectrpc.com/connect"
	runnerv1 "gitea.dev/actions-proto-go/runner/v1"

	"github.com/forgeload/forgeload/internal/pkg/backoff"
)

// Close finishes the task on the forge, in this order:
//
//  1. The final result is chosen: the forge's result if it stopped the task,
//     else CANCELLED if the job context was cancelled, else result (FAILURE if
//     result is UNSPECIFIED).
//  2. Unfinished lines of every Writer are flushed; later writes are discarded.
//  3. Steps without a result are marked CANCELLED (started ones get stopped_at).
//  4. The Reporter's goroutines are stopped and waited for; a call they
//     have in flight is let finish (within RPCTimeout), never aborted.
//  5. An empty row is added if no row is unsent, so the last UpdateLog has one.
//  6. UpdateLog is sent until the forge acknowledges every row, the last
//     request with no_more=true (AlreadyExists means the log is already
//     archived, which ends this phase).
//  7. The final UpdateTask (result, stopped_at, steps, outputs) is sent.
//
// Steps 6 and 7 retry with capped exponential backoff on a context detached
// from the job and bounded by CloseTimeout. If the forge does not take
// everything in time, Close returns an error saying what was not delivered.
// Close then cancels the job context and removes the spill file. Close is
// idempotent: later calls return the first call's error.
func (r *Reporter) Close(result runnerv1.Result) error {
	r.closeOnce.Do(func() { r.closeErr = r.close(result) })
	return r.closeErr
}

// closePhase is one phase of Close. Each phase is a method of closer that
// does its work and returns the next phase, so that every way from one
// phase to another is written in one place.
type closePhase int

const (
	// phaseSeal chooses the final result, flushes the writers and ends
	// the steps (Close's steps 1 to 3).
	phaseSeal closePhase = iota
	// phaseStopLoops stops the log and heartbeat loops and waits for them
	// (step 4).
	phaseStopLoops
	// phaseLastRows adds the row that says how many rows were dropped and
	// the row the last UpdateLog carries (step 5), and starts the clock of
	// CloseTimeout.
	phaseLastRows
	// phaseSendLog sends one UpdateLog (step 6); it comes back to itself
	// until the forge has taken every row or retrying cannot help.
	phaseSendLog
	// phaseSendState sends the final UpdateTask (step 7); it comes back
	// to itself until the forge has taken it or retrying cannot help.
	phaseSendState
	// phaseKeep hands what the forge did not take to the Outbox.
	phaseKeep
	// phaseRelease removes the spill file and says what was discarded.
	phaseRelease
	// phaseDone ends Close.
	phaseDone
)

// closer is the state Close's phases hand on to each other.
type closer struct {
	r *Reporter

	final     runnerv1.Result // the result sent to the forge
	now       time.Time       // stopped_at of the task and of unfinished steps
	started   bool            // Start ran: there are loops to stop
	stopLoops context.CancelFunc
	jobCancel context.CancelFunc

	// ctx bounds the delivery phases by CloseTimeout, detached from the job.
	ctx    context.Context
	cancel context.CancelFunc

	logBackoff, stateBackoff backoff.Backoff
	logErr, stateErr         error // the last failure of each delivery, nil once delivered
	kept                     bool  // the Outbox took what was not delivered

	left, from int64 // rows the forge did not acknowledge, and the first of them, counted before phaseKeep
}

func (r *Reporter) close(result runnerv1.Result) error {
	c := &closer{
		r:            r,
		final:        result,
		logBackoff:   backoff.Backoff{Min: 100 * time.Millisecond, Max: 2 * time.Second},
		stateBackoff: backoff.Backoff{Min: 100 * time.Millisecond, Max: 2 * time.Second},
	}
	defer c.end()
	for p := phaseSeal; p != phaseDone; {
		p = c.run(p)
	}
	return c.err()
}

// run runs phase p and returns the next one.
func (c *closer) run(p closePhase) closePhase {
	switch p {
	case phaseSeal:
		return c.seal()
	case phaseStopLoops:
		return c.stop()
	case phaseLastRows:
		return c.lastRows()
	case phaseSendLog:
		return c.sendLog()
	case phaseSendState:
		return c.sendState()
	case phaseKeep:
		return c.keep()
	case phaseRelease:
		return c.release()
	}
	panic(fmt.Sprintf("report: Close has no phase %d", p))
}

// end cancels the delivery context and the job context, whichever phase
// Close ended in.
func (c *closer) end() {
	if c.cancel != nil {
		c.cancel()
	}
	if c.jobCancel != nil {
		c.jobCancel()
	}
}

func (c *closer) seal() closePhase {
	r := c.r
	r.mu.Lock()
	r.closing = true
	switch {
	case r.serverResult != runnerv1.Result_RESULT_UNSPECIFIED:
		c.final = r.serverResult
	case r.loopPanic:
		c.final = runnerv1.Result_RESULT_FAILURE
	case r.jobCtx.Err() != nil:
		c.final = runnerv1.Result_RESULT_CANCELLED
	case c.final == runnerv1.Result_RESULT_UNSPECIFIED:
		c.final = runnerv1.Result_RESULT_FAILURE
	}
	ws := append([]*lineWriter(nil), r.writers...)
	r.mu.Unlock()

	for _, w := range ws {
		w.flush()
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	r.sealed = true
	c.now = r.o.Now()
	for i := range r.steps {
		s := &r.steps[i]
		if s.result == runnerv1.Result_RESULT_UNSPECIFIED {
			s.result = runnerv1.Result_RESULT_CANCELLED
			if !s.started.IsZero() && s.stopped.IsZero() {
				s.stopped = c.now
			}
		}
		s.ended = true
	}
	if r.startedAt.IsZero() {
		r.startedAt = c.now
	}
	c.started, c.stopLoops, c.jobCancel = r.started, r.loopStop, r.jobCancel
	return phaseStopLoops
}

func (c *closer) stop() closePhase {
	if c.started {
		// Let a report call in flight finish (each is bounded by
		// RPCTimeout) rather than abort it: Gitea logs an aborted call as
		// "context canceled" and may drop the work it started for it.
		close(c.r.loopQuit)
		c.r.wg.Wait()
		c.stopLoops()
	}
	return phaseLastRows
}

func (c *closer) lastRows() closePhase {
	r := c.r
	r.mu.Lock()
	if !r.logArchived {
		if r.dropped > 0 {
			r.appendDroppedLocked(c.now, true)
		}
		if r.store.end == r.sendFrom {
			_ = r.store.append(row{t: c.now, s: ""})
		}
	}
	archived := r.logArchived
	r.mu.Unlock()

	c.ctx, c.cancel = context.WithTimeout(context.WithoutCancel(r.parent), r.o.CloseTimeout)
	if archived {
		return phaseSendState
	}
	return phaseSendLog
}

func (c *closer) sendLog() closePhase {
	finished, progress, err := c.r.sendLog(c.ctx, true)
	switch {
	case err == nil && finished:
		c.logErr = nil
		return phaseSendState
	case connect.CodeOf(err) == connect.CodeAlreadyExists:
		c.r.archived()
		c.logErr = nil
		return phaseSendState
	case err == nil && progress:
		c.logBackoff.Reset()
		return phaseSendLog
	case err != nil:
		c.logErr = err
		if permanent(err) {
			return phaseSendState
		}
	}
	if !sleep(c.ctx, c.logBackoff.Next()) {
		if c.logErr == nil {
			c.logErr = c.ctx.Err()
		}
		return phaseSendState
	}
	return phaseSendLog
}

func (c *closer) sendState() closePhase {
	c.stateErr = c.r.sendState(c.ctx, c.final, c.now)
	if c.stateErr == nil || permanent(c.stateErr) || !sleep(c.ctx, c.stateBackoff.Next()) {
		return phaseKeep
	}
	return phaseSendState
}

func (c *closer) keep() closePhase {
	r := c.r
	// Count what the forge did not take before the Outbox consumes it.
	r.mu.Lock()
	c.left, c.from = r.store.end-r.sendFrom, r.sendFrom
	r.mu.Unlock()
	if c.logErr == nil && c.stateErr == nil || r.o.Outbox == nil || permanent(c.logErr) || permanent(c.stateErr) {
		return phaseRelease
	}
	if err := r.keep(c.final, c.now); err != nil {
		r.log.WithError(err).Error("report: the final report could not be kept on disk either")
		return phaseRelease
	}
	c.kept = true
	r.log.Warnf("report: the forge did not take the final log and result (%s) of task %d within %s; they are kept on disk and delivered when it answers", c.final, r.taskID, r.o.CloseTimeout)
	return phaseRelease
}

func (c *closer) release() closePhase {
	r := c.r
	r.mu.Lock()
	discarded := r.discarded
	if err := r.store.close(); err != nil {
		r.log.WithError(err).Warn("report: removing the log spill file failed")
	}
	r.mu.Unlock()
	if r.o.Observer != nil {
		r.o.Observer.BufferRows(0)
	}
	if discarded > 0 {
		r.log.Warnf("report: %d log rows written after the forge archived the log were discarded", discarded)
	}
	return phaseDone
}

// err is Close's error: what the forge did not take, unless the Outbox
// kept it.
func (c *closer) err() error {
	if c.kept {
		return nil
	}
	var errs []error
	if c.logErr != nil {
		errs = append(errs, fmt.Errorf("%d log rows (from row %d) were not acknowledged: %w", c.left, c.from, c.logErr))
	}
	if c.stateErr != nil {
		errs = append(errs, fmt.Errorf("the final state (result %s) was not delivered: %w", c.final, c.stateErr))
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("report: close task %d within %s: %w; check that the forge is reachable and the runner is still registered",
		c.r.taskID, c.r.o.CloseTimeout, errors.Join(errs...))
}

// keep hands what Close could not deliver to the Outbox: the final state
// with the outputs not yet acknowledged, and the unacknowledged rows (those
// past OutboxMaxTaskBytes become one DroppedRowsText row), the last request
// with no_more. It consumes the row store.
func (r *Reporter) keep(final runnerv1.Result, stoppedAt time.Time) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	state := &runnerv1.UpdateTaskRequest{State: r.taskStateLocked(final, stoppedAt)}
	if len(r.outputs) > 0 {
		state.Outputs = make(map[string]string, len(r.outputs))
		for k, v := range r.outputs {
			state.Outputs[k] = v
		}
	}
	var logs []*runnerv1.UpdateLogRequest
	size := 0
	for !r.logArchived && r.store.end > r.sendFrom {
		if size > OutboxMaxTaskBytes {
			n := r.store.end - r.sendFrom
			logs = append(logs, &runnerv1.UpdateLogRequest{TaskId: r.taskID, Index: r.sendFrom,
				Rows: []*runnerv1.LogRow{{Time: ts(stoppedAt), Content: fmt.Sprintf(DroppedRowsText, n)}}})
			break
		}
		index, rows, err := r.batchLocked()
		if err != nil {
			return err
		}
		if len(rows) == 0 {
			break
		}
		for _, row := range rows {
			size += len(row.GetContent())
		}
		logs = append(logs, &runnerv1.UpdateLogRequest{TaskId: r.taskID, Index: index, Rows: rows})
		r.sendFrom = index + int64(len(rows))
		if err := r.store.drop(r.sendFrom); err != nil {
			return err
		}
	}
	if len(logs) > 0 {
		logs[len(logs)-1].NoMore = true
	}
	return r.o.Outbox.keep(r.taskID, state, logs)
}
