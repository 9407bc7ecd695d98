// Package report owns the forge reporter: it makes one task look, on the
// forge, exactly like a job of Gitea's own runner, and it makes sure a forge
// outage never loses or duplicates a log row.
//
// A [Reporter] keeps one task-wide buffer of log rows. Each step's rows are
// described by its log_index (the absolute row of its first line) and
// log_length; rows written outside any step (setup, teardown) belong to no
// step. Rows are sent with UpdateLog in batches, by size ([Options].BatchRows)
// and by time (no later than [Options].LogInterval, and at once on a step
// change), always from the first row the forge has not acknowledged;
// ack_index decides where the next batch starts, so resends are idempotent
// and a forge that loses acknowledged rows gets placeholder rows
// ([LostRowText]) and a loud error in the daemon log. Unacknowledged rows
// beyond [Options].MemRows or [Options].MemBytes are spilled, in order, to a
// file in [Options].SpillDir, capped at [Options].SpillBytes; when that is
// full too, memory may grow to twice its bounds and later rows are dropped,
// with one [DroppedRowsText] row in their place. After an UpdateLog whose
// answer was lost, an UpdateLog without rows asks for the ack before any
// row is resent, so that two calls never carry the same rows at once.
// Producers never wait on the network. If the
// forge answers AlreadyExists (it archived the log, e.g. after its reaper
// failed the task), later rows are discarded and that is logged once.
//
// Every row is masked by the task's one masker: the values in
// [Options].Masks and those added with [Reporter.AddMask] and
// [Reporter.AddJobMask] become "***", also when a value is split across two
// writes (only complete lines become rows), line by line for multi-line
// values, and in their JSON-, Go-, HTML- and Markdown-escaped, URL-encoded
// and base64 forms.
// Overlapping or adjacent occurrences become one "***". Values shorter than
// [MinMaskLen] bytes are ignored; a job adds at most [MaxJobMasks] values.
// A line longer than a row is cut neither inside a masked value nor inside
// a UTF-8 character. [Reporter.Mask] applies the same masker to text that
// leaves by other ways (job summaries). Rows are valid UTF-8.
//
// A second goroutine sends UpdateTask every [Options].Interval as a
// heartbeat and at once on every step change, with all step states and the
// outputs not yet listed in sent_outputs. A non-UNSPECIFIED result in a
// response means the forge stopped the task: the job context is cancelled,
// [Reporter.Cancelled] is closed and [Reporter.ServerResult] reports it.
//
// [Reporter.Close] flushes everything, sends the last UpdateLog with
// no_more=true and then the final UpdateTask, retrying on a context detached
// from the job and bounded by [Options].CloseTimeout. A call in flight when
// Close begins is let finish, never aborted. What the forge has not taken
// by then goes, with an [Outbox] in [Options].Outbox, to disk, and the
// Outbox delivers it when the forge answers again, also after a restart.
//
// # Usage
//
//	r := report.New(client, task.GetId(), len(steps), report.Options{
//		Masks:    secretValues, // secrets, task token, runtime token
//		Interval: cfg.Runner.ReportInterval,
//		Logger:   log,
//	})
//	ctx = r.Start(ctx) // cancelled when the forge stops the task
//	r.Logf(-1, "forgeload %s on %s", version, host)
//	for i, s := range steps {
//		r.StepStart(i)
//		err := s.Run(ctx, r.Writer(i))
//		r.StepEnd(i, resultOf(err))
//	}
//	r.SetOutputs(jobOutputs)
//	if err := r.Close(jobResult); err != nil {
//		log.WithError(err).Error("report task")
//	}
package report
