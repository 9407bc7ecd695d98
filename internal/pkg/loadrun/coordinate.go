package loadrun

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/forgeload/forgeload/internal/pkg/cluster"
	"github.com/forgeload/forgeload/internal/pkg/cluster/snapshot"
	"github.com/forgeload/forgeload/internal/pkg/load"
	"github.com/forgeload/forgeload/internal/pkg/load/build"
	"github.com/forgeload/forgeload/internal/pkg/load/outcome/summary"
	"github.com/forgeload/forgeload/internal/pkg/load/spec"
	"github.com/forgeload/forgeload/internal/pkg/load/threshold"
)

// MaxDistributedFeeder bounds the feeder file of a distributed test
// (4 MiB), which travels to every worker inside the spec.
const MaxDistributedFeeder = 4 << 20

// Coordinator runs one distributed load test as its coordinator. The daemon
// implements it with [cluster.Coordinate] on its Redis client, filling in
// CoordOptions.Coordinator (this runner's cluster name) and the Observer.
// mask hides the job's secrets (nil: none): whatever the implementation
// logs of the run outside the job's log (its error, the lines of this
// host's segments) goes through it. It must be safe for concurrent use.
type Coordinator interface {
	Coordinate(ctx context.Context, p cluster.Run, o cluster.CoordOptions, mask func(string) string) (*cluster.Outcome, error)
}

// CoordSettings configure [Coordinate].
type CoordSettings struct {
	// Cluster coordinates the run; nil means this runner has no cluster
	// and the test fails saying so.
	Cluster Coordinator
	// Limits are this runner's: the duration is capped and a missing one
	// filled from MaxDuration, and the graceful shutdown and the endpoints
	// are checked here, before the run is shipped. The rate and
	// concurrency limits apply to each worker's share, on that worker
	// (whose own limits are all checked again there).
	Limits build.Limits
	// ProgressInterval is how often a merged progress line is logged.
	ProgressInterval time.Duration
	// Logf receives the run's log lines: what runs, the joins, the start,
	// the merged progress.
	Logf func(format string, args ...any)
	// Mask hides the job's secrets in what the Cluster logs elsewhere than
	// through Logf, and in Job and Step; nil hides nothing.
	Mask func(string) string
	// Job and Step are the workflow job's id and the step's id or name, as
	// a local run's load metrics label them. Masked with Mask, they are
	// shipped with the run (cluster.Run.Job), and every host, this one
	// included, labels its share's metrics with them.
	Job, Step string
	// OnSecond, if set, receives each merged second as it closes (the
	// jobs page's live view of the whole run).
	OnSecond func(*load.Snapshot)
	// Resources, if set, holds the samples of the job's services, taken on
	// this host; the merged progress lines show the latest of them.
	Resources *load.Resources
}

// Distributed is the merged outcome of a distributed test.
type Distributed struct {
	// Result is the merged result.
	Result *load.Result
	// Thresholds are the config's thresholds, which the caller judges
	// once on the merged result (package outcome), with the baseline and
	// the services' resource use.
	Thresholds []threshold.Threshold
	// Outcome is the cluster's account: workers, reassignments, degraded.
	Outcome *cluster.Outcome
	// Hosts are the per-worker rows for the result's RunInfo.
	Hosts []summary.HostRow
	// Cancelled is set when ctx ended after the start: Result holds what
	// the workers had shipped.
	Cancelled bool
	// Shortfall says why the run delivered materially less than planned
	// (see [MinDelivered]); "" when it did not.
	Shortfall string
	// Aborted is the *build.Abort of the abort_on_fail threshold that
	// failed on the merged seconds, after which every host was stopped;
	// nil when none did. Pass it to outcome.Input.Stopped.
	Aborted error

	end       time.Duration
	plannedIn func(from, to time.Duration) float64
	// closedTotal is the closed model's total (0 without one), which
	// bounds what a lost worker may have sent unreported.
	closedTotal int64
}

// WriteWorkers writes the per-worker table of d; see [WriteWorkers].
func (d *Distributed) WriteWorkers(w io.Writer, markdown bool) error {
	return writeWorkers(w, d.Outcome, d.end, markdown, rowBounds{d.plannedIn, d.closedTotal})
}

// Coordinate runs cfg (validated, distributed.workers > 1, targets already
// checked against this runner's policy) over the cluster: it ships the
// spec, logs what runs and the merged progress, and merges the result. It
// builds nothing that sends: this host's share runs through its own
// [SegmentRunner]. The error is bad input or a failed run; when ctx ends
// after the start the result so far comes back with Cancelled set.
func Coordinate(parent context.Context, cfg *spec.Config, s CoordSettings) (*Distributed, error) {
	// An abort_on_fail threshold that fails on the merged seconds cancels
	// the run: the cluster then marks it ABORTED and every host stops.
	ctx, abortRun := context.WithCancelCause(parent)
	defer abortRun(nil)
	logf := s.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	o, ths, err := checkDistributed(cfg, s)
	if err != nil {
		return nil, err
	}
	wire, err := shipSpec(cfg, &o)
	if err != nil {
		return nil, err
	}
	logRun(logf, cfg, &o)

	// The daemon's load metrics count what this host sends: its own
	// segment does that through its SegmentRunner, so the merged seconds
	// are not fed to them here (OnSecond is for views of the whole run).
	pl := newPlan(&o)
	watch := build.NewWatch(ths, o.Phases)
	var aborted atomic.Pointer[build.Abort]
	prog := newProgress(s.ProgressInterval, pl.secs, func(p load.Progress) {
		if s.Resources != nil {
			p.SUT = s.Resources.Latest()
		}
		logf("%s", load.FormatProgress(p))
	})
	run := clusterRun(cfg.Distributed, wire, &o, pl.end)
	run.Job, run.Step = masked(s.Job, s.Mask), masked(s.Step, s.Mask)
	out, err := s.Cluster.Coordinate(ctx, run, cluster.CoordOptions{
		Logf: logf,
		OnSecond: func(cs *snapshot.Snapshot) {
			snap := fromCluster(cs)
			snap.TargetRPS = pl.targetAt(snap.Second)
			prog.add(snap)
			if s.OnSecond != nil {
				s.OnSecond(snap)
			}
			if watch == nil || aborted.Load() != nil {
				return
			}
			if a := watch.Add(snap); a != nil {
				aborted.Store(a)
				logf("%v: stopping every host", a)
				abortRun(a)
			}
		},
	}, s.Mask)
	// Cancelled after the start, Coordinate returns what the workers had
	// shipped: that partial result comes back, marked.
	cancelled := err != nil && ctx.Err() != nil
	if err != nil && (!cancelled || out == nil) {
		return nil, fmt.Errorf("distributed load test: %w", err)
	}
	d := pl.merge(out, cancelled, prog)
	d.Thresholds = ths
	if a := aborted.Load(); a != nil && parent.Err() == nil {
		d.Aborted, d.Cancelled = a, false
	}
	return d, nil
}

// masked is v with mask's secrets hidden; mask nil hides nothing.
func masked(v string, mask func(string) string) string {
	if mask == nil || v == "" {
		return v
	}
	return mask(v)
}

// checkDistributed checks what a distributed test needs beyond a valid
// config (a cluster, inline bodies, a small feeder, a duration) and
// returns its engine options and thresholds under s.Limits.
func checkDistributed(cfg *spec.Config, s CoordSettings) (load.Options, []threshold.Threshold, error) {
	ds := cfg.Distributed
	if s.Cluster == nil {
		return load.Options{}, nil, fmt.Errorf("distributed.workers is %d, but this runner has no cluster configured (cluster.redis_url in the daemon config); remove distributed: or ask the runner admin to join a cluster", ds.Workers)
	}
	for n, e := range cfg.Mix() {
		if e.BodyFile != "" {
			return load.Options{}, nil, fmt.Errorf("endpoint %d: body_file is not supported in a distributed test (the other workers cannot read this workspace): put the body inline with the body key", n+1)
		}
	}
	o, ths, err := build.EngineOptions(cfg, build.Limits{MaxDuration: s.Limits.MaxDuration,
		MaxGracefulShutdown: s.Limits.MaxGracefulShutdown, MaxEndpoints: s.Limits.MaxEndpoints})
	if err != nil {
		return load.Options{}, nil, err
	}
	if f := cfg.Feeder; f != nil {
		// Read here, inside the workspace, and shipped: the other hosts
		// cannot read this workspace.
		if err := build.LoadFeeder(cfg); err != nil {
			return load.Options{}, nil, err
		}
		if len(f.Data) > MaxDistributedFeeder {
			return load.Options{}, nil, fmt.Errorf("feeder.path %s is %d bytes: a distributed test ships its feeder to every worker through Redis, which allows at most %d; use a smaller file", f.Path, len(f.Data), MaxDistributedFeeder)
		}
	}
	if o.Duration <= 0 {
		return load.Options{}, nil, fmt.Errorf("distributed.workers is %d but the test has no duration: set duration (a distributed test needs a fixed timeline)", ds.Workers)
	}
	return o, ths, nil
}

// shipSpec encodes the spec the workers get, with the timeline decided
// here: the duration (which the limit may have filled) and, for Poisson
// arrivals, one seed, or the striped shares would not add up to one
// schedule. A seed it picks is set in o too.
func shipSpec(cfg *spec.Config, o *load.Options) ([]byte, error) {
	ship := *cfg
	ship.Duration = o.Duration
	if o.Arrival == load.Poisson && cfg.Seed == 0 {
		ship.Seed = int64(o.Seed&(1<<62-1)) | 1
		o.Seed = uint64(ship.Seed)
	}
	return EncodeSpec(&ship)
}

// logRun logs what a distributed test runs and over how many workers.
func logRun(logf func(string, ...any), cfg *spec.Config, o *load.Options) {
	ds := cfg.Distributed
	logf("load test: %s", Describe(cfg, o))
	if o.Arrival == load.Poisson {
		logf("poisson seed %d (set seed: to repeat this arrival sequence)", o.Seed)
	}
	logf("distributed over %d workers (min_workers %d, join_timeout %s, on_worker_loss %s); each worker checks its share against its own target policy and limits",
		ds.Workers, ds.Min(), ds.JoinTimeout, ds.OnWorkerLoss)
}

// clusterRun is the run the cluster coordinates: the shipped spec wire,
// the plan's end plus the graceful stop, and the workers ds asks for.
func clusterRun(ds *spec.Distributed, wire []byte, o *load.Options, end time.Duration) cluster.Run {
	grace := o.Grace
	if grace == 0 {
		grace = load.DefaultGrace
	}
	return cluster.Run{
		Spec:         wire,
		Duration:     end + max(grace, 0),
		Workers:      ds.Workers,
		MinWorkers:   ds.Min(),
		JoinTimeout:  ds.JoinTimeout,
		OnWorkerLoss: cluster.LossPolicy(ds.OnWorkerLoss),
		// A closed-model total is over once every host has sent its share:
		// the step ends then, as on one host, not at the duration.
		EndsEarly: !o.Open() && o.Total > 0,
		// Every worker stops once its requests in flight have ended; the
		// run ends then, not when the graceful stop's bound runs out.
		Grace: max(grace, 0),
	}
}

// plan is the timeline of a distributed run as the coordinator planned
// it: the schedule, its end and its seconds.
type plan struct {
	o     *load.Options
	open  bool
	sched *load.Schedule
	end   time.Duration
	secs  int
}

// newPlan plans the run of o.
func newPlan(o *load.Options) *plan {
	pl := &plan{o: o, open: o.Open(), sched: load.NewSchedule(o), end: planEnd(o)}
	pl.secs = int((pl.end + time.Second - 1) / time.Second)
	return pl
}

// targetAt is the planned arrivals in second sec: 0 in the closed model
// and after the plan's last second.
func (pl *plan) targetAt(sec int) float64 {
	if !pl.open || sec >= pl.secs {
		return 0
	}
	return pl.sched.PlannedCount(time.Duration(sec)*time.Second, time.Duration(sec+1)*time.Second)
}

// merge turns the cluster's outcome into the merged result, finishing the
// progress lines of a run that ended early.
func (pl *plan) merge(out *cluster.Outcome, cancelled bool, prog *progress) *Distributed {
	end := pl.end
	if !cancelled && out.Ended > 0 && out.Ended < end {
		end = out.Ended // every host sent its share of a closed-model total
		prog.finish(out.Seconds, end)
	}
	res := &load.Result{Open: pl.open, Start: out.StartAt, Elapsed: end}
	if len(pl.o.Phases) > 0 {
		res.SetPhases(pl.o.Phases)
	}
	if cancelled {
		res.Interrupted = true
		res.Elapsed = min(max(time.Since(out.StartAt), time.Second), end)
	}
	for _, cs := range out.Seconds {
		s := fromCluster(cs)
		s.TargetRPS = pl.targetAt(s.Second)
		res.AddSnapshot(s)
	}
	if pl.open {
		res.TargetRPS = pl.sched.PlannedCount(0, res.Elapsed) / res.Elapsed.Seconds()
	}
	d := &Distributed{Result: res, Outcome: out, Cancelled: cancelled, end: end}
	if pl.open {
		d.plannedIn = pl.sched.PlannedCount
	} else {
		d.closedTotal = int64(min(pl.o.Total, math.MaxInt64))
	}
	b := rowBounds{d.plannedIn, d.closedTotal}
	if res.Unreported = lostTraffic(out, b); res.Unreported != nil {
		res.Requests += res.Unreported.Counted
	}
	res.Finish()
	d.Hosts = workerRows(out, end, b)
	if !cancelled {
		d.Shortfall = shortfall(pl.o, end, pl.sched, res.Requests, out)
	}
	return d
}

// MinDelivered is the share of the planned requests a distributed run must
// deliver to pass, whatever its thresholds say: a run that lost a worker
// for a good part of a short test measured a different load than asked.
const MinDelivered = 0.9

// shortfall says why a distributed run delivered materially less than it
// planned, or "" when it did not. Planned is the open model's schedule
// (capped by total) or a closed-model total; a closed model without total
// has no planned count, so there a share left without an owner (degraded)
// is the shortfall.
func shortfall(o *load.Options, end time.Duration, sched *load.Schedule, delivered int64, out *cluster.Outcome) string {
	var lost []string
	for _, w := range out.Workers {
		if w.Lost {
			lost = append(lost, w.ID+" ("+w.Reason+")")
		}
	}
	why := ""
	if len(lost) > 0 {
		why = "; lost workers: " + strings.Join(lost, ", ")
	}
	planned := 0.0
	switch {
	case o.Open():
		planned = plannedArrivals(o, end, sched)
		if o.Total > 0 && (end < o.Duration || float64(o.Total) < planned) {
			planned = float64(o.Total)
		}
	case o.Total > 0:
		planned = float64(o.Total)
	case out.Degraded:
		return "the run was degraded (a lost worker's share of the virtual users found no new owner), so it did not apply the planned load" + why
	}
	if planned <= 0 || float64(delivered) >= MinDelivered*planned {
		return ""
	}
	return fmt.Sprintf("the run delivered %d of %.0f planned requests (%.1f%%), below the %.0f%% a distributed run must deliver to pass%s",
		delivered, planned, 100*float64(delivered)/planned, 100*MinDelivered, why)
}

// plannedArrivals is the open model's planned arrivals in [0, end): the
// schedule's count, or for Poisson arrivals the seeded sequence's own
// count, which the workers send exactly and which can lie several percent
// from the mean (a short test's shortfall would otherwise depend on its
// seed). Sequences too long to walk use the mean.
func plannedArrivals(o *load.Options, end time.Duration, sched *load.Schedule) float64 {
	mean := sched.PlannedCount(0, end)
	if o.Arrival != load.Poisson || mean > maxWalk {
		return mean
	}
	s := load.NewSchedule(&load.Options{Rate: o.Rate, Stages: o.Stages, Arrival: o.Arrival, Seed: o.Seed})
	n := 0
	for {
		_, t, ok := s.Next()
		if !ok || t >= end {
			return float64(n)
		}
		n++
	}
}

// WriteWorkers writes the per-worker rows of a distributed run: segments,
// requests, rate, dropped arrivals, CPU and clock offset, and why a worker
// was lost, with the part of its traffic that may be missing from the
// result. plannedIn (nil in the closed model) gives the planned global
// arrivals in a span of plan time, to bound that part in requests.
// markdown selects a Markdown table instead of aligned text.
func WriteWorkers(w io.Writer, out *cluster.Outcome, planned time.Duration, markdown bool, plannedIn func(from, to time.Duration) float64) error {
	return writeWorkers(w, out, planned, markdown, rowBounds{plannedIn: plannedIn})
}

// rowBounds are what bounds a lost worker's unreported requests: the
// open model's planned arrivals, or the closed model's total.
type rowBounds struct {
	plannedIn   func(from, to time.Duration) float64
	closedTotal int64
}

func writeWorkers(w io.Writer, out *cluster.Outcome, planned time.Duration, markdown bool, bounds rowBounds) error {
	head := []string{"worker", "host", "segments", "requests", "rate/s", "dropped", "cpu %", "clock offset", "status"}
	var rows [][]string
	for _, r := range workerRows(out, planned, bounds) {
		rows = append(rows, []string{r.ID, r.Host, r.Segments, strconv.FormatInt(r.Requests, 10),
			strconv.FormatFloat(r.RPS, 'f', 1, 64), strconv.FormatInt(r.Dropped, 10),
			strconv.FormatFloat(r.CPUPct, 'f', 0, 64), r.ClockOffset, r.Status})
	}
	var b bytes.Buffer
	if markdown {
		fmt.Fprintf(&b, "\n#### Workers (run %s, %d reassignments)\n\n", out.RunID, out.Reassignments)
		fmt.Fprintf(&b, "| %s |\n|%s\n", strings.Join(head, " | "), strings.Repeat(" --- |", len(head)))
		for _, r := range rows {
			fmt.Fprintf(&b, "| %s |\n", strings.Join(r, " | "))
		}
	} else {
		fmt.Fprintf(&b, "Workers (run %s, start %s, %d reassignments", out.RunID, out.StartAt.UTC().Format(time.RFC3339Nano), out.Reassignments)
		if out.Degraded {
			b.WriteString(", degraded")
		}
		b.WriteString(")\n")
		tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, strings.Join(head, "\t"))
		for _, r := range rows {
			fmt.Fprintln(tw, strings.Join(r, "\t"))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}

// workerRows are the per-worker rows of a distributed run; see
// [WriteWorkers].
func workerRows(out *cluster.Outcome, planned time.Duration, b rowBounds) []summary.HostRow {
	var rows []summary.HostRow
	for _, r := range out.Workers {
		segs := make([]string, len(r.Segments))
		for k, s := range r.Segments {
			segs[k] = strconv.Itoa(s)
		}
		var reqs int64
		if r.Total != nil {
			reqs = r.Total.Requests
		}
		status := "ok"
		if r.Lost {
			// At least what its last status said it had sent, even when
			// it died before shipping those requests' metrics.
			reqs = max(reqs, r.SentAtLeast)
			status = "lost: " + r.Reason + unreported(r, reqs, b)
		}
		rate := 0.0
		if planned > 0 {
			rate = float64(reqs) / planned.Seconds()
		}
		rows = append(rows, summary.HostRow{ID: r.ID, Host: r.Host, Segments: strings.Join(segs, ","), Requests: reqs, RPS: rate,
			Dropped: r.Dropped, CPUPct: r.CPUPct, ClockOffset: r.ClockOffset.String(), Status: status})
	}
	return rows
}

// unreported says what of a lost worker's traffic may be missing from the
// result: what it sent after the last second it shipped, until it was
// found lost (it stopped sending by then: fenced, killed or partitioned).
// In the closed model the bound is the rest of its share of total (its
// engine never sends more): reqs, what it is known to have sent, subtracted.
func unreported(r cluster.WorkerRow, reqs int64, b rowBounds) string {
	from := time.Duration(r.LastSecond+1) * time.Second
	if r.LostAt <= from {
		return "; all of its metrics arrived"
	}
	msg := fmt.Sprintf("; no metrics from %s until it stopped sending (by %s)", from, r.LostAt.Round(100*time.Millisecond))
	switch {
	case r.LostShare <= 0:
	case b.plannedIn != nil:
		msg += fmt.Sprintf(": up to %.0f requests unreported", math.Ceil(b.plannedIn(from, r.LostAt)*r.LostShare))
	case b.closedTotal > 0:
		left := max(int64(math.Ceil(float64(b.closedTotal)*r.LostShare))-reqs, 0)
		msg += fmt.Sprintf(": up to %d requests unreported (the rest of its share of total)", left)
	}
	return msg
}

// lostTraffic is what the merged result counts of the lost workers'
// traffic without their metrics: each lost worker counts as the more of
// the requests it shipped and those its last heartbeat said it had sent
// (passed its lease check, right before each send), so the result never
// reports fewer requests than the target got from it by then. Bound is
// what it may have sent after that heartbeat, until it stopped (its last
// heartbeat plus its fence): its share of the plan over that span in the
// open model, the rest of its share of total in the closed model. nil
// when no lost worker left anything unreported.
func lostTraffic(out *cluster.Outcome, b rowBounds) *load.Unreported {
	u := &load.Unreported{}
	var parts []string
	for _, r := range out.Workers {
		if !r.Lost {
			continue
		}
		var shipped int64
		if r.Total != nil {
			shipped = r.Total.Requests
		}
		reqs := max(shipped, r.SentAtLeast)
		bound, known := lostBound(r, shipped, reqs, b)
		if reqs == shipped && bound == 0 && known {
			continue
		}
		u.Counted += reqs - shipped
		u.Bound += bound
		part := fmt.Sprintf("%s: %d from its last heartbeat, up to %d more until it stopped by %s (its last heartbeat plus its fence)",
			r.ID, reqs-shipped, bound, r.LostAt.Round(100*time.Millisecond))
		if !known {
			part = fmt.Sprintf("%s: %d from its last heartbeat; what it sent after it, until it stopped by %s, has no bound (a closed model without total)",
				r.ID, reqs-shipped, r.LostAt.Round(100*time.Millisecond))
		}
		parts = append(parts, part)
	}
	if len(parts) == 0 {
		return nil
	}
	u.Detail = strings.Join(parts, "; ")
	return u
}

// lostBound is the most lost worker r may have sent beyond reqs (the
// requests it is known to have sent; shipped of them in its metrics): 0
// when all of its metrics arrived, else its share of the plan from the
// last second it shipped until it stopped (open model, less what its
// heartbeat added), or the rest of its share of total. known is false in a
// closed model without total.
func lostBound(r cluster.WorkerRow, shipped, reqs int64, b rowBounds) (bound int64, known bool) {
	from := time.Duration(r.LastSecond+1) * time.Second
	switch {
	case r.LostAt <= from || r.LostShare <= 0:
		return 0, true
	case b.plannedIn != nil:
		return max(int64(math.Ceil(b.plannedIn(from, r.LostAt)*r.LostShare))-(reqs-shipped), 0), true
	case b.closedTotal > 0:
		return max(int64(math.Ceil(float64(b.closedTotal)*r.LostShare))-reqs, 0), true
	}
	return 0, false
}

// progress turns merged run seconds into the step's progress lines, through
// the engine's own [load.ProgressWindow], so a multi-host step logs the
// same lines as a single-host one. The seconds after last (the grace
// period) are not shown; the last window may be short.
type progress struct {
	w    *load.ProgressWindow
	last int
	seen int
	emit func(load.Progress)
}

func newProgress(interval time.Duration, last int, emit func(load.Progress)) *progress {
	return &progress{w: load.NewProgressWindow(interval), last: last, emit: emit}
}

func (p *progress) add(s *load.Snapshot) {
	p.seen++
	if p.seen > p.last {
		return
	}
	p.w.Add(s)
	if p.w.Full() || p.seen == p.last {
		p.emit(p.w.Take(time.Duration(s.Second+1)*time.Second, p.w.Span()))
	}
}

// finish shows what is left of a run that ended at end, before its
// planned last second: the seconds OnSecond did not see (from seconds, the
// merged ones, empty where none), then the last, partial window, as one
// host's run ends with a line at its end.
func (p *progress) finish(seconds []*snapshot.Snapshot, end time.Duration) {
	secs := min(int((end+time.Second-1)/time.Second), p.last)
	if p.seen >= secs && p.w.Span() == 0 {
		return
	}
	for sec := p.seen; sec < secs; sec++ {
		s := &load.Snapshot{Second: sec}
		for _, cs := range seconds {
			if cs.Second == sec {
				s = fromCluster(cs)
			}
		}
		p.seen++
		p.w.Add(s)
		if p.w.Full() && sec < secs-1 {
			p.emit(p.w.Take(time.Duration(sec+1)*time.Second, p.w.Span()))
		}
	}
	if span := p.w.Span() - (time.Duration(secs)*time.Second - end); span > 0 {
		p.emit(p.w.Take(end, span))
	}
	p.seen = p.last
}

// maxWalk bounds the arrivals walked to learn where a schedule ends or
// how many arrivals it has.
const maxWalk = 20_000_000

// planEnd is when a distributed open-model plan with a total ends: at the
// arrival after the last one (index total) when that comes before the
// duration, so the step ends, and its rate is measured, with the last
// arrival, as on one host. Otherwise, and for plans too long to walk, it is
// the duration.
func planEnd(o *load.Options) time.Duration {
	if o.Total == 0 || o.Total > maxWalk || !o.Open() {
		return o.Duration
	}
	s := load.NewSchedule(&load.Options{Rate: o.Rate, Stages: o.Stages, Arrival: o.Arrival, Seed: o.Seed})
	for range o.Total {
		if _, _, ok := s.Next(); !ok {
			return o.Duration
		}
	}
	_, t, ok := s.Next()
	if !ok || t <= 0 || t >= o.Duration {
		return o.Duration
	}
	return t
}
