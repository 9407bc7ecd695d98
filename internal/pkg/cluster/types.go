package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/forgeload/forgeload/internal/pkg/cluster/segment"
	"github.com/forgeload/forgeload/internal/pkg/cluster/snapshot"
)

// SegmentRunner runs this host's share of a plan. The daemon adapts the load
// engine to it: Owns → Options.Owns, ScaleVUs → Options.ScaleVUs, StartAt and
// Offset → Options.StartAt and the start offset, Sink → Options.OnSecond.
//
// RunSegment must not send load before a.StartAt+a.Offset, must return
// promptly when ctx is cancelled (that is how self-fencing and abort stop
// load), and otherwise returns when the plan's timeline ends. Errors are
// logged and reported to the coordinator; a segment is never retried.
type SegmentRunner interface {
	RunSegment(ctx context.Context, a Assignment) error
}

// Assignment is one segment of one run, handed to a [SegmentRunner].
type Assignment struct {
	// Run is the run id.
	Run string
	// Spec is the load spec exactly as the coordinator's [Run.Spec] gave it.
	Spec []byte
	// Job and Step are the coordinator's [Run.Job] and [Run.Step], cut to
	// MaxNameLen bytes; "" when it gave none (or predates them). They come
	// from Redis: sanitize them before use.
	Job, Step string
	// Index is the segment's index in Sequence; Range its bounds.
	Index    int
	Range    segment.Segment
	Sequence *segment.Sequence
	// Owns reports whether this segment owns global arrival index k.
	Owns func(k uint64) bool
	// ScaleVUs returns this segment's share of a total VU count.
	ScaleVUs func(v int) int
	// StartAt is plan time zero as a local instant that carries a monotonic
	// reading: start_at on Redis's clock minus the measured clock offset.
	StartAt time.Time
	// Offset is the plan position this runner starts from: 0 at the start,
	// later for a segment taken over mid-run (VU ramp at Offset, next
	// arrival after it).
	Offset time.Duration
	// Duration is the length of the plan's timeline.
	Duration time.Duration
	// Sink receives per-second snapshots whose Second counts from StartAt.
	Sink Sink
	// Worker is this runner's id.
	Worker string
	// Prior is how many requests earlier owners of this segment reported
	// (0 at the start): a closed-model total counts them as already sent.
	// What a lost owner sent but never reported (its last second or two)
	// is not in it, so the segment can exceed its share by that much.
	Prior int64
	// Rows hands out the run's feeder rows to this segment: ranges of one
	// run-wide row index, so no row goes to two hosts (see [RowClaims]).
	Rows *RowClaims
	// Segments is the number of segments in the run, so a feed can size
	// its claims to how many hosts share the rows.
	Segments int
	// Lease reports whether this runner still holds its lease, measured on
	// its own monotonic clock. The runner must check it right before every
	// request (the engine's Options.Lease) and send nothing once it is
	// false, so a runner paused past its lease never sends on resume. It
	// does not allocate.
	Lease func() bool
}

// Sink receives the metrics of one run second. Second must not block: it
// merges into a local buffer that a single writer ships to Redis once per
// second. It is safe for concurrent use.
type Sink interface {
	Second(s *snapshot.Snapshot)
}

// Observer receives cluster metrics (cluster_workers,
// cluster_segment_reassignments_total). Implementations must be safe for
// concurrent use. A nil Observer is allowed wherever one is accepted.
type Observer interface {
	// SetWorkers reports the number of workers in the run being coordinated.
	SetWorkers(n int)
	// SegmentReassigned counts one segment moved to a new owner.
	SegmentReassigned()
}

type nopObserver struct{}

func (nopObserver) SetWorkers(int)     {}
func (nopObserver) SegmentReassigned() {}

// LossPolicy says what the coordinator does when a worker dies or abandons.
type LossPolicy string

// Loss policies (load config distributed.on_worker_loss).
const (
	// LossReassign moves the lost segments to a spare or the live worker
	// with the most headroom; with none, they stay unowned and the run is
	// degraded. This is the default.
	LossReassign LossPolicy = "reassign"
	// LossContinue leaves the lost segments unowned and marks the run degraded.
	LossContinue LossPolicy = "continue"
	// LossAbort aborts the whole run.
	LossAbort LossPolicy = "abort"
)

// desired is the level-triggered truth for one worker, written to
// lt:{R}:w:<wid>:desired and repeated in every command envelope.
type desired struct {
	Gen       int64    `json:"gen"`
	Term      int64    `json:"term"`
	Phase     string   `json:"phase"` // prepare, run, stop
	Segments  []int    `json:"segments"`
	Seq       []string `json:"seq"`
	StartAtMs int64    `json:"start_at"`
	// Prior is, per segment this worker takes over, the requests earlier
	// owners reported for it (their snapshots' Requests); a closed-model
	// total counts them as done.
	Prior map[int]int64 `json:"prior,omitempty"`
}

const (
	phasePrepare = "prepare"
	phaseRun     = "run"
	phaseStop    = "stop"
)

func (d desired) hash() map[string]any {
	segs, _ := json.Marshal(struct {
		Own   []int         `json:"own"`
		Seq   []string      `json:"seq"`
		Prior map[int]int64 `json:"prior,omitempty"`
	}{d.Segments, d.Seq, d.Prior})
	return map[string]any{"gen": d.Gen, "term": d.Term, "phase": d.Phase, "segments": string(segs), "start_at": d.StartAtMs}
}

func parseDesired(h map[string]string) (desired, error) {
	var d desired
	if len(h) == 0 {
		return d, nil
	}
	var err error
	if d.Gen, err = strconv.ParseInt(h["gen"], 10, 64); err != nil {
		return d, fmt.Errorf("desired.gen %q: %w", h["gen"], err)
	}
	if d.Term, err = strconv.ParseInt(h["term"], 10, 64); err != nil {
		return d, fmt.Errorf("desired.term %q: %w", h["term"], err)
	}
	d.Phase = h["phase"]
	if v := h["start_at"]; v != "" {
		if d.StartAtMs, err = strconv.ParseInt(v, 10, 64); err != nil {
			return d, fmt.Errorf("desired.start_at %q: %w", v, err)
		}
	}
	if v := h["segments"]; v != "" {
		var s struct {
			Own   []int         `json:"own"`
			Seq   []string      `json:"seq"`
			Prior map[int]int64 `json:"prior"`
		}
		if err := json.Unmarshal([]byte(v), &s); err != nil {
			return d, fmt.Errorf("desired.segments: %w", err)
		}
		d.Segments, d.Seq, d.Prior = s.Own, s.Seq, s.Prior
	}
	return d, nil
}

// envelope is a command on a cmd or bcast stream.
type envelope struct {
	Type     string   `json:"type"`
	CmdID    string   `json:"cmd_id"`
	Run      string   `json:"run"`
	Term     int64    `json:"term"`
	Gen      int64    `json:"gen"`
	SentAtMs int64    `json:"sent_at_ms"`
	Payload  *desired `json:"payload,omitempty"`
}

// Command types.
const (
	cmdPrepare = "prepare"
	cmdStart   = "start"
	cmdAssign  = "assign"
	cmdStop    = "stop"
	cmdAbort   = "abort"
)

// MaxNameLen bounds [Assignment.Job] and [Assignment.Step], in bytes: a
// longer name in the run's meta is cut, so a hostile one holds no more
// memory on every worker than this.
const MaxNameLen = 256

// cutName is v cut to at most MaxNameLen bytes, at a character boundary
// when v is valid UTF-8.
func cutName(v string) string {
	if len(v) <= MaxNameLen {
		return v
	}
	cut := MaxNameLen
	for cut > 0 && !utf8.RuneStart(v[cut]) {
		cut--
	}
	return v[:cut]
}
