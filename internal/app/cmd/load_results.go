package cmd

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/forgeload/forgeload/internal/pkg/load"
	"github.com/forgeload/forgeload/internal/pkg/load/build"
	"github.com/forgeload/forgeload/internal/pkg/load/compare"
	"github.com/forgeload/forgeload/internal/pkg/load/outcome"
	"github.com/forgeload/forgeload/internal/pkg/load/outcome/summary"
	"github.com/forgeload/forgeload/internal/pkg/load/resultview"
	"github.com/forgeload/forgeload/internal/pkg/load/spec"
	"github.com/forgeload/forgeload/internal/pkg/load/threshold"
	"github.com/forgeload/forgeload/internal/pkg/loadrun"
	"github.com/forgeload/forgeload/internal/pkg/ver"
)

// localRunInfo describes a `forgeload load` run for its reports: the config
// it came from, with credentials masked, and this binary's version.
func localRunInfo(cfg *spec.Config) *summary.RunInfo {
	return &summary.RunInfo{
		Step:     cfg.Source(),
		Version:  ver.Version(),
		Protocol: loadrun.Protocol(cfg),
		Config:   build.Describe(cfg),
		Phases:   build.Phases(cfg),
	}
}

// readBaseline reads --baseline: one result, or several (oldest first)
// made into one baseline, their median. Without one, it notes on stderr
// that the thresholds against a baseline will be skipped.
func readBaseline(paths []string, ths []threshold.Threshold, stderr io.Writer) (*compare.Result, error) {
	if len(paths) == 0 {
		if threshold.HasBaseline(ths) {
			fmt.Fprintln(stderr, "notice: no --baseline given: the thresholds that use baseline are skipped")
		}
		return nil, nil
	}
	runs := make([]*compare.Result, 0, len(paths))
	for _, p := range paths {
		r, err := compare.Load(p)
		if err != nil {
			return nil, fmt.Errorf("--baseline: %w", err)
		}
		runs = append(runs, r)
	}
	return compare.History(runs), nil
}

// writeBaselineDeltas prints the comparison with the baseline, if any.
func writeBaselineDeltas(w io.Writer, o *outcome.Outcome) error {
	if o.Baseline == nil {
		return nil
	}
	fmt.Fprintln(w)
	return compare.WriteText(w, o.Baseline.Path, "this run", o.Deltas())
}

// dashboardDefaultAddr is where --dashboard without an address (or the
// config's dashboard: true) serves: a free port on the loopback.
const dashboardDefaultAddr = "127.0.0.1:0"

// liveDashboard is the --dashboard server of one `forgeload load`. Its
// methods do nothing on a nil receiver, so the command calls them
// unconditionally.
type liveDashboard struct {
	d      *resultview.Dashboard
	url    string
	stderr io.Writer
	cancel context.CancelFunc
	done   chan error
}

// startDashboard serves the live dashboard when --dashboard or the config's
// dashboard key asks for it, and says where on stderr.
func startDashboard(ctx context.Context, f *loadFlags, cfg *spec.Config, stderr io.Writer) (*liveDashboard, error) {
	addr := dashboardListenAddr(f.dashboard)
	if addr == "" && cfg.Dashboard {
		addr = dashboardDefaultAddr
	}
	if addr == "" {
		return nil, nil
	}
	ln, err := resultview.ListenLoopback(addr)
	if err != nil {
		return nil, fmt.Errorf("--dashboard: %w", err)
	}
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	ld := &liveDashboard{d: resultview.NewDashboard(localRunInfo(cfg)), url: "http://" + ln.Addr().String() + "/", stderr: stderr, cancel: cancel, done: make(chan error, 1)}
	go func() { ld.done <- ld.d.Serve(sctx, ln) }()
	fmt.Fprintf(stderr, "dashboard: %s\n", ld.url)
	return ld, nil
}

// setPlanned gives the dashboard the run's planned length (0: unknown).
func (l *liveDashboard) setPlanned(t time.Duration) {
	if l != nil {
		l.d.SetPlannedDuration(t)
	}
}

// plannedDuration is how long o plans to run: its duration cap, else its
// load patterns or user stages when the run ends with them; 0 when it runs
// until a total or a stop.
func plannedDuration(o *load.Options) time.Duration {
	if o.Duration > 0 {
		return o.Duration
	}
	var sum time.Duration
	if len(o.Stages) > 0 && o.Rate == 0 {
		for _, s := range o.Stages {
			sum += s.Duration
		}
	}
	for _, s := range o.VUStages {
		sum += s.Duration
	}
	return sum
}

// second is the run's OnSecond hook; nil without a dashboard.
func (l *liveDashboard) second(s *load.Snapshot) {
	if l != nil {
		l.d.Second(s)
	}
}

// finish shows the final result; with linger (--dashboard-linger) it
// keeps serving it until ctx ends (Ctrl-C), else the dashboard ends with
// the run, so that a script running forgeload load does not hang.
func (l *liveDashboard) finish(ctx context.Context, o *outcome.Outcome, linger bool) {
	if l == nil {
		return
	}
	// Said before the page gets the result, so that whoever saw the final
	// result on the page can also find how to stop on stderr.
	if linger && ctx.Err() == nil {
		fmt.Fprintf(l.stderr, "dashboard: the final result is at %s; press Ctrl-C to stop\n", l.url)
	}
	l.d.Finish(o.Result, o.Checks)
	if linger {
		<-ctx.Done()
	}
}

// stop stops the server and waits for it.
func (l *liveDashboard) stop() {
	if l == nil {
		return
	}
	l.cancel()
	if err := <-l.done; err != nil {
		fmt.Fprintf(l.stderr, "warning: %v\n", err)
	}
}
