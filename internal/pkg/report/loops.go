package report

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"connectrpc.com/connect"
	runnerv1 "gitea.dev/actions-proto-go/runner/v1"

	"github.com/forgeload/forgeload/internal/pkg/backoff"
	"github.com/forgeload/forgeload/internal/pkg/client"
	"github.com/forgeload/forgeload/internal/pkg/guard"
)

// LostRowText is the content of the placeholder rows sent in place of rows
// the forge acknowledged and later lost (its ack_index went backwards). The
// placeholders keep every later row, and every step's log_index, in place.
const LostRowText = "[forgeload] this log row was lost by the forge after it had acknowledged it"

// sleep waits for d or until ctx is done; it reports whether d elapsed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// logLoop sends buffered rows: at once when a batch is full or a step
// changed, otherwise no later than LogInterval after the oldest unsent row
// was appended. After a failure it retries with a capped exponential backoff.
//
// It returns when quit is closed, after the call in flight, if any, has
// ended: a call is never cut short at a normal job end (each is bounded by
// RPCTimeout). ctx ends only to abandon the calls.
func (r *Reporter) logLoop(ctx context.Context, quit <-chan struct{}) {
	bo := backoff.Backoff{Min: max(r.o.LogInterval/5, 10*time.Millisecond), Max: 3 * r.o.LogInterval}
	var retryAt time.Time
	fails := 0
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		if closed(quit) {
			return
		}
		now := time.Now()
		r.mu.Lock()
		pending := r.store.end - r.sendFrom
		dueAt := r.firstPendingAt.Add(r.o.LogInterval)
		due := pending > 0 && (r.flushNow || pending >= int64(r.o.BatchRows) || !now.Before(dueAt))
		if pending == 0 {
			r.flushNow = false
		}
		r.mu.Unlock()

		wait := time.Duration(-1)
		switch {
		case pending == 0:
		case due && now.Before(retryAt):
			wait = retryAt.Sub(now)
		case due:
			_, progress, err := r.sendLog(ctx, false)
			r.observeBuffer()
			if ctx.Err() != nil {
				return
			}
			if connect.CodeOf(err) == connect.CodeAlreadyExists {
				r.archived()
				continue
			}
			if err != nil || !progress {
				fails++
				d := bo.Next()
				retryAt = time.Now().Add(d)
				if fails == 1 && err != nil {
					r.log.WithError(err).Warnf("report: sending log rows failed; retrying with backoff up to %s", bo.Max)
				}
				continue
			}
			if fails > 0 {
				r.log.Infof("report: sending log rows works again after %d failed attempts", fails)
			}
			fails = 0
			bo.Reset()
			retryAt = time.Time{}
			continue
		default:
			wait = dueAt.Sub(now)
		}

		var tc <-chan time.Time
		if wait >= 0 {
			timer.Reset(wait)
			tc = timer.C
		}
		select {
		case <-ctx.Done():
			return
		case <-quit:
			return
		case <-r.logKick:
		case <-tc:
		}
		timer.Stop() // Go ≥ 1.23 timers deliver no stale tick after Stop
	}
}

// archived handles AlreadyExists on UpdateLog: the forge has archived the
// task's log (it finished or failed the task, e.g. by its zombie reaper) and
// will take no more rows. Unsent and later rows are discarded, so that
// memory and disk stay bounded, and the loss is logged once.
func (r *Reporter) archived() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.logArchived {
		return
	}
	r.logArchived = true
	left := r.store.end - r.sendFrom
	if err := r.store.drop(r.store.end); err != nil {
		r.log.WithError(err).Error("report: dropping log rows failed")
	}
	r.sendFrom = r.store.end
	r.log.Errorf("report: the forge has archived the log of task %d and takes no more rows; %d unsent rows and any later output are discarded", r.taskID, left)
}

func (r *Reporter) observeBuffer() {
	if r.o.Observer == nil {
		return
	}
	r.mu.Lock()
	n := r.store.end - r.sendFrom
	r.mu.Unlock()
	r.o.Observer.BufferRows(int(n))
}

// sendLog sends one UpdateLog from the first unacknowledged row. With
// noMore, the request that carries the last buffered row says no_more. It
// reports whether a no_more request was fully acknowledged, and whether the
// ack moved forward.
func (r *Reporter) sendLog(ctx context.Context, noMore bool) (finished, progress bool, err error) {
	r.mu.Lock()
	unsure := r.logUnsure
	r.mu.Unlock()
	if unsure {
		if progress, err = r.probeLog(ctx); err != nil {
			return false, false, err
		}
	}
	r.mu.Lock()
	if unsure && noMore && r.store.end == r.sendFrom && !r.logArchived {
		// The probe found every row taken, but not whether no_more was:
		// send it again with an empty row, as Close does.
		_ = r.store.append(row{t: r.o.Now(), s: ""})
	}
	index, rows, rerr := r.batchLocked()
	if rerr != nil {
		r.log.WithError(rerr).Error("report: reading buffered log rows failed")
	}
	if len(rows) == 0 {
		r.mu.Unlock()
		return false, progress, rerr
	}
	builtAt := time.Now()
	end := index + int64(len(rows))
	last := end == r.store.end
	hadFlush := r.flushNow
	if last {
		r.flushNow = false
	}
	r.mu.Unlock()

	if guard.Faults {
		for _, row := range rows {
			guard.Fault("reporter", row.GetContent())
		}
	}
	req := &runnerv1.UpdateLogRequest{TaskId: r.taskID, Index: index, Rows: rows, NoMore: noMore && last}
	cctx, cancel := context.WithTimeout(ctx, r.o.RPCTimeout)
	t0 := time.Now()
	resp, err := r.c.UpdateLog(cctx, connect.NewRequest(req))
	r.observeLog(err == nil, time.Since(t0))
	cancel()
	if err != nil {
		r.mu.Lock()
		if last && hadFlush {
			r.flushNow = true
		}
		r.logUnsure = r.logUnsure || mayHaveArrived(err)
		r.mu.Unlock()
		return false, progress, fmt.Errorf("update log of task %d at row %d (%d rows): %w", r.taskID, index, len(rows), err)
	}
	ack := resp.Msg.GetAckIndex()
	r.mu.Lock()
	defer r.mu.Unlock()
	progress = r.ackLocked(index, len(rows), ack) || progress
	if r.store.end > r.sendFrom {
		if r.sendFrom < end || len(rows) >= r.o.BatchRows {
			// Not all of the batch was taken, or more is queued behind a
			// full batch: go again at once.
			r.firstPendingAt = time.Time{}
		} else {
			// Every row still pending was appended after the batch was built.
			r.firstPendingAt = builtAt
		}
	}
	return req.NoMore && r.sendFrom >= end, progress, nil
}

// probeLog asks the forge how many rows it holds, with an UpdateLog that
// carries no rows (the forge answers it with its ack and writes nothing),
// and moves on from that ack. It is sent before resending after an attempt
// whose outcome is unknown (it timed out, or its connection broke after it
// was sent): Gitea does not serialise one task's UpdateLog calls, so rows
// resent while an earlier call that carried them is still being handled
// would be stored twice. It reports whether the ack moved forward.
func (r *Reporter) probeLog(ctx context.Context) (bool, error) {
	r.mu.Lock()
	index := r.sendFrom
	r.mu.Unlock()
	cctx, cancel := context.WithTimeout(ctx, r.o.RPCTimeout)
	t0 := time.Now()
	resp, err := r.c.UpdateLog(cctx, connect.NewRequest(&runnerv1.UpdateLogRequest{TaskId: r.taskID, Index: index}))
	r.observeLog(err == nil, time.Since(t0))
	cancel()
	if err != nil {
		return false, fmt.Errorf("update log of task %d (asking for the acknowledged row): %w", r.taskID, err)
	}
	ack := resp.Msg.GetAckIndex()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.logUnsure = false
	if ack <= r.sendFrom {
		return false, nil // nothing new taken; a smaller ack is handled by the next batch's answer
	}
	ack = min(ack, r.store.end)
	r.sendFrom = ack
	if err := r.store.drop(ack); err != nil {
		r.log.WithError(err).Error("report: dropping acknowledged log rows failed")
	}
	return true, nil
}

// observeLog reports one UpdateLog attempt to the Observer.
func (r *Reporter) observeLog(ok bool, d time.Duration) {
	if r.o.Observer == nil {
		return
	}
	r.o.Observer.LogSent(ok, d)
}

// mayHaveArrived reports whether a failed call may still have reached the
// forge: anything but a failure to connect.
func mayHaveArrived(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return false
	}
	return true
}

// batchLocked returns the next UpdateLog batch: placeholders for rows the
// forge lost, then stored rows. r.mu must be held.
func (r *Reporter) batchLocked() (int64, []*runnerv1.LogRow, error) {
	var rows []*runnerv1.LogRow
	if gap := r.store.base - r.sendFrom; gap > 0 {
		now := ts(r.o.Now())
		for range min(gap, int64(r.o.BatchRows)) {
			rows = append(rows, &runnerv1.LogRow{Time: now, Content: LostRowText})
		}
	}
	stored, err := r.store.read(r.o.BatchRows-len(rows), maxBatchBytes)
	for _, s := range stored {
		rows = append(rows, &runnerv1.LogRow{Time: ts(s.t), Content: s.s})
	}
	return r.sendFrom, rows, err
}

// ackLocked applies the forge's ack_index for a batch of n rows sent at
// index, and reports whether the ack moved forward. r.mu must be held.
func (r *Reporter) ackLocked(index int64, n int, ack int64) bool {
	end := index + int64(n)
	if ack > end {
		r.log.Warnf("report: the forge acknowledged log rows up to %d but only %d were sent; continuing from %d", ack, end, end)
		ack = end
	}
	if ack < r.store.base {
		r.log.Errorf("report: logs lost: the forge had acknowledged %d log rows and now reports only %d; rows %d to %d are gone and are resent as placeholder rows",
			r.store.base, ack, ack, r.store.base-1)
		progress := false
		if ack > r.sendFrom {
			progress = true
		}
		r.sendFrom = ack
		return progress
	}
	progress := ack > r.sendFrom
	r.sendFrom = ack
	if err := r.store.drop(ack); err != nil {
		r.log.WithError(err).Error("report: dropping acknowledged log rows failed")
	}
	return progress
}

// stateLoop sends an UpdateTask heartbeat every Interval, and at once after
// a step change or new outputs. Like logLoop, it returns when quit is
// closed, letting the call in flight finish.
func (r *Reporter) stateLoop(ctx context.Context, quit <-chan struct{}) {
	t := time.NewTicker(r.o.Interval)
	defer t.Stop()
	fails := 0
	for {
		if closed(quit) {
			return
		}
		err := r.sendState(ctx, runnerv1.Result_RESULT_UNSPECIFIED, time.Time{})
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			fails++
			if fails == 1 {
				r.log.WithError(err).Warnf("report: state heartbeat failed; retrying every %s", r.o.Interval)
			}
		case fails > 0:
			r.log.Infof("report: state heartbeat works again after %d failed attempts", fails)
			fails = 0
		}
		select {
		case <-ctx.Done():
			return
		case <-quit:
			return
		case <-t.C:
		case <-r.stateKick:
			t.Reset(r.o.Interval)
		}
	}
}

// closed reports whether c is closed, without waiting.
func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// sendState sends one UpdateTask with the current steps and unacknowledged
// outputs. A non-UNSPECIFIED result in the response to a progress report
// (result UNSPECIFIED) means the forge stopped the task.
func (r *Reporter) sendState(ctx context.Context, result runnerv1.Result, stoppedAt time.Time) error {
	r.mu.Lock()
	req := &runnerv1.UpdateTaskRequest{State: r.taskStateLocked(result, stoppedAt)}
	if len(r.outputs) > 0 {
		req.Outputs = make(map[string]string, len(r.outputs))
		for k, v := range r.outputs {
			req.Outputs[k] = v
		}
	}
	r.mu.Unlock()

	cctx, cancel := context.WithTimeout(ctx, r.o.RPCTimeout)
	t0 := time.Now()
	resp, err := r.c.UpdateTask(cctx, connect.NewRequest(req))
	d := time.Since(t0)
	cancel()
	if r.o.Observer != nil {
		r.o.Observer.StateSent(err == nil, d)
	}
	if err != nil {
		return fmt.Errorf("update state of task %d: %w", r.taskID, err)
	}
	msg := resp.Msg
	r.mu.Lock()
	for _, k := range msg.GetSentOutputs() {
		delete(r.outputs, k)
		r.sentOutputs[k] = true
	}
	stop := result == runnerv1.Result_RESULT_UNSPECIFIED &&
		msg.GetState().GetResult() != runnerv1.Result_RESULT_UNSPECIFIED &&
		r.serverResult == runnerv1.Result_RESULT_UNSPECIFIED
	if stop {
		r.serverResult = msg.GetState().GetResult()
	}
	cancelJob := r.jobCancel
	r.mu.Unlock()
	if stop {
		r.log.Infof("report: the forge stopped the task with result %s; cancelling the job", msg.GetState().GetResult())
		r.cancelOne.Do(func() { close(r.cancelled) })
		if cancelJob != nil {
			cancelJob()
		}
	}
	return nil
}

// permanent reports whether retrying err cannot help.
func permanent(err error) bool {
	if client.IsUnauthenticated(err) {
		return true
	}
	switch connect.CodeOf(err) {
	case connect.CodeUnauthenticated, connect.CodePermissionDenied, connect.CodeInvalidArgument, connect.CodeUnimplemented:
		return true
	}
	return false
}
