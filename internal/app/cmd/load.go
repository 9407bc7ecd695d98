package cmd

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/forgeload/forgeload/internal/pkg/load"
	"github.com/forgeload/forgeload/internal/pkg/load/build"
	"github.com/forgeload/forgeload/internal/pkg/load/outcome"
	"github.com/forgeload/forgeload/internal/pkg/load/spec"
	"github.com/forgeload/forgeload/internal/pkg/loadrun"
)

// loadFlags are the flags of `forgeload load`. The string-typed ones are
// passed to spec.Config.Override only when given, so flags override the file
// and nothing else.
type loadFlags struct {
	file             string
	target           string
	rate             string
	concurrency      string
	maxConcurrency   string
	validity         string
	vus              string
	duration         string
	total            string
	arrivalModel     string
	thresholds       []string
	jsonOutput       string
	markdownOutput   string
	htmlOutput       string
	baseline         []string
	confirm          int
	resultsDir       string
	dashboardLinger  bool
	baselineTarget   string
	baselineLimits   []string
	dashboard        string
	progressInterval time.Duration
	quiet            bool
	crankfire        *crankfireFlags
}

func newLoadCmd() *cobra.Command {
	f := &loadFlags{}
	c := &cobra.Command{
		Use:   "load [config.yaml | -f config.yaml] [flags]",
		Short: "Run a load test from a Crankfire-compatible config, locally",
		Long: `load runs one load test with the embedded engine and prints a summary.

The config is Crankfire's YAML or JSON format (plus vus and think_time);
flags override the file's keys. A config with distributed.workers above 1
is refused: a multi-host test runs as a forge job on a daemon in a
cluster. Without -f, the flags alone
describe the test:

  forgeload load --target http://127.0.0.1:8080/ --rate 500 -d 30s \
      --threshold 'http_req_duration:p99 < 300ms'

A progress line goes to stderr every --progress-interval and the summary to
stdout. The exit code is 0 when every threshold passed, 1 when one failed,
the run was INVALID (it did not deliver the load asked for: dropped
arrivals, under 99% of the rate, a full worker pool, a generator behind
its schedule; --validity warn only warns), the run was interrupted or no
request succeeded (it measured nothing), and 2 for bad input (flags
included).

With load, -c is --concurrency: load does not read the daemon config.
'forgeload load validate FILE' checks a load config without sending
anything.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if err := loadFileArg(f, args); err != nil {
				return err
			}
			return runLoad(c.Context(), f, c.Flags().Changed, c.OutOrStdout(), c.ErrOrStderr())
		},
	}
	c.AddCommand(newLoadValidateCmd())
	fl := c.Flags()
	fl.StringVarP(&f.file, "file", "f", "", "load config file (YAML or JSON, Crankfire-compatible)")
	fl.StringVar(&f.target, "target", "", "target URL (config key target)")
	fl.StringVarP(&f.rate, "rate", "r", "", "arrival rate in requests per second; 0 runs a closed loop (config key rate)")
	fl.StringVarP(&f.concurrency, "concurrency", "c", "", "workers to start with; with --rate the pool grows up to --max-concurrency (config key concurrency)")
	fl.StringVar(&f.maxConcurrency, "max-concurrency", "", "with --rate, the most workers (requests in flight) the pool may grow to; default min(1000, rate × timeout) (config key max_concurrency)")
	fl.StringVar(&f.validity, "validity", "", "fail (default) or warn: what a run that did not deliver the load asked for does (config key validity)")
	fl.StringVarP(&f.vus, "vus", "u", "", "virtual users that loop, as k6's --vus: the closed model (config key vus)")
	fl.StringVarP(&f.duration, "duration", "d", "", "run time, e.g. 30s or 5m (config key duration)")
	fl.StringVarP(&f.total, "total", "t", "", "stop after this many requests (config key total)")
	fl.StringVar(&f.arrivalModel, "arrival-model", "", "uniform or poisson (config key arrival.model)")
	fl.StringArrayVar(&f.thresholds, "threshold", nil, "threshold such as 'http_req_duration:p99 < 300ms' (repeatable; replaces the file's thresholds)")
	fl.StringVar(&f.jsonOutput, "json-output", "", "also write the summary as JSON to this file; alone (Crankfire's switch) or '-', print it on stdout instead of the table")
	fl.StringVar(&f.markdownOutput, "markdown-output", "", "also write the summary as Markdown to this file")
	fl.StringVar(&f.htmlOutput, "html-output", "", "also write the self-contained HTML report to this file (config key html_output)")
	fl.StringVar(&f.dashboard, "dashboard", "", "serve the live dashboard on this loopback address (or port) while the test runs; it ends with the run unless --dashboard-linger; alone, a free port on 127.0.0.1 (config key dashboard)")
	fl.Lookup("dashboard").NoOptDefVal = dashboardDefaultAddr
	fl.StringArrayVar(&f.baseline, "baseline", nil, "a JSON result (--json-output of an earlier run) to compare with; thresholds may use 'baseline'; repeat it, oldest first, to compare with the median of several")
	fl.IntVar(&f.confirm, "confirm", 0, "with --baseline, run the test again up to this many times (0 to 3) when it fails only on its baseline thresholds, and fail only if every rerun agrees")
	fl.StringVar(&f.resultsDir, "results-dir", resultsDirDefault, "write the HTML report and the JSON result of each run into a new directory under this one, unless --html-output and --json-output name files; '' writes none")
	fl.BoolVar(&f.dashboardLinger, "dashboard-linger", false, "keep serving the dashboard's final result after the run, until Ctrl-C")
	fl.StringVar(&f.baselineTarget, "baseline-target", "", "run a paired A/B test: every other arrival goes to the same path on this origin, and the verdict compares the two (config key baseline_target)")
	fl.StringArrayVar(&f.baselineLimits, "baseline-limit", nil, "allowed worsening of a paired A/B run, METRIC=PERCENT such as p99=10 (repeatable; config key baseline_limits; default p50, p95, p99 10%, error_rate 1 point)")
	fl.DurationVar(&f.progressInterval, "progress-interval", load.DefaultProgressInterval, "how often to print the progress line to stderr")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "no progress line")
	f.crankfire = addCrankfireFlags(fl)
	return c
}

// loadOverrides maps the given flags to config keys.
func loadOverrides(f *loadFlags, changed func(string) bool) map[string]string {
	kv := map[string]string{}
	for _, m := range []struct{ flag, key, val string }{
		{"target", "target", f.target},
		{"rate", "rate", f.rate},
		{"concurrency", "concurrency", f.concurrency},
		{"max-concurrency", "max_concurrency", f.maxConcurrency},
		{"validity", "validity", f.validity},
		{"vus", "vus", f.vus},
		{"duration", "duration", f.duration},
		{"total", "total", f.total},
		{"arrival-model", "arrival.model", f.arrivalModel},
		{"baseline-target", "baseline_target", f.baselineTarget},
	} {
		if changed(m.flag) {
			kv[m.key] = m.val
		}
	}
	if len(f.thresholds) > 0 {
		kv["thresholds"] = strings.Join(f.thresholds, "\n")
	}
	if len(f.baselineLimits) > 0 {
		b, _ := json.Marshal(f.baselineLimits) // strings always encode
		kv["baseline_limits"] = string(b)
	}
	return kv
}

// runLoad runs `forgeload load`: the config from file and flags, the
// engine's settings, the run, then the summary, the files and the verdict.
func runLoad(ctx context.Context, f *loadFlags, changed func(string) bool, stdout, stderr io.Writer) error {
	cfg, err := loadTestConfig(f, changed, stderr)
	if err != nil {
		return err
	}
	s := engineSettings(f, cfg, stderr)
	dash, err := startDashboard(ctx, f, cfg, stderr)
	if err != nil {
		return withCode(ExitBadInput, err)
	}
	defer dash.stop()
	if dash != nil {
		s.OnSecond = dash.second
	}
	t, err := loadrun.New(ctx, cfg, loadrun.Settings{Engine: s})
	if err != nil {
		return withCode(ExitBadInput, err)
	}
	defer t.Close()
	p := t.Engine
	dash.setPlanned(plannedDuration(&p.Options))
	if len(p.Thresholds) == 0 && p.Duet == nil { // a paired A/B run is judged by its verdict
		fmt.Fprintln(stderr, "warning:", build.NoThresholdsWarning)
	}
	// The summary files are created before the run, so that a path that
	// cannot be written is reported before anything is sent.
	outs, err := createOutputs(f, cfg)
	defer outs.close()
	if err != nil {
		return err
	}
	if err := checkConfirm(f); err != nil {
		return withCode(ExitBadInput, err)
	}
	base, err := readBaseline(f.baseline, p.Thresholds, stderr)
	if err != nil {
		return withCode(ExitBadInput, err)
	}
	out, err := t.Run(ctx)
	if err != nil {
		return withCode(ExitBadInput, err)
	}
	o := outcome.New(outcome.Input{
		Result: out.Result, Thresholds: p.Thresholds, Baseline: base, Info: localRunInfo(cfg),
		Stopped: out.Stop(), Cancelled: ctx.Err() != nil, ValidityWarn: cfg.Validity == spec.ValidityWarn, Duet: out.Duet,
	})
	if o, err = confirmLoad(ctx, f, o, rerunner(ctx, cfg, s, base), stdout, stderr); err != nil {
		return err
	}
	for _, w := range o.Verdict.Warnings {
		fmt.Fprintln(stderr, "warning:", w)
	}
	return reportLoad(ctx, o, f, cfg, outs, dash, stdout, stderr)
}

// loadTestConfig assembles the load config from -f (or --config) and the flags,
// refuses a distributed one and prints its warnings; errors carry
// ExitBadInput.
func loadTestConfig(f *loadFlags, changed func(string) bool, stderr io.Writer) (*spec.Config, error) {
	if err := checkFileFlags(f); err != nil {
		return nil, err
	}
	var values map[string]any
	if f.crankfire != nil {
		kv, err := f.crankfire.overrides(changed)
		if err != nil {
			return nil, withCode(ExitBadInput, err)
		}
		values = kv
	}
	cfg, err := loadrun.Load(loadrun.Input{File: f.file, Name: "flags", Values: values, Inline: loadOverrides(f, changed)})
	if err != nil {
		return nil, withCode(ExitBadInput, err)
	}
	if ds := cfg.Distributed; ds != nil && ds.Workers > 1 {
		return nil, withCode(ExitBadInput, fmt.Errorf("%s: distributed.workers is %d, but forgeload load runs on this machine only and would send one host's share as the whole test: run it as a job on a forgeload daemon that is in a cluster (docs/cluster.md), or remove distributed: (or set workers: 1) to run it here", cfg.Source(), ds.Workers))
	}
	for _, w := range cfg.Warnings() {
		fmt.Fprintln(stderr, "warning:", w)
	}
	if n := cfg.HARRemoved(); n > 0 {
		fmt.Fprintf(stderr, "warning: har_file: %d recorded credential headers (Authorization, Cookie, …) are not replayed; use auth or headers to send your own\n", n)
	}
	return cfg, nil
}

// checkFileFlags refuses a file flag given a flag as its value and folds
// Crankfire's --config into -f.
func checkFileFlags(f *loadFlags) error {
	for _, pf := range []struct{ flag, val string }{
		{"file", f.file}, {"json-output", f.jsonOutput}, {"markdown-output", f.markdownOutput}, {"html-output", f.htmlOutput},
	} {
		if strings.HasPrefix(pf.val, "-") && (pf.flag != "json-output" || pf.val != jsonToStdout) {
			return withCode(ExitBadInput, fmt.Errorf("--%s %q: that is a flag, not a file name: give the file name right after --%s (write ./%s for a file whose name starts with '-')", pf.flag, pf.val, pf.flag, pf.val))
		}
	}
	if f.crankfire != nil && f.crankfire.config != "" {
		if f.file != "" && f.file != f.crankfire.config {
			return withCode(ExitBadInput, fmt.Errorf("--config %q and -f %q name two load configs: keep one", f.crankfire.config, f.file))
		}
		f.file = f.crankfire.config
	}
	return nil
}

// engineSettings are the engine's hooks for a run in a terminal: progress,
// trace summary and failure log on stderr.
func engineSettings(f *loadFlags, cfg *spec.Config, stderr io.Writer) build.Settings {
	s := build.Settings{ProgressInterval: f.progressInterval, Getenv: os.Getenv,
		TraceSummary: func(line string, complete bool) {
			if !complete {
				line = "warning: " + line
			}
			fmt.Fprintln(stderr, line)
		}}
	if !f.quiet {
		s.Progress = func(p load.Progress) { fmt.Fprintln(stderr, load.FormatProgress(p)) }
	}
	if cfg.LogErrors {
		s.LogFailure = outcome.FailureLogger(cfg.Mix(), func(format string, args ...any) {
			fmt.Fprintf(stderr, format+"\n", args...)
		})
	}
	return s
}

// reportLoad prints the summary and the baseline deltas, writes the summary
// files, hands the result to the dashboard and turns the verdict into the
// exit code.
func reportLoad(ctx context.Context, o *outcome.Outcome, f *loadFlags, cfg *spec.Config, outs outputFiles, dash *liveDashboard, stdout, stderr io.Writer) error {
	// Crankfire's json_output: true prints the JSON summary instead of the
	// table.
	summary := outcome.Text
	if (cfg.JSONOutput && f.jsonOutput == "") || f.jsonOutput == jsonToStdout {
		summary = outcome.JSON
	}
	if err := summary(o, stdout); err != nil {
		return err
	}
	if err := writeBaselineDeltas(stdout, o); err != nil {
		return err
	}
	for _, of := range outs {
		if err := of.writeAndClose(o); err != nil {
			return err
		}
		if of.announce != "" {
			fmt.Fprintf(stderr, "%s: %s\n", of.announce, of.path)
		}
	}
	dash.finish(ctx, o, f.dashboardLinger)
	// Every verdict but a pass exits 1, a cancel (Ctrl-C) included.
	if err := o.Verdict.Err(); err != nil {
		return withCode(ExitFailure, err)
	}
	return nil
}

// outputFiles are the summary files of one run; close closes those not yet
// written.
type outputFiles []*outputFile

func (outs outputFiles) close() {
	for _, o := range outs {
		if o.fh != nil {
			_ = o.fh.Close()
		}
	}
}

// createOutputs creates the summary files the flags and the config name;
// the files created before a failure are returned too, for close.
func createOutputs(f *loadFlags, cfg *spec.Config) (outputFiles, error) {
	var outs outputFiles
	for _, o := range []*outputFile{
		{what: "--json-output", path: f.jsonOutput, write: outcome.JSON},
		{what: "--markdown-output", path: f.markdownOutput, write: outcome.Markdown},
		{what: "--html-output (or html_output)", path: cmp.Or(f.htmlOutput, cfg.HTMLOutput), write: outcome.HTML},
	} {
		if o.path == "" || (o.what == "--json-output" && o.path == jsonToStdout) {
			continue
		}
		var err error
		if o.fh, err = os.Create(o.path); err != nil {
			return outs, withCode(ExitBadInput, fmt.Errorf("%s: %w: check that the directory exists and is writable", o.what, err))
		}
		outs = append(outs, o)
	}
	defaults, err := defaultOutputs(f, cmp.Or(f.htmlOutput, cfg.HTMLOutput))
	if err != nil {
		return outs, withCode(ExitBadInput, err)
	}
	for _, o := range defaults {
		if o.fh, err = os.Create(o.path); err != nil {
			return outs, withCode(ExitBadInput, fmt.Errorf("%s: %w", o.what, err))
		}
		outs = append(outs, o)
	}
	return outs, nil
}

// outputFile is a summary file named by a flag, created before the run and
// written after it.
type outputFile struct {
	what, path string
	write      outcome.Writer
	fh         *os.File
	// announce, when set, prints "<announce>: <path>" once written: the
	// files of the results directory, which no flag named.
	announce string
}

func (o *outputFile) writeAndClose(oc *outcome.Outcome) error {
	err := o.write(oc, o.fh)
	if cerr := o.fh.Close(); err == nil && cerr != nil {
		err = cerr
	}
	o.fh = nil
	if err != nil {
		return fmt.Errorf("write summary file %s: %w", o.path, err)
	}
	return nil
}

func newLoadValidateCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "validate FILE",
		Short: "Check a load config as `load -f FILE` would, without sending anything; exit 2 if it is bad",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			cfg, err := loadrun.Load(loadrun.Input{File: args[0]})
			if err != nil {
				return withCode(ExitBadInput, err)
			}
			p, err := build.New(cfg, build.Settings{})
			if err != nil {
				return withCode(ExitBadInput, err)
			}
			p.Close()
			out := c.OutOrStdout()
			fmt.Fprintf(out, "%s: valid load config\n", args[0])
			if len(p.Thresholds) == 0 && p.Duet == nil {
				fmt.Fprintln(out, "warning:", build.NoThresholdsWarning)
			}
			return nil
		},
	}
}
