package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/time/rate"

	"github.com/forgeload/forgeload/internal/pkg/load"
	"github.com/forgeload/forgeload/internal/pkg/load/plan"
	"github.com/forgeload/forgeload/internal/pkg/load/spec"
)

// loadFlags are the flags of `forgeload load`. The string-typed ones are
// passed to spec.Config.Override only when given, so flags override the file
// and nothing else.
type loadFlags struct {
	file             string
	target           string
	rate             string
	concurrency      string
	duration         string
	total            string
	arrivalModel     string
	thresholds       []string
	jsonOutput       string
	markdownOutput   string
	progressInterval time.Duration
	quiet            bool
}

func newLoadCmd() *cobra.Command {
	f := &loadFlags{}
	c := &cobra.Command{
		Use:   "load [-f config.yaml] [flags]",
		Short: "Run a load test from a Crankfire-compatible config, locally",
		Long: `load runs one load test with the embedded engine and prints a summary.

The config is Crankfire's YAML or JSON format (plus vus, think_time and
distributed); flags override the file's keys. Without -f, the flags alone
describe the test:

  forgeload load --target http://127.0.0.1:8080/ --rate 500 -d 30s \
      --threshold 'http_req_duration:p99 < 300ms'

A progress line goes to stderr every --progress-interval and the summary to
stdout. The exit code is 0 when every threshold passed, 1 when one failed or
the run was interrupted, and 2 for bad input.

Note: -c N (a number) sets the concurrency; the global -c/--config (the
daemon config path) is not used by load.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			// The root's persistent -c names the daemon config; `load -c 50`
			// means concurrency, so a numeric -c is taken as that.
			if cf := c.Flags().Lookup("config"); cf != nil && cf.Changed && !c.Flags().Changed("concurrency") {
				if _, err := strconv.Atoi(cf.Value.String()); err == nil {
					f.concurrency = cf.Value.String()
				}
			}
			return runLoad(c.Context(), f, c.Flags().Changed, c.OutOrStdout(), c.ErrOrStderr())
		},
	}
	fl := c.Flags()
	fl.StringVarP(&f.file, "file", "f", "", "load config file (YAML or JSON, Crankfire-compatible)")
	fl.StringVar(&f.target, "target", "", "target URL (config key target)")
	fl.StringVar(&f.rate, "rate", "", "arrival rate in requests per second; 0 runs a closed loop (config key rate)")
	fl.StringVar(&f.concurrency, "concurrency", "", "workers, i.e. the most requests in flight; -c N works too (config key concurrency)")
	fl.StringVarP(&f.duration, "duration", "d", "", "run time, e.g. 30s or 5m (config key duration)")
	fl.StringVar(&f.total, "total", "", "stop after this many requests (config key total)")
	fl.StringVar(&f.arrivalModel, "arrival-model", "", "uniform or poisson (config key arrival.model)")
	fl.StringArrayVar(&f.thresholds, "threshold", nil, "threshold such as 'http_req_duration:p99 < 300ms' (repeatable; replaces the file's thresholds)")
	fl.StringVar(&f.jsonOutput, "json-output", "", "also write the summary as JSON to this file")
	fl.StringVar(&f.markdownOutput, "markdown-output", "", "also write the summary as Markdown to this file")
	fl.DurationVar(&f.progressInterval, "progress-interval", load.DefaultProgressInterval, "how often to print the progress line to stderr")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "no progress line")
	return c
}

// loadOverrides maps the given flags to config keys.
func loadOverrides(f *loadFlags, changed func(string) bool) map[string]string {
	kv := map[string]string{}
	for _, m := range []struct{ flag, key, val string }{
		{"target", "target", f.target},
		{"rate", "rate", f.rate},
		{"concurrency", "concurrency", f.concurrency},
		{"duration", "duration", f.duration},
		{"total", "total", f.total},
		{"arrival-model", "arrival.model", f.arrivalModel},
	} {
		if changed(m.flag) || (m.flag == "concurrency" && m.val != "") {
			kv[m.key] = m.val
		}
	}
	if len(f.thresholds) > 0 {
		kv["thresholds"] = strings.Join(f.thresholds, "\n")
	}
	return kv
}

func runLoad(ctx context.Context, f *loadFlags, changed func(string) bool, stdout, stderr io.Writer) error {
	var cfg *spec.Config
	var err error
	if f.file != "" {
		cfg, err = spec.Load(f.file)
	} else {
		cfg, err = spec.Parse("flags", []byte("{}"))
	}
	if err != nil {
		return withCode(ExitBadInput, err)
	}
	if err := cfg.Override(loadOverrides(f, changed)); err != nil {
		return withCode(ExitBadInput, err)
	}
	if err := cfg.Validate(); err != nil {
		return withCode(ExitBadInput, err)
	}
	s := plan.Settings{ProgressInterval: f.progressInterval}
	if !f.quiet {
		s.Progress = func(p load.Progress) { fmt.Fprintln(stderr, load.FormatProgress(p)) }
	}
	if cfg.LogErrors {
		// Crankfire's log_errors: the first failures, then one a second.
		every := &rate.Sometimes{First: 10, Interval: time.Second}
		names := cfg.Mix()
		s.LogFailure = func(smp *load.Sample, err error) {
			every.Do(func() {
				name := ""
				if smp.Endpoint < len(names) {
					name = names[smp.Endpoint].Name
				}
				fmt.Fprintf(stderr, "request failed: endpoint %q status %d class %s: %v\n", name, smp.Status, smp.Class, err)
			})
		}
	}
	p, err := plan.New(cfg, s)
	if err != nil {
		return withCode(ExitBadInput, err)
	}
	defer p.Close()
	res, checks, err := p.Run(ctx)
	if err != nil {
		return withCode(ExitBadInput, err)
	}
	// Crankfire's json_output: true prints the JSON summary instead of the
	// table.
	summary := load.Reporter(load.WriteText)
	if cfg.JSONOutput && f.jsonOutput == "" {
		summary = load.WriteJSON
	}
	if err := summary(stdout, res, checks); err != nil {
		return err
	}
	for _, out := range []struct {
		path  string
		write load.Reporter
	}{{f.jsonOutput, load.WriteJSON}, {f.markdownOutput, load.WriteMarkdown}} {
		if out.path == "" {
			continue
		}
		if err := writeReport(out.path, out.write, res, checks); err != nil {
			return err
		}
	}
	if !plan.Passed(checks) {
		n := 0
		for _, c := range checks {
			if !c.Passed {
				n++
			}
		}
		return withCode(ExitFailure, fmt.Errorf("%d of %d thresholds failed", n, len(checks)))
	}
	if res.Interrupted {
		return withCode(ExitFailure, errors.New("load test interrupted before its end"))
	}
	return nil
}

func writeReport(path string, write load.Reporter, res *load.Result, checks []load.Check) error {
	fh, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("create summary file: %w: check that the directory exists and is writable", err)
	}
	if err := write(fh, res, checks); err != nil {
		_ = fh.Close()
		return err
	}
	if err := fh.Close(); err != nil {
		return fmt.Errorf("write summary file %s: %w", path, err)
	}
	return nil
}
