package run

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	runnerv1 "gitea.dev/actions-proto-go/runner/v1"
	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/forgeload/forgeload/internal/pkg/cluster"
	"github.com/forgeload/forgeload/internal/pkg/cluster/snapshot"
	"github.com/forgeload/forgeload/internal/pkg/load"
	"github.com/forgeload/forgeload/internal/pkg/load/plan"
	"github.com/forgeload/forgeload/internal/pkg/load/spec"
	"github.com/forgeload/forgeload/internal/pkg/policy"
)

// ClusterCoordinator runs one distributed load test as its coordinator.
// The daemon implements it with [cluster.Coordinate] on its Redis client,
// filling in CoordOptions.Coordinator (this runner's cluster name) and the
// Observer. It must be safe for concurrent use.
type ClusterCoordinator interface {
	Coordinate(ctx context.Context, p cluster.Plan, o cluster.CoordOptions) (*cluster.Outcome, error)
}

// SegmentHeader is the request header every worker of a distributed test
// adds to its requests: "<worker>/<segment index>". Targets can count or
// log load per worker with it.
const SegmentHeader = "X-Forgeload-Segment"

// specVersion is the version of the wire form of a distributed load spec.
const specVersion = 1

// wireSpec is the load config as the coordinator ships it to workers: the
// config file's bytes (or "{}") and the step's inline with: keys, which the
// worker applies on top exactly as the coordinator did.
type wireSpec struct {
	Version int               `json:"v"`
	Name    string            `json:"name"`
	Config  []byte            `json:"config"`
	Inline  map[string]string `json:"inline,omitempty"`
}

// EncodeSpec builds the spec a coordinator ships in [cluster.Plan.Spec]:
// the load config named name with content config, plus inline overrides.
func EncodeSpec(name string, config []byte, inline map[string]string) ([]byte, error) {
	b, err := json.Marshal(wireSpec{Version: specVersion, Name: name, Config: config, Inline: inline})
	if err != nil {
		return nil, fmt.Errorf("encode distributed load spec %s: %w", name, err)
	}
	return b, nil
}

// DecodeSpec parses a spec written by [EncodeSpec] into a validated load
// config. Errors name the config and the key, as for a local load step.
func DecodeSpec(b []byte) (*spec.Config, error) {
	var w wireSpec
	if err := json.Unmarshal(b, &w); err != nil {
		return nil, fmt.Errorf("decode distributed load spec: %w: the coordinator and this runner may run different forgeload versions", err)
	}
	if w.Version != specVersion {
		return nil, fmt.Errorf("decode distributed load spec: version %d, this runner understands %d: run the same forgeload version on every cluster member", w.Version, specVersion)
	}
	if w.Name == "" {
		w.Name = "with"
	}
	if len(w.Config) == 0 {
		w.Config = []byte("{}")
	}
	cfg, err := spec.Parse(w.Name, w.Config)
	if err != nil {
		return nil, err
	}
	if err := cfg.Override(w.Inline); err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// runDistributed is the load step of a config with distributed.workers > 1
// on the runner that took the job: it coordinates the run through the
// cluster (its own daemon runs a segment too), logs the joins, the start
// time and live merged progress, and reports the merged result exactly as
// a local run: summary, thresholds on merged histograms, outputs.
func runDistributed(ctx context.Context, j *job, i int, cfg *spec.Config, cfgPath string, inline map[string]string) (runnerv1.Result, map[string]string) {
	fail := func(format string, args ...any) (runnerv1.Result, map[string]string) {
		j.rep.Logf(i, "::error::forgeload/load: "+format, args...)
		return runnerv1.Result_RESULT_FAILURE, nil
	}
	ds := cfg.Distributed
	if j.r.o.Cluster == nil {
		return fail("distributed.workers is %d, but this runner has no cluster configured (cluster.redis_url in the daemon config); remove distributed: or ask the runner admin to join a cluster", ds.Workers)
	}
	for n, e := range cfg.Mix() {
		if e.BodyFile != "" {
			return fail("endpoint %d: body_file is not supported in a distributed test (the other workers cannot read this workspace): put the body inline with body:", n+1)
		}
	}
	// Rate and concurrency limits apply to each worker's share, on that
	// worker; here only the duration cap matters (it also fills a missing
	// duration, which the workers must then get too).
	p, err := plan.New(cfg, plan.Settings{Limits: plan.Limits{MaxDuration: j.r.o.Limits.MaxDuration}})
	if err != nil {
		return fail("%v", err)
	}
	p.Close()
	o := p.Options
	if o.Duration <= 0 {
		return fail("distributed.workers is %d but the test has no duration: set duration (a distributed test needs a fixed timeline)", ds.Workers)
	}
	inline = cloneMap(inline)
	if !cfg.Has("duration") {
		inline["duration"] = o.Duration.String()
	}
	if o.Arrival == load.Poisson && cfg.Seed == 0 {
		// Every worker must draw the same Poisson arrival sequence, or the
		// striped shares would not add up to one schedule.
		seed := int64(p.Seed&(1<<62-1)) | 1
		inline["seed"] = strconv.FormatInt(seed, 10)
		o.Seed = uint64(seed)
	}
	var raw []byte
	if cfgPath != "" {
		if raw, err = os.ReadFile(cfgPath); err != nil {
			return fail("read load config: %v", err)
		}
	}
	wire, err := EncodeSpec(cfg.Source(), raw, inline)
	if err != nil {
		return fail("%v", err)
	}
	j.rep.Logf(i, "load test: %s", describePlan(cfg, &o))
	if o.Arrival == load.Poisson {
		j.rep.Logf(i, "poisson seed %d (set seed: to repeat this arrival sequence)", o.Seed)
	}
	j.rep.Logf(i, "distributed over %d workers (min_workers %d, join_timeout %s, on_worker_loss %s); each worker checks its share against its own target policy and limits",
		ds.Workers, ds.Min(), ds.JoinTimeout, ds.OnWorkerLoss)

	// The daemon's load metrics count what this host sends: its own
	// segment does that through RunSegment, so the merged seconds are not
	// fed to them here.
	open := o.Rate > 0 || len(o.Stages) > 0
	sched := load.NewSchedule(&o)
	planSecs := int((o.Duration + time.Second - 1) / time.Second)
	targetAt := func(sec int) float64 {
		if !open || sec >= planSecs {
			return 0
		}
		return sched.PlannedCount(time.Duration(sec)*time.Second, time.Duration(sec+1)*time.Second)
	}
	prog := newProgress(progressEvery(j.r.o.ProgressInterval), planSecs, func(p load.Progress) { j.rep.Logf(i, "%s", load.FormatProgress(p)) })
	grace := o.Grace
	if grace == 0 {
		grace = load.DefaultGrace
	}
	out, err := j.r.o.Cluster.Coordinate(ctx, cluster.Plan{
		Spec:         wire,
		Duration:     o.Duration + max(grace, 0),
		Workers:      ds.Workers,
		MinWorkers:   ds.Min(),
		JoinTimeout:  ds.JoinTimeout,
		OnWorkerLoss: cluster.LossPolicy(ds.OnWorkerLoss),
	}, cluster.CoordOptions{
		Logf: func(format string, args ...any) { j.rep.Logf(i, format, args...) },
		OnSecond: func(cs *snapshot.Snapshot) {
			s := FromClusterSnapshot(cs, o.Endpoints)
			s.TargetRPS = targetAt(s.Second)
			prog.add(s)
		},
	})
	if err != nil {
		if ctx.Err() != nil {
			j.rep.Logf(i, "load test stopped: %v", context.Cause(ctx))
			return runnerv1.Result_RESULT_CANCELLED, nil
		}
		return fail("distributed load test: %v", err)
	}

	res := &load.Result{Open: open, Start: out.StartAt, Elapsed: o.Duration}
	for _, cs := range out.Seconds {
		s := FromClusterSnapshot(cs, o.Endpoints)
		s.TargetRPS = targetAt(s.Second)
		res.AddSnapshot(s)
	}
	if open {
		res.TargetRPS = sched.PlannedCount(0, o.Duration) / o.Duration.Seconds()
	}
	res.Finish()
	checks := plan.Evaluate(p.Thresholds, res)

	w := j.rep.Writer(i)
	if err := load.WriteText(w, res, checks); err != nil {
		return fail("write the summary: %v", err)
	}
	if err := WriteWorkers(w, out, o.Duration, false); err != nil {
		return fail("write the worker table: %v", err)
	}
	var md bytes.Buffer
	if err := load.WriteMarkdown(&md, res, checks); err == nil && WriteWorkers(&md, out, o.Duration, true) == nil {
		j.uploadSummary(i, md.Bytes())
	}
	sum := load.Summarize(res, checks)
	outputs := loadOutputs(sum)
	outputs["workers"] = strconv.Itoa(len(out.Workers))
	outputs["reassignments"] = strconv.Itoa(out.Reassignments)
	if out.Degraded {
		j.rep.Logf(i, "::warning::the run was degraded: a lost worker's share found no new owner, so less than the planned load was sent")
	}
	if sum.GeneratorBound {
		j.rep.Logf(i, "::warning::a load generator fell behind (%d dropped, %d late arrivals): see the per-worker rows; add workers or lower the rate", sum.Dropped, sum.Late)
	}
	return j.thresholdResult(i, " on the merged result", checks), outputs
}

func cloneMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m)+1)
	for k, v := range m {
		out[k] = v
	}
	return out
}

// WriteWorkers writes the per-worker rows of a distributed run: segments,
// requests, rate, dropped arrivals, CPU and clock offset, and why a worker
// was lost. markdown selects a Markdown table instead of aligned text.
func WriteWorkers(w io.Writer, out *cluster.Outcome, planned time.Duration, markdown bool) error {
	head := []string{"worker", "host", "segments", "requests", "rate/s", "dropped", "cpu %", "clock offset", "status"}
	var rows [][]string
	for _, r := range out.Workers {
		segs := make([]string, len(r.Segments))
		for k, s := range r.Segments {
			segs[k] = strconv.Itoa(s)
		}
		status := "ok"
		if r.Lost {
			status = "lost: " + r.Reason
		}
		var reqs int64
		if r.Total != nil {
			reqs = FromClusterSnapshot(r.Total, nil).Requests
		}
		rate := 0.0
		if planned > 0 {
			rate = float64(reqs) / planned.Seconds()
		}
		rows = append(rows, []string{r.ID, r.Host, strings.Join(segs, ","), strconv.FormatInt(reqs, 10),
			strconv.FormatFloat(rate, 'f', 1, 64), strconv.FormatInt(r.Dropped, 10),
			strconv.FormatFloat(r.CPUPct, 'f', 0, 64), r.ClockOffset.String(), status})
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

// progress turns merged run seconds into the step's progress lines.
type progress struct {
	every    int
	last     int // seconds after it (the grace period) are not shown
	emit     func(load.Progress)
	seen     int
	req, err int64
	dropped  int64
	interval load.Stats
	target   float64
	inFlight int
}

func newProgress(every, last int, emit func(load.Progress)) *progress {
	return &progress{every: every, last: last, emit: emit}
}

func progressEvery(d time.Duration) int {
	if d <= 0 {
		d = load.DefaultProgressInterval
	}
	return max(1, int((d+time.Second-1)/time.Second))
}

func (p *progress) add(s *load.Snapshot) {
	p.seen++
	p.req += s.Requests
	p.err += s.Errors
	p.dropped += s.Dropped
	p.interval.Merge(&s.Stats)
	p.target += s.TargetRPS
	p.inFlight = s.InFlight
	if p.seen%p.every != 0 && p.seen != p.last || p.seen > p.last {
		return
	}
	secs := float64(p.every)
	if rem := p.seen % p.every; rem != 0 {
		secs = float64(rem)
	}
	p.emit(load.Progress{
		Elapsed: time.Duration(s.Second+1) * time.Second, Requests: p.req, Errors: p.err,
		RPS: float64(p.interval.Requests) / secs, TargetRPS: p.target / secs,
		P50: p.interval.Quantile(0.50), P95: p.interval.Quantile(0.95), P99: p.interval.Quantile(0.99),
		InFlight: p.inFlight, Dropped: p.dropped,
	})
	p.interval, p.target = load.Stats{}, 0
}

// RunSegment runs this runner's share of another (or its own) runner's
// distributed load test: it decodes the shipped config, checks every
// target against THIS runner's policy and the share against THIS runner's
// limits before sending anything, enforces the policy again at dial time,
// tags requests with [SegmentHeader], and forwards per-second snapshots to
// the coordinator. It implements [cluster.SegmentRunner].
func (r *Runner) RunSegment(ctx context.Context, a cluster.Assignment) error {
	cfg, err := DecodeSpec(a.Spec)
	if err != nil {
		return err
	}
	pol := r.o.Policy
	if pol == nil {
		if pol, err = policy.New(ctx, policy.Options{Forge: r.o.Instance}); err != nil {
			return err
		}
	}
	var hosts []string
	for _, e := range cfg.Mix() {
		if err := pol.CheckURL(ctx, e.URL); err != nil {
			return err
		}
		if u, err := url.Parse(e.URL); err == nil {
			hosts = append(hosts, u.Hostname())
		}
	}
	if cfg.Headers == nil {
		cfg.Headers = map[string]string{}
	}
	cfg.Headers[SegmentHeader] = a.Worker + "/" + strconv.Itoa(a.Index)

	runCtx, stopRun := context.WithCancelCause(ctx)
	defer stopRun(nil)
	var refused atomic.Pointer[error]
	control := pol.Control(pol.HostsAllowed(hosts))
	var obs LoadObserver
	if r.o.LoadObserver != nil {
		obs = r.o.LoadObserver()
	}
	p, err := plan.New(cfg, plan.Settings{
		DialControl: func(network, address string, c syscall.RawConn) error {
			err := control(network, address, c)
			if err != nil && refused.CompareAndSwap(nil, &err) {
				stopRun(err)
			}
			return err
		},
		Resolver: r.o.Resolver,
		OnSecond: func(s *load.Snapshot) {
			if obs != nil {
				obs.Second(s)
			}
			a.Sink.Second(ToClusterSnapshot(s))
		},
	})
	if err != nil {
		return err
	}
	defer p.Close()
	share, _ := a.Range.Len().Float64()
	if err := checkShare(&p.Options, share, a.ScaleVUs, r.o.Limits); err != nil {
		return err
	}
	p.Options.Owns, p.Options.ScaleVUs = a.Owns, a.ScaleVUs
	p.Options.StartAt, p.Options.Offset = a.StartAt.Add(a.Offset), a.Offset
	if p.Options.Duration > 0 && a.Offset >= p.Options.Duration {
		return nil // taken over after the plan's last arrival: nothing left
	}
	if r.o.Logger != nil {
		r.o.Logger.Infof("cluster run %s: running segment %d (%s of the plan) from %s", a.Run, a.Index, a.Range, a.Offset)
	}
	if obs != nil {
		obs.LoadStarted(p.Options.Rate * share)
		defer obs.LoadDone()
	}
	res, _, err := p.Run(runCtx)
	if err != nil {
		return err
	}
	if r := refused.Load(); r != nil {
		return fmt.Errorf("stopped: %w", *r)
	}
	if r.o.Logger != nil {
		r.o.Logger.Infof("cluster run %s: segment %d done: %d requests, %d errors, %d dropped", a.Run, a.Index, res.Requests, res.Errors, res.Dropped)
	}
	return nil
}

// checkShare applies the runner admin's limits to this worker's share of
// a distributed plan: share of the peak rate, its scaled VUs, the whole
// concurrency (open model: in flight on this host) and the duration.
func checkShare(o *load.Options, share float64, scale func(int) int, l plan.Limits) error {
	var errs []error
	if l.MaxRate > 0 {
		peak := o.Rate
		for _, s := range o.Stages {
			peak = max(peak, s.From, s.To)
		}
		if mine := peak * share; mine > l.MaxRate {
			errs = append(errs, fmt.Errorf("this worker's share of the rate, %s req/s, is above its limit of %s (load.max_rate in this runner's config): add workers or lower rate",
				strconv.FormatFloat(mine, 'f', -1, 64), strconv.FormatFloat(l.MaxRate, 'f', -1, 64)))
		}
	}
	if l.MaxConcurrency > 0 {
		c := o.Concurrency
		if !(o.Rate > 0 || len(o.Stages) > 0) {
			v := max(o.VUs, o.Concurrency)
			for _, s := range o.VUStages {
				v = max(v, s.Target)
			}
			if scale != nil {
				v = scale(v)
			}
			c = v
		}
		if c > l.MaxConcurrency {
			errs = append(errs, fmt.Errorf("this worker's concurrency/vus %d is above its limit of %d (load.max_concurrency in this runner's config): lower concurrency or vus", c, l.MaxConcurrency))
		}
	}
	if l.MaxDuration > 0 && o.Duration > l.MaxDuration {
		errs = append(errs, fmt.Errorf("duration %s is above this worker's limit of %s (load.max_duration in this runner's config): lower duration", o.Duration, l.MaxDuration))
	}
	if len(errs) > 0 {
		return fmt.Errorf("load limits: %w", errors.Join(errs...))
	}
	return nil
}

// Metric keys of a load snapshot in a cluster snapshot. Per-endpoint keys
// are "ep|<path-escaped name>|<key>"; status and class keys carry their
// code or name after a '|'.
const (
	keyRequests = "requests"
	keyErrors   = "errors"
	keyBytesIn  = "bytes_in"
	keyBytesOut = "bytes_out"
	keyRetries  = "retries"
	keyLate     = "late"
	keyInFlight = "in_flight"
	keyLatency  = "latency"
	keyStatus   = "status|"
	keyClass    = "class|"
	keyEndpoint = "ep|"
)

// ToClusterSnapshot converts an engine snapshot into the cluster's
// mergeable form. Dropped arrivals go to [cluster.DroppedKey].
func ToClusterSnapshot(s *load.Snapshot) *snapshot.Snapshot {
	cs := snapshot.New(s.Second)
	putStats(cs, "", &s.Stats)
	for i := range s.Endpoints {
		putStats(cs, keyEndpoint+url.PathEscape(s.Endpoints[i].Name)+"|", &s.Endpoints[i].Stats)
	}
	if s.Dropped != 0 {
		cs.Counters[cluster.DroppedKey] = s.Dropped
	}
	if s.InFlight != 0 {
		cs.Counters[keyInFlight] = int64(s.InFlight)
	}
	return cs
}

func putStats(cs *snapshot.Snapshot, prefix string, st *load.Stats) {
	for k, v := range map[string]int64{keyRequests: st.Requests, keyErrors: st.Errors, keyBytesIn: st.BytesIn,
		keyBytesOut: st.BytesOut, keyRetries: st.Retries, keyLate: st.Late} {
		if v != 0 {
			cs.Counters[prefix+k] = v
		}
	}
	for code, n := range st.Status {
		cs.Counters[prefix+keyStatus+strconv.Itoa(code)] = n
	}
	for class, n := range st.Classes {
		cs.Counters[prefix+keyClass+class] = n
	}
	if st.Latency != nil && st.Latency.Count() > 0 {
		if b, err := st.Latency.Encode(); err == nil {
			if h, err := hdr.Decode(b); err == nil {
				cs.Hists[prefix+keyLatency] = h
			}
		}
	}
}

// FromClusterSnapshot converts a (merged) cluster snapshot back into an
// engine snapshot, with endpoints in the order of names (the plan's
// Options.Endpoints) and any others after them. TargetRPS is left 0: it is
// the plan's, not a sum over workers.
func FromClusterSnapshot(cs *snapshot.Snapshot, names []string) *load.Snapshot {
	s := &load.Snapshot{Second: cs.Second}
	eps := map[string]*load.Stats{}
	stats := func(key string) (*load.Stats, string) {
		rest, ok := strings.CutPrefix(key, keyEndpoint)
		if !ok {
			return &s.Stats, key
		}
		esc, field, ok := strings.Cut(rest, "|")
		if !ok {
			return nil, ""
		}
		name, err := url.PathUnescape(esc)
		if err != nil {
			return nil, ""
		}
		st := eps[name]
		if st == nil {
			st = &load.Stats{}
			eps[name] = st
		}
		return st, field
	}
	for k, v := range cs.Counters {
		switch k {
		case cluster.DroppedKey:
			s.Dropped += v
			continue
		case keyInFlight:
			s.InFlight += int(v)
			continue
		}
		st, field := stats(k)
		if st == nil {
			continue
		}
		switch field {
		case keyRequests:
			st.Requests += v
		case keyErrors:
			st.Errors += v
		case keyBytesIn:
			st.BytesIn += v
		case keyBytesOut:
			st.BytesOut += v
		case keyRetries:
			st.Retries += v
		case keyLate:
			st.Late += v
		default:
			if c, ok := strings.CutPrefix(field, keyStatus); ok {
				if code, err := strconv.Atoi(c); err == nil {
					if st.Status == nil {
						st.Status = map[int]int64{}
					}
					st.Status[code] += v
				}
			} else if c, ok := strings.CutPrefix(field, keyClass); ok {
				if st.Classes == nil {
					st.Classes = map[string]int64{}
				}
				st.Classes[c] += v
			}
		}
	}
	for k, h := range cs.Hists {
		st, field := stats(k)
		if st == nil || field != keyLatency || h.TotalCount() == 0 {
			continue
		}
		b, err := h.Encode(hdr.V2CompressedEncodingCookieBase)
		if err != nil {
			continue
		}
		lh, err := load.DecodeHistogram(b)
		if err != nil {
			continue
		}
		if st.Latency == nil {
			st.Latency = load.NewHistogram()
		}
		st.Latency.Merge(lh)
	}
	order := slices.Clone(names)
	var extra []string
	for n := range eps {
		if !slices.Contains(order, n) {
			extra = append(extra, n)
		}
	}
	slices.Sort(extra)
	for _, n := range append(order, extra...) {
		if st := eps[n]; st != nil {
			s.Endpoints = append(s.Endpoints, load.EndpointStats{Name: n, Stats: *st})
		}
	}
	return s
}

var _ cluster.SegmentRunner = (*Runner)(nil)
