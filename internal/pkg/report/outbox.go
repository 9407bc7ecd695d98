package report

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"connectrpc.com/connect"
	runnerv1 "gitea.dev/actions-proto-go/runner/v1"
	"github.com/sirupsen/logrus"
	"google.golang.org/protobuf/proto"

	"github.com/forgeload/forgeload/internal/pkg/backoff"
	"github.com/forgeload/forgeload/internal/pkg/client"
)

// Bounds of an [Outbox].
const (
	// OutboxMaxTasks is the most finished tasks an Outbox keeps; keeping
	// one more drops the oldest, with an error in the daemon log.
	OutboxMaxTasks = 100
	// OutboxMaxTaskBytes caps the log rows kept for one task; rows past it
	// are replaced by one [DroppedRowsText] row.
	OutboxMaxTaskBytes = 64 << 20
	// outboxMaxRecord bounds one record read back, against a damaged file.
	outboxMaxRecord = 16 << 20
)

const (
	outboxMagic  = "forgeload-pending v1\n"
	outboxSuffix = ".pending"
)

// Outbox keeps, on disk, the final reports of finished tasks that the forge
// did not take before [Options].CloseTimeout (an outage that covers a job's
// end), and delivers them when the forge answers again, also after a daemon
// restart. Each task is one file in the Outbox's directory holding its
// final UpdateTask and its unacknowledged rows as UpdateLog requests; the
// forge ignores rows it already has, so a delivery that is cut short is
// simply made again. Create it with [OpenOutbox]; give it to every Reporter
// in [Options].Outbox and run [Outbox.Run] for the daemon's lifetime. Its
// methods are safe for concurrent use.
type Outbox struct {
	dir  string
	log  *logrus.Entry
	kick chan struct{}

	mu sync.Mutex // serialises writes, deliveries and removals of files
}

// OpenOutbox opens (creating it with mode 0700 if needed) the outbox
// directory dir and logs what it holds. log may be nil.
func OpenOutbox(dir string, log *logrus.Entry) (*Outbox, error) {
	if log == nil {
		l := logrus.New()
		l.SetOutput(io.Discard)
		log = logrus.NewEntry(l)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("open the outbox of undelivered reports %q: %w (check that its parent directory is writable)", dir, err)
	}
	o := &Outbox{dir: dir, log: log, kick: make(chan struct{}, 1)}
	if ids := o.Pending(); len(ids) > 0 {
		o.log.Warnf("report: %d finished tasks wait for the forge to take their final logs and results (tasks %s); they are delivered when it answers", len(ids), idList(ids))
	}
	return o, nil
}

// Pending returns the ids of the tasks waiting in the outbox, oldest first.
func (o *Outbox) Pending() []int64 {
	ents, err := os.ReadDir(o.dir)
	if err != nil {
		return nil
	}
	type f struct {
		id  int64
		mod time.Time
	}
	var fs []f
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), outboxSuffix)
		if !ok || !strings.HasPrefix(name, "task-") {
			continue
		}
		id, err := strconv.ParseInt(strings.TrimPrefix(name, "task-"), 10, 64)
		if err != nil {
			continue
		}
		var mod time.Time
		if fi, err := e.Info(); err == nil {
			mod = fi.ModTime()
		}
		fs = append(fs, f{id, mod})
	}
	sort.Slice(fs, func(i, j int) bool {
		if !fs[i].mod.Equal(fs[j].mod) {
			return fs[i].mod.Before(fs[j].mod)
		}
		return fs[i].id < fs[j].id
	})
	ids := make([]int64, len(fs))
	for i, x := range fs {
		ids[i] = x.id
	}
	return ids
}

func (o *Outbox) path(id int64) string {
	return filepath.Join(o.dir, fmt.Sprintf("task-%d%s", id, outboxSuffix))
}

// keep writes task id's final state and log batches atomically, dropping
// the oldest tasks beyond OutboxMaxTasks, and wakes Run.
func (o *Outbox) keep(id int64, state *runnerv1.UpdateTaskRequest, logs []*runnerv1.UpdateLogRequest) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	tmp, err := os.CreateTemp(o.dir, ".tmp-*")
	if err != nil {
		return fmt.Errorf("keep the final report of task %d in %q: %w", id, o.dir, err)
	}
	defer os.Remove(tmp.Name()) //nolint:errcheck // gone after the rename
	w := bufio.NewWriter(tmp)
	_, err = w.WriteString(outboxMagic)
	for _, m := range append([]proto.Message{state}, protoList(logs)...) {
		if err != nil {
			break
		}
		err = writeRecord(w, m)
	}
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), o.path(id))
	}
	if err != nil {
		return fmt.Errorf("keep the final report of task %d in %q: %w (free disk space there)", id, o.dir, err)
	}
	if ids := o.Pending(); len(ids) > OutboxMaxTasks {
		for _, old := range ids[:len(ids)-OutboxMaxTasks] {
			_ = os.Remove(o.path(old))
			o.log.Errorf("report: more than %d finished tasks wait for the forge: the final report of task %d is dropped, and the forge will show it running until its own timeout", OutboxMaxTasks, old)
		}
	}
	kick(o.kick)
	return nil
}

func protoList(logs []*runnerv1.UpdateLogRequest) []proto.Message {
	out := make([]proto.Message, len(logs))
	for i, l := range logs {
		out[i] = l
	}
	return out
}

func writeRecord(w *bufio.Writer, m proto.Message) error {
	b, err := proto.Marshal(m)
	if err != nil {
		return err
	}
	var n [binary.MaxVarintLen64]byte
	if _, err := w.Write(n[:binary.PutUvarint(n[:], uint64(len(b)))]); err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

func readRecord(r *bufio.Reader, m proto.Message) error {
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return err
	}
	if n > outboxMaxRecord {
		return fmt.Errorf("record of %d bytes is larger than any forgeload writes", n)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return err
	}
	return proto.Unmarshal(b, m)
}

// Run delivers the waiting reports, again after each new one and with a
// capped backoff (every to 1 minute, ±20% jitter) while the forge fails, until ctx
// ends. It returns early, with an error, when the forge says the runner is
// unregistered (the files stay for a later run). every 0 means 2s.
func (o *Outbox) Run(ctx context.Context, c Client, every time.Duration) error {
	if every <= 0 {
		every = 2 * time.Second
	}
	bo := backoff.Backoff{Min: every, Max: max(every, time.Minute)}
	failing := false
	for {
		left, err := o.DeliverAll(ctx, c)
		switch {
		case ctx.Err() != nil:
			return nil
		case client.IsUnauthenticated(err):
			return fmt.Errorf("deliver finished tasks' reports: %w", err)
		case err != nil:
			if !failing {
				o.log.WithError(err).Warnf("report: %d finished tasks still wait for the forge; retrying with backoff", left)
			}
			failing = true
		case failing:
			o.log.Info("report: the forge took every waiting final report")
			failing = false
			bo.Reset()
		}
		t := time.NewTimer(time.Hour)
		var wait <-chan time.Time
		if err != nil {
			t.Reset(backoff.Jitter(bo.Next(), rand.Float64()))
			wait = t.C
		}
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-o.kick:
		case <-wait:
		}
		t.Stop()
	}
}

// DeliverAll tries once to deliver every waiting report, oldest first. It
// returns how many are still waiting and the first error that kept one
// waiting. It stops at the first error that concerns them all (the forge
// is unreachable, or says the runner is unregistered). A report the forge
// refuses for good (for instance the task belongs to another runner, after
// `register --replace`) is dropped with an error in the log.
func (o *Outbox) DeliverAll(ctx context.Context, c Client) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, id := range o.Pending() {
		err := o.deliver(ctx, c, id)
		switch {
		case err == nil:
			_ = os.Remove(o.path(id))
			o.log.Infof("report: delivered the final log and result of task %d, kept while the forge was unreachable", id)
		case ctx.Err() != nil || client.Retryable(err) || client.IsUnauthenticated(err):
			return len(o.Pending()), err
		default:
			_ = os.Remove(o.path(id))
			o.log.WithError(err).Errorf("report: the forge refused the kept final report of task %d; it is dropped", id)
		}
	}
	return 0, nil
}

// deliver sends task id's kept rows, then its final state.
func (o *Outbox) deliver(ctx context.Context, c Client, id int64) error {
	f, err := os.Open(o.path(id))
	if err != nil {
		return err
	}
	defer f.Close()
	r := bufio.NewReader(f)
	magic := make([]byte, len(outboxMagic))
	if _, err := io.ReadFull(r, magic); err != nil || string(magic) != outboxMagic {
		return fmt.Errorf("kept report of task %d is damaged: no %q header", id, strings.TrimSpace(outboxMagic))
	}
	state := &runnerv1.UpdateTaskRequest{}
	if err := readRecord(r, state); err != nil {
		return fmt.Errorf("kept report of task %d is damaged: %w", id, err)
	}
	archived := false
	for !archived {
		req := &runnerv1.UpdateLogRequest{}
		if err := readRecord(r, req); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return fmt.Errorf("kept report of task %d is damaged: %w", id, err)
		}
		for {
			cctx, cancel := context.WithTimeout(ctx, DefaultRPCTimeout)
			resp, err := c.UpdateLog(cctx, connect.NewRequest(req))
			cancel()
			if connect.CodeOf(err) == connect.CodeAlreadyExists {
				archived = true
				break
			}
			if err != nil {
				return fmt.Errorf("update log of task %d: %w", id, err)
			}
			ack, end := resp.Msg.GetAckIndex(), req.GetIndex()+int64(len(req.GetRows()))
			if ack >= end {
				break
			}
			if ack < req.GetIndex() {
				// The forge lost rows it had taken before this batch; they
				// are no longer here, so placeholders keep the later rows
				// in place (see LostRowText).
				gap := req.GetIndex() - ack
				if gap > int64(OutboxMaxTaskBytes/len(LostRowText)) {
					return fmt.Errorf("update log of task %d: the forge lost %d rows it had taken", id, gap)
				}
				o.log.Errorf("report: the forge lost log rows %d to %d of task %d after taking them; placeholders are sent in their place", ack, req.GetIndex()-1, id)
				lost := make([]*runnerv1.LogRow, gap, gap+int64(len(req.Rows)))
				for i := range lost {
					lost[i] = &runnerv1.LogRow{Time: state.GetState().GetStoppedAt(), Content: LostRowText}
				}
				req.Rows, req.Index = append(lost, req.Rows...), ack
				continue
			}
			req.Rows, req.Index = req.Rows[ack-req.GetIndex():], ack
		}
	}
	cctx, cancel := context.WithTimeout(ctx, DefaultRPCTimeout)
	defer cancel()
	if _, err := c.UpdateTask(cctx, connect.NewRequest(state)); err != nil {
		return fmt.Errorf("update state of task %d: %w", id, err)
	}
	return nil
}

func idList(ids []int64) string {
	s := make([]string, 0, min(len(ids), 10))
	for _, id := range ids[:min(len(ids), 10)] {
		s = append(s, strconv.FormatInt(id, 10))
	}
	if len(ids) > 10 {
		s = append(s, "…")
	}
	return strings.Join(s, ", ")
}
