package loadrun

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"strconv"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/forgeload/forgeload/internal/pkg/cluster"
	"github.com/forgeload/forgeload/internal/pkg/guard"
	"github.com/forgeload/forgeload/internal/pkg/load"
	"github.com/forgeload/forgeload/internal/pkg/load/build"
	"github.com/forgeload/forgeload/internal/pkg/load/feeder"
	"github.com/forgeload/forgeload/internal/pkg/load/spec"
	"github.com/forgeload/forgeload/internal/pkg/policy"
)

// SegmentHeader is the request header every worker of a distributed test
// adds to its requests: "<worker>/<segment index>". Targets can count or
// log load per worker with it.
const SegmentHeader = "X-Forgeload-Segment"

// SegmentRunner runs this host's shares of distributed load tests, its own
// and other runners': it implements [cluster.SegmentRunner]. The zero
// value runs under the default policy without limits or metrics.
type SegmentRunner struct {
	// Policy is this runner's target policy; nil is the default policy for
	// Forge.
	Policy *policy.Policy
	// Forge is the forge's address, which the default policy denies.
	Forge string
	// Resolver resolves targets at dial time; nil is the system resolver.
	Resolver *net.Resolver
	// Limits are this runner's caps, applied to its share.
	Limits build.Limits
	// Observer makes the observer of each segment, for the daemon's load
	// metrics; nil means none. job and step are the names the coordinator
	// shipped with the run (cluster.Assignment.Job: masked there, but
	// unsanitized input from the wire), "" when it shipped none.
	Observer func(job, step string) Observer
	// Logger receives what segments do (never load data); nil discards.
	Logger *logrus.Entry
}

var _ cluster.SegmentRunner = (*SegmentRunner)(nil)

// RunSegment runs one segment: it decodes the shipped spec, checks every
// target against THIS runner's policy and the share against THIS runner's
// limits before sending anything, enforces the policy again at dial time,
// tags requests with [SegmentHeader], and forwards per-second snapshots to
// the coordinator. It runs on a goroutine of the cluster pool: a panic in
// it comes back as an error (a *guard.PanicError), logged with its stack,
// and the daemon keeps serving.
func (r *SegmentRunner) RunSegment(ctx context.Context, a cluster.Assignment) (err error) {
	defer r.panicked(a, &err)
	defer guard.Recover(&err)
	guard.Fault("segment", string(a.Spec))
	cfg, pol, err := r.decode(ctx, a)
	if err != nil {
		return err
	}

	var rows *feeder.Shared // this segment's share of the feeder rows, if any
	var obs Observer
	if r.Observer != nil {
		obs = r.Observer(a.Job, a.Step)
	}
	t, err := New(ctx, cfg, Settings{Policy: pol, Engine: build.Settings{
		Resolver: r.Resolver,
		NoAbort:  true, // the coordinator judges abort_on_fail on the merged seconds
		OnSecond: func(s *load.Snapshot) {
			if obs != nil {
				obs.Second(s)
			}
			a.Sink.Second(toCluster(s))
		},
		ShareRows: shareRows(ctx, a, &rows),
		TraceSummary: func(line string, _ bool) {
			r.logf("cluster run %s: segment %d: %s", a.Run, a.Index, line)
		},
	}})
	if err != nil {
		return err
	}
	defer func() {
		if cerr := t.Close(); cerr != nil && r.Logger != nil {
			r.Logger.Warnf("cluster run %s: segment %d: %v", a.Run, a.Index, cerr)
		}
	}()
	o := &t.Engine.Options
	share, _ := a.Range.Len().Float64()
	if left, err := r.takeShare(o, a, share, rows); err != nil || !left {
		return err
	}
	r.logf("cluster run %s: running segment %d (%s of the plan) from %s", a.Run, a.Index, a.Range, a.Offset)
	if obs != nil {
		obs.LoadStarted(Protocol(cfg), o.Rate*share, nil, nil)
		defer obs.LoadDone()
	}
	return r.run(ctx, t, a)
}

// decode decodes a's shipped spec, checks it against this runner's
// endpoint limit and the cluster's row claims, tags its requests with
// [SegmentHeader], and returns it with this runner's target policy.
func (r *SegmentRunner) decode(ctx context.Context, a cluster.Assignment) (*spec.Config, *policy.Policy, error) {
	cfg, err := DecodeSpec(a.Spec)
	if err != nil {
		return nil, nil, err
	}
	pol, err := Policy(ctx, r.Policy, r.Forge)
	if err != nil {
		return nil, nil, err
	}
	if err := r.Limits.CheckEndpoints(cfg); err != nil {
		return nil, nil, err
	}
	if cfg.Feeder != nil && a.Rows == nil {
		return nil, nil, errors.New("the config has a feeder but the cluster gave this segment no row claims: run the same forgeload version on every cluster member")
	}
	if cfg.Headers == nil {
		cfg.Headers = map[string]string{}
	}
	cfg.Headers[SegmentHeader] = a.Worker + "/" + strconv.Itoa(a.Index)
	return cfg, pol, nil
}

// takeShare checks the segment's share of o against this runner's limits and
// narrows o to it: striping, lease, what is left of a closed-model total,
// start and offset. left is false when nothing of the share is left to send.
func (r *SegmentRunner) takeShare(o *load.Options, a cluster.Assignment, share float64, rows *feeder.Shared) (left bool, err error) {
	if err := r.Limits.CheckShare(o, share, a.ScaleVUs); err != nil {
		return false, err
	}
	o.Owns, o.ScaleVUs, o.Lease = a.Owns, a.ScaleVUs, a.Lease
	if o.MaxStall == 0 {
		o.MaxStall = ShareMaxStall
	}
	if total, ok := closedShare(o, a.ScaleVUs); ok {
		// A segment taken over mid-run counts what its earlier owners
		// reported as sent.
		total -= min(total, uint64(max(a.Prior, 0)))
		if total == 0 {
			return false, nil // nothing of this segment's share of total is left
		}
		o.Total = total
		if rows != nil {
			// No claiming rows this host will never send: with total
			// equal to the row count, another host needs every one.
			rows.SetNeed(total)
		}
	}
	o.StartAt, o.Offset = a.StartAt.Add(a.Offset), a.Offset
	if o.Duration > 0 && a.Offset >= o.Duration {
		return false, nil // taken over after the plan's last arrival: nothing left
	}
	return true, nil
}

// ShareMaxStall is how late a free worker of a distributed share may pick
// up an arrival before the share counts a stall of its own host (a frozen
// process, a paused VM) and skips every overdue arrival as dropped, rather
// than sending them at once in a burst beside the other hosts' load
// ([load.Options.MaxStall]). It is well under the fence (3.5 s by
// default), which ends longer freezes, and well over the scheduling
// delays of a busy machine.
const ShareMaxStall = 500 * time.Millisecond

// run runs the segment's test t and says why it stopped short, if it did.
func (r *SegmentRunner) run(ctx context.Context, t *Test, a cluster.Assignment) error {
	out, err := t.Run(ctx)
	if err != nil {
		return err
	}
	if out.Refused != nil {
		return fmt.Errorf("stopped: %w", out.Refused)
	}
	if out.Stopped != nil {
		return out.Stopped // the run's feeder rows ran out: the whole run fails, as on one host
	}
	res := out.Result
	r.logf("cluster run %s: segment %d done: %d requests, %d errors, %d dropped", a.Run, a.Index, res.Requests, res.Errors, res.Dropped)
	return nil
}

func (r *SegmentRunner) logf(format string, args ...any) {
	if r.Logger != nil {
		r.Logger.Infof(format, args...)
	}
}

// panicked logs a panic RunSegment recovered, with its stack.
func (r *SegmentRunner) panicked(a cluster.Assignment, errp *error) {
	var pe *guard.PanicError
	if errors.As(*errp, &pe) && r.Logger != nil {
		r.Logger.WithField("stack", string(pe.Stack)).Errorf("cluster run %s: segment %d panicked: %v; the segment fails, the runner keeps serving", a.Run, a.Index, pe.Value)
	}
}

// closedShare returns this segment's exact share of a closed-model total
// (round(total·to) − round(total·from)), which the engine then checks
// against this host's own counter; ok is false when there is no closed-model
// total. In the open model, total caps the global arrival index instead and
// every host striped with Owns stops at it by itself.
func closedShare(o *load.Options, scale func(int) int) (uint64, bool) {
	if o.Total == 0 || o.Open() || scale == nil {
		return 0, false
	}
	return uint64(max(scale(int(min(o.Total, math.MaxInt32))), 0)), true
}

// shareRows makes a segment's feeder rows a share of the run's rows,
// claimed through a.Rows, so no row goes to two hosts, and sets *made to
// the feed; see feeder.NewShared and feedBatch.
func shareRows(ctx context.Context, a cluster.Assignment, made **feeder.Shared) func(*feeder.Rows) build.SharedFeed {
	return func(rows *feeder.Rows) build.SharedFeed {
		hosts := max(a.Segments, 1)
		*made = feeder.NewShared(ctx, rows, a.Rows, feedBatch(rows.Len(), hosts), hosts)
		return *made
	}
}

// feedBatch is how many rows one claim of a distributed feeder takes: an
// eighth of a host's share of the rows, between 1 and 64, so the hosts
// take turns through the file and one lost host skips few rows.
func feedBatch(rows, hosts int) int {
	return min(max(rows/(8*max(hosts, 1)), 1), 64)
}
