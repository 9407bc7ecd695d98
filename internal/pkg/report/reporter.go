package report

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"connectrpc.com/connect"
	runnerv1 "gitea.dev/actions-proto-go/runner/v1"
	"github.com/sirupsen/logrus"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// Client is the part of the forge client the Reporter uses. The forge
// client (internal/pkg/client.Client) and the generated
// runnerv1connect.RunnerServiceClient implement it.
type Client interface {
	UpdateTask(context.Context, *connect.Request[runnerv1.UpdateTaskRequest]) (*connect.Response[runnerv1.UpdateTaskResponse], error)
	UpdateLog(context.Context, *connect.Request[runnerv1.UpdateLogRequest]) (*connect.Response[runnerv1.UpdateLogResponse], error)
}

// Observer receives metrics events from a Reporter. Its methods are called
// from the Reporter's own goroutines, never while a producer waits, and must
// not block.
type Observer interface {
	// LogSent is called after every UpdateLog attempt, with whether it
	// succeeded and how long it took.
	LogSent(ok bool, d time.Duration)
	// StateSent is called after every UpdateTask attempt, with whether it
	// succeeded and how long it took.
	StateSent(ok bool, d time.Duration)
	// BufferRows reports how many log rows this Reporter holds that the
	// forge has not acknowledged yet.
	BufferRows(n int)
}

// Defaults for the zero fields of Options.
const (
	// DefaultInterval is the default UpdateTask heartbeat period.
	DefaultInterval = time.Second
	// DefaultLogInterval is the default longest wait of a row before it is sent.
	DefaultLogInterval = time.Second
	// DefaultBatchRows is the default most rows in one UpdateLog.
	DefaultBatchRows = 500
	// DefaultMemRows is the default most unacknowledged rows kept in memory.
	DefaultMemRows = 10000
	// DefaultMemBytes is the default most content bytes of rows kept in memory.
	DefaultMemBytes = 8 << 20
	// DefaultSpillBytes is the default cap of a task's log spill file.
	DefaultSpillBytes = 256 << 20
	// DefaultCloseTimeout is the default bound of Close's final delivery.
	DefaultCloseTimeout = 30 * time.Second
	// DefaultRPCTimeout is the default bound of one UpdateTask or UpdateLog call.
	DefaultRPCTimeout = 10 * time.Second

	// maxBatchBytes bounds the row content of one UpdateLog request, to stay
	// under common reverse-proxy body limits.
	maxBatchBytes = 512 << 10
)

// Options configures a Reporter. The zero value of every field means its
// documented default.
type Options struct {
	// Interval is the UpdateTask heartbeat period. Default 1s. A server-side
	// cancel is seen within one Interval.
	Interval time.Duration
	// LogInterval is the longest a log row waits before it is sent while the
	// forge is reachable. Default 1s.
	LogInterval time.Duration
	// BatchRows is the most rows in one UpdateLog; a full batch is sent at
	// once. Default 500.
	BatchRows int
	// MemRows is how many unacknowledged rows are kept in memory before the
	// oldest are spilled to a file. Default 10000.
	MemRows int
	// MemBytes bounds the content bytes of the rows kept in memory, in the
	// same way as MemRows. Default 8 MiB.
	MemBytes int
	// SpillDir is the directory of the spill file. Default os.TempDir().
	SpillDir string
	// SpillBytes caps the spill file. When it is full (or the disk refuses
	// writes), memory may hold up to twice MemRows and MemBytes; beyond
	// that new rows are dropped, and once the forge has taken rows again a
	// row saying how many were dropped ([DroppedRowsText]) takes their
	// place. Default 256 MiB.
	SpillBytes int64
	// CloseTimeout bounds Close's final delivery of logs and state. Default 30s.
	CloseTimeout time.Duration
	// Outbox, if not nil, keeps what Close could not deliver within
	// CloseTimeout (the forge was unreachable) on disk, and delivers it
	// when the forge answers again; Close then returns nil. See [Outbox].
	Outbox *Outbox
	// RPCTimeout bounds each UpdateTask and UpdateLog call. Default 10s.
	RPCTimeout time.Duration
	// Masks are secret values masked in every row: the task's secrets, the
	// task token and the runtime token. See AddMask for the rules.
	Masks []string
	// Now gives the time stamped on rows and steps. Default time.Now. Timers
	// always use the runtime clock (so tests use testing/synctest).
	Now func() time.Time
	// Logger receives the Reporter's own problems (never row content or
	// secrets). Default: discard.
	Logger *logrus.Entry
	// Observer, if not nil, receives metrics events.
	Observer Observer
}

func (o Options) withDefaults() Options {
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	if o.LogInterval <= 0 {
		o.LogInterval = DefaultLogInterval
	}
	if o.BatchRows <= 0 {
		o.BatchRows = DefaultBatchRows
	}
	if o.MemRows <= 0 {
		o.MemRows = DefaultMemRows
	}
	if o.MemBytes <= 0 {
		o.MemBytes = DefaultMemBytes
	}
	if o.SpillBytes <= 0 {
		o.SpillBytes = DefaultSpillBytes
	}
	if o.CloseTimeout <= 0 {
		o.CloseTimeout = DefaultCloseTimeout
	}
	if o.RPCTimeout <= 0 {
		o.RPCTimeout = DefaultRPCTimeout
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		l := logrus.New()
		l.SetOutput(io.Discard)
		o.Logger = logrus.NewEntry(l)
	}
	return o
}

// step is the reporter's view of one job step.
type step struct {
	started, stopped time.Time
	result           runnerv1.Result
	logIndex         int64
	logLength        int64
	hasRows          bool
	ended            bool
}

// Reporter streams one task's log rows, step states, outputs and result to
// the forge, as Gitea's own runner does. Create it with New, call Start,
// feed it through Writer, Logf, StepStart and StepEnd, and finish with Close.
//
// All methods are safe for concurrent use. Appending a row never waits on the
// network: rows are buffered (in memory, then in a spill file) and sent by the
// Reporter's own goroutines, which Close stops and waits for. The zero value
// is not usable; call New.
type Reporter struct {
	c      Client
	taskID int64
	o      Options
	log    *logrus.Entry

	mask *masker // the job's one masker: rows, outputs, Mask

	mu             sync.Mutex
	store          *rowStore
	sendFrom       int64 // the forge's ack: first row it still needs (≤ store.base)
	firstPendingAt time.Time
	flushNow       bool
	steps          []step
	writers        []*lineWriter
	outputs        map[string]string // set but not yet in sent_outputs
	sentOutputs    map[string]bool
	serverResult   runnerv1.Result
	startedAt      time.Time
	closing        bool  // Close has begun: no more step changes
	sealed         bool  // Close has flushed the writers: rows are discarded
	logArchived    bool  // the forge answered AlreadyExists: it takes no more rows
	logUnsure      bool  // an UpdateLog with rows may have reached the forge unanswered
	discarded      int64 // rows discarded because the log was archived
	spillFails     int
	loopPanic      bool  // a reporter loop panicked: the job fails
	dropped        int64 // rows refused by a full buffer, not yet reported by a marker row
	droppedTotal   int64

	logKick   chan struct{}
	stateKick chan struct{}
	cancelled chan struct{}
	cancelOne sync.Once

	parent    context.Context
	jobCtx    context.Context
	jobCancel context.CancelFunc
	loopStop  context.CancelFunc
	loopQuit  chan struct{} // closed by Close: the loops make no new call
	wg        sync.WaitGroup
	started   bool

	closeOnce sync.Once
	closeErr  error

	lineLimit int // longest unfinished line kept before a forced cut; maxRowBytes except in tests
}

// New returns a Reporter for task taskID with steps steps. It sends nothing
// until Start.
func New(c Client, taskID int64, steps int, o Options) *Reporter {
	o = o.withDefaults()
	r := &Reporter{
		c:           c,
		taskID:      taskID,
		o:           o,
		log:         o.Logger.WithField("task_id", taskID),
		store:       newRowStore(o.SpillDir, fmt.Sprintf("forgeload-task-%d-*.log", taskID), o.MemRows, o.MemBytes, o.SpillBytes),
		steps:       make([]step, max(steps, 0)),
		outputs:     map[string]string{},
		sentOutputs: map[string]bool{},
		logKick:     make(chan struct{}, 1),
		stateKick:   make(chan struct{}, 1),
		cancelled:   make(chan struct{}),
		loopQuit:    make(chan struct{}),
		parent:      context.Background(),
		jobCtx:      context.Background(),
		lineLimit:   maxRowBytes,
	}
	r.mask = newMasker(o.Masks...)
	return r
}

// Start records the task's start time, starts the Reporter's log and
// heartbeat goroutines, and returns the job context. The job context is
// cancelled when ctx is, when the forge stops the task (see Cancelled), and
// at the end of Close. The goroutines outlive ctx: they run until Close.
// Calling Start more than once returns the first job context.
func (r *Reporter) Start(ctx context.Context) context.Context {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.started || r.closing {
		return r.jobCtx
	}
	r.started = true
	r.startedAt = r.o.Now()
	r.parent = ctx
	r.jobCtx, r.jobCancel = context.WithCancel(ctx)
	loopCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	r.loopStop = stop
	r.wg.Add(2)
	go func() { defer r.wg.Done(); r.runLoop("log", func() { r.logLoop(loopCtx, r.loopQuit) }) }()
	go func() { defer r.wg.Done(); r.runLoop("state", func() { r.stateLoop(loopCtx, r.loopQuit) }) }()
	return r.jobCtx
}

// Context returns the job context returned by Start, or
// context.Background() before Start.
func (r *Reporter) Context() context.Context {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.jobCtx
}

// Cancelled returns a channel that is closed when the forge has stopped the
// task (cancelled in the UI, or failed by a reaper).
func (r *Reporter) Cancelled() <-chan struct{} { return r.cancelled }

// ServerResult returns the result with which the forge stopped the task, or
// RESULT_UNSPECIFIED if it has not.
func (r *Reporter) ServerResult() runnerv1.Result {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.serverResult
}

// StepStart marks step i (0-based) as started now and reports it at once.
// Out-of-range steps are ignored.
func (r *Reporter) StepStart(i int) {
	r.mu.Lock()
	if i < 0 || i >= len(r.steps) || r.closing {
		closing := r.closing
		r.mu.Unlock()
		if !closing {
			r.log.Warnf("report: StepStart(%d) ignored: the task has %d steps", i, len(r.steps))
		}
		return
	}
	st := &r.steps[i]
	if st.started.IsZero() {
		st.started = r.o.Now()
		if !st.hasRows {
			st.logIndex = r.store.end
		}
	}
	r.flushNow = true
	r.mu.Unlock()
	kick(r.logKick)
	kick(r.stateKick)
}

// StepEnd flushes step i's unfinished output lines, marks it stopped now with
// result res, and reports it at once. Rows written for step i afterwards
// belong to no step. A step that never started gets no times. Out-of-range
// steps are ignored.
func (r *Reporter) StepEnd(i int, res runnerv1.Result) {
	r.mu.Lock()
	if i < 0 || i >= len(r.steps) {
		r.mu.Unlock()
		r.log.Warnf("report: StepEnd(%d) ignored: the task has %d steps", i, len(r.steps))
		return
	}
	ws := r.writersOf(i)
	r.mu.Unlock()
	for _, w := range ws {
		w.flush()
	}
	r.mu.Lock()
	st := &r.steps[i]
	if !st.ended {
		st.ended = true
		st.result = res
		if !st.started.IsZero() {
			st.stopped = r.o.Now()
		}
	}
	r.flushNow = true
	r.mu.Unlock()
	kick(r.logKick)
	kick(r.stateKick)
}

func (r *Reporter) writersOf(i int) []*lineWriter {
	var ws []*lineWriter
	for _, w := range r.writers {
		if w.step == i {
			ws = append(ws, w)
		}
	}
	return ws
}

// Writer returns a writer whose output becomes log rows of step (0-based;
// -1 or any out-of-range value means outside any step). Only complete lines
// become rows, each stamped with the time its first byte was written; an
// unfinished line is flushed by StepEnd and Close. Every row is masked and
// converted to valid UTF-8. Each call returns a new writer with its own line
// buffer (use one per stream, e.g. stdout and stderr); each is safe for
// concurrent use. Writes never fail and never wait on the network; after
// Close they are discarded.
func (r *Reporter) Writer(step int) io.Writer {
	w := &lineWriter{r: r, step: step}
	r.mu.Lock()
	r.writers = append(r.writers, w)
	r.mu.Unlock()
	return w
}

// Logf formats a message and appends it as rows of step (-1 = outside any
// step), one row per line, masked like Writer output.
func (r *Reporter) Logf(step int, format string, args ...any) {
	s := strings.TrimSuffix(fmt.Sprintf(format, args...), "\n")
	now := r.o.Now()
	var rows []string
	for line := range strings.SplitSeq(s, "\n") {
		rows = append(rows, cleanLine(r.mask, []byte(line))...)
	}
	r.mu.Lock()
	for _, c := range rows {
		r.appendLocked(step, now, c)
	}
	r.mu.Unlock()
}

// AddMask masks v in every row appended from now on, including lines still
// being written, and in what Mask returns. Each line of a multi-line value
// is masked on its own, after trimming surrounding white space; lines
// shorter than MinMaskLen bytes are ignored. Each line is also masked as
// JSON and Go string escapes, URL encodings and base64 write it. Rows
// already appended are not changed. AddMask is for values the runner
// knows to be secret (credentials it derives); AddJobMask is for values a
// job asks to mask.
func (r *Reporter) AddMask(v string) {
	r.mask.add(v)
}

// AddJobMask is AddMask for a value the job asks to mask (::add-mask::),
// within a per-job cap: a value whose new lines would take the job past
// MaxJobMasks values or MaxJobMaskBytes bytes is not masked at all, and
// the error says so.
func (r *Reporter) AddJobMask(v string) error {
	return r.mask.addJob(v)
}

// Mask returns s with every masked value replaced, exactly as in rows: for
// text that leaves the runner other than as a log row, such as job
// summaries.
func (r *Reporter) Mask(s string) string {
	return r.mask.apply(s)
}

// SetOutputs records job outputs. They are sent with every UpdateTask until
// the forge lists them in sent_outputs. A key longer than 255 bytes or a
// value longer than 1 MiB is dropped with a warning row, as the forge would
// ignore it; so is a value that contains a masked secret (outputs are not
// masked, so sending it would leak the secret). The forge keeps the first
// value sent for a key.
func (r *Reporter) SetOutputs(m map[string]string) {
	const maxKey, maxValue = 255, 1 << 20
	var warn []string
	r.mu.Lock()
	for k, v := range m {
		switch {
		case k == "":
			warn = append(warn, "Warning: an output with an empty name was dropped")
		case len(k) > maxKey:
			warn = append(warn, fmt.Sprintf("Warning: output %q… was dropped: its name is %d bytes, the forge allows %d", truncate(k, 40), len(k), maxKey))
		case len(v) > maxValue:
			warn = append(warn, fmt.Sprintf("Warning: output %q was dropped: its value is %d bytes, the forge allows %d", k, len(v), maxValue))
		case r.mask.apply(v) != v:
			warn = append(warn, fmt.Sprintf("Warning: output %q was dropped: its value contains a secret", k))
		case r.sentOutputs[k]:
			// The forge keeps the first value; nothing to send.
		default:
			r.outputs[k] = v
		}
	}
	r.mu.Unlock()
	for _, w := range warn {
		r.Logf(-1, "%s", w)
	}
	if len(m) > 0 {
		kick(r.stateKick)
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "")
}

// appendLocked stores one row. r.mu must be held.
func (r *Reporter) appendLocked(stepIdx int, t time.Time, content string) {
	if r.sealed {
		return
	}
	if r.logArchived {
		r.discarded++
		return
	}
	if r.dropped > 0 && !r.appendDroppedLocked(t, false) {
		r.dropLocked()
		return
	}
	idx := r.store.end
	if err := r.store.append(row{t: t, s: content}); err != nil {
		if errors.Is(err, errFull) {
			r.dropLocked()
			return
		}
		r.spillFails++
		if r.spillFails == 1 {
			r.log.WithError(err).Error("report: cannot spill log rows to disk; keeping them in memory")
		}
	}
	if stepIdx >= 0 && stepIdx < len(r.steps) && !r.steps[stepIdx].ended {
		st := &r.steps[stepIdx]
		if !st.hasRows {
			st.hasRows = true
			st.logIndex = idx
		}
		st.logLength = idx + 1 - st.logIndex
	}
	pending := r.store.end - r.sendFrom
	if pending == 1 {
		r.firstPendingAt = time.Now()
		kick(r.logKick)
	} else if pending >= int64(r.o.BatchRows) {
		kick(r.logKick)
	}
}

// DroppedRowsText is the content of the row that stands for rows dropped
// because the log buffer (memory and spill file) was full while the forge
// took no rows; %d is how many.
const DroppedRowsText = "[forgeload] %d log rows were dropped here: the runner's log buffer (memory and spill file) was full while the forge did not take rows"

// dropLocked counts one row refused by a full buffer. r.mu must be held.
func (r *Reporter) dropLocked() {
	r.dropped++
	r.droppedTotal++
	if r.droppedTotal == 1 {
		r.log.Errorf("report: the log buffer of task %d is full (%d rows or %s in memory, and a spill file capped at %s that is full or cannot be written) and the forge is not taking rows: later rows are dropped until it does, and a row says how many",
			r.taskID, 2*r.o.MemRows, sizeText(int64(2*r.o.MemBytes)), sizeText(r.o.SpillBytes))
	}
}

// appendDroppedLocked stores the row that says how many rows were
// dropped, and reports whether it was stored. always stores it even past
// the memory bound (once, at Close). r.mu must be held.
func (r *Reporter) appendDroppedLocked(t time.Time, always bool) bool {
	rw := row{t: t, s: fmt.Sprintf(DroppedRowsText, r.dropped)}
	var err error
	if always {
		err = r.store.appendAlways(rw)
	} else {
		err = r.store.append(rw)
	}
	if errors.Is(err, errFull) {
		return false
	}
	r.dropped = 0
	return true
}

func kick(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// lineWriter turns a byte stream into rows, one per complete line.
type lineWriter struct {
	r    *Reporter
	step int

	mu      sync.Mutex
	buf     []byte
	startAt time.Time
}

// Write implements io.Writer. It always consumes all of p.
func (w *lineWriter) Write(p []byte) (int, error) {
	n := len(p)
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.r.o.Now()
	m := w.r.mask
	var out []string
	var outAt []time.Time
	for len(p) > 0 {
		if len(w.buf) == 0 {
			w.startAt = now
		}
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			w.buf = append(w.buf, p...)
			break
		}
		line := p[:i]
		if len(w.buf) > 0 {
			w.buf = append(w.buf, line...)
			line = w.buf
		}
		for _, c := range cleanLine(m, line) {
			out = append(out, c)
			outAt = append(outAt, w.startAt)
		}
		w.buf = w.buf[:0]
		p = p[i+1:]
	}
	// Bound an endless line: emit row-sized prefixes that cut neither a
	// secret nor a character, keeping enough of the tail to recognise a
	// secret that continues in the next write.
	for {
		rows, c := m.cutLong(w.buf, w.r.lineLimit)
		if c <= 0 {
			break
		}
		for _, s := range rows {
			out = append(out, s)
			outAt = append(outAt, w.startAt)
		}
		w.buf = append(w.buf[:0], w.buf[c:]...)
		w.startAt = now
	}
	if cap(w.buf) > 4*maxRowBytes && len(w.buf) < maxRowBytes {
		w.buf = append([]byte(nil), w.buf...)
	}
	if len(out) > 0 {
		w.r.mu.Lock()
		for i, s := range out {
			w.r.appendLocked(w.step, outAt[i], s)
		}
		w.r.mu.Unlock()
	}
	return n, nil
}

// flush emits the unfinished line, if any.
func (w *lineWriter) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) == 0 {
		return
	}
	rows := cleanLine(w.r.mask, w.buf)
	w.buf = w.buf[:0]
	w.r.mu.Lock()
	for _, s := range rows {
		w.r.appendLocked(w.step, w.startAt, s)
	}
	w.r.mu.Unlock()
}

func ts(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}

// taskStateLocked builds the TaskState to send. r.mu must be held.
func (r *Reporter) taskStateLocked(result runnerv1.Result, stoppedAt time.Time) *runnerv1.TaskState {
	st := &runnerv1.TaskState{
		Id:        r.taskID,
		Result:    result,
		StartedAt: ts(r.startedAt),
		StoppedAt: ts(stoppedAt),
		Steps:     make([]*runnerv1.StepState, len(r.steps)),
	}
	for i, s := range r.steps {
		st.Steps[i] = &runnerv1.StepState{
			Id:        int64(i),
			Result:    s.result,
			StartedAt: ts(s.started),
			StoppedAt: ts(s.stopped),
			LogIndex:  s.logIndex,
			LogLength: s.logLength,
		}
	}
	return st
}
