package cmd

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/forgeload/forgeload/internal/pkg/load/changepoint"
	"github.com/forgeload/forgeload/internal/pkg/load/compare"
)

func newCompareCmd() *cobra.Command {
	var limits []string
	var markdown bool
	var history string
	c := &cobra.Command{
		Use:   "compare BASE.json... NEW.json | compare --history DIR",
		Short: "Compare a load-test JSON result with one or more earlier ones, marking changes beyond noise",
		Long: `compare reads JSON results (forgeload load --json-output, or a job's
load step artifact, of any forgeload version): one or more earlier runs,
then the new run last. It prints the change of the rate, the latency
percentiles, the error rate and the systems under test, each marked as
beyond noise or not (docs/results.md says how that is decided). With
several earlier runs the old value of each metric is their median, and a
change must also exceed their run-to-run spread (a multiple of their MAD).

--limit METRIC=PERCENT sets the largest allowed worsening, for example
--limit p99=10% --limit rps=5% --limit error_rate=0.5% (for error_rate in
percentage points); a value without a unit is a percent. The exit code is
1 when a change beyond noise is worse than its limit, 2 for bad input,
else 0.

--history DIR reads every JSON result in DIR instead (oldest first, in
the order of their names, numbers compared as numbers) and reports where
each metric's level shifted: its change points, found by E-divisive means
with a t-test (deterministic). The exit code is then 0, or 2 for bad
input.`,
		Args: func(c *cobra.Command, args []string) error {
			if history != "" {
				if len(args) > 0 {
					return withCode(ExitBadInput, fmt.Errorf("--history %s reads its results from the directory: give no files with it", history))
				}
				return nil
			}
			return cobra.MinimumNArgs(2)(c, args)
		},
		RunE: func(c *cobra.Command, args []string) error {
			if history != "" {
				return changePoints(c.OutOrStdout(), history)
			}
			lim, err := parseLimits(c.ErrOrStderr(), limits)
			if err != nil {
				return err
			}
			runs := make([]*compare.Result, 0, len(args))
			for _, a := range args {
				r, err := compare.Load(a)
				if err != nil {
					return withCode(ExitBadInput, err)
				}
				runs = append(runs, r)
			}
			base, cur := compare.History(runs[:len(runs)-1]), runs[len(runs)-1]
			ds := compare.Compare(base, cur, lim)
			write := compare.WriteText
			if markdown {
				write = compare.WriteMarkdown
			}
			if err := write(c.OutOrStdout(), base.Path, cur.Path, ds); err != nil {
				return err
			}
			if n := countRegressed(ds); n > 0 {
				return withCode(ExitFailure, fmt.Errorf("%d metrics regressed beyond their limits", n))
			}
			return nil
		},
	}
	c.Flags().StringArrayVar(&limits, "limit", nil, "largest allowed worsening, METRIC=PERCENT (repeatable; a plain number is a percent): rps, p50, p90, p95, p99, p99.9, error_rate (points), sut_cpu, sut_mem")
	c.Flags().BoolVar(&markdown, "markdown", false, "print the table as Markdown")
	c.Flags().StringVar(&history, "history", "", "report the change points of the results in this directory instead")
	return c
}

// changePoints prints where the metrics of the results in dir shifted.
func changePoints(w io.Writer, dir string) error {
	runs, err := compare.LoadHistory(dir)
	if err != nil {
		return withCode(ExitBadInput, err)
	}
	return compare.WriteChanges(w, runs, compare.ChangePoints(runs, changepoint.Options{}))
}

// parseLimits parses --limit flags; a value written without a unit is
// echoed to w with the unit it was read in.
func parseLimits(w io.Writer, flags []string) (compare.Limits, error) {
	lim := compare.Limits{}
	for _, l := range flags {
		k, v, err := compare.ParseLimit(l)
		if err != nil {
			return nil, withCode(ExitBadInput, fmt.Errorf("--limit: %w", err))
		}
		if !strings.HasSuffix(strings.TrimSpace(l), "%") {
			fmt.Fprintf(w, "compare: --limit %s read as %s\n", l, compare.FormatLimit(k, v))
		}
		lim[k] = v
	}
	return lim, nil
}

func countRegressed(ds []compare.Delta) int {
	n := 0
	for _, d := range ds {
		if d.Regressed {
			n++
		}
	}
	return n
}
