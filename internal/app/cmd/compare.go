package cmd

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/forgeload/forgeload/internal/pkg/load/compare"
)

func newCompareCmd() *cobra.Command {
	var limits []string
	var markdown bool
	c := &cobra.Command{
		Use:   "compare OLD.json NEW.json",
		Short: "Compare two load-test JSON results, marking changes beyond run-to-run noise",
		Long: `compare reads two JSON results (forgeload load --json-output, or a job's
load step artifact, of any forgeload version) and prints the change of the
rate, the latency percentiles, the error rate and the systems under test,
each marked as beyond the run-to-run noise or not (docs/results.md says how
that is decided).

--limit METRIC=PERCENT sets the largest allowed worsening, for example
--limit p99=10% --limit rps=5% --limit error_rate=0.5% (for error_rate in
percentage points). The exit code is 1 when a change beyond noise is worse
than its limit, 2 for bad input, else 0.`,
		Args: cobra.ExactArgs(2),
		RunE: func(c *cobra.Command, args []string) error {
			lim := compare.Limits{}
			for _, l := range limits {
				k, v, err := compare.ParseLimit(l)
				if err != nil {
					return withCode(ExitBadInput, fmt.Errorf("--limit: %w", err))
				}
				lim[k] = v
			}
			old, err := compare.Load(args[0])
			if err != nil {
				return withCode(ExitBadInput, err)
			}
			cur, err := compare.Load(args[1])
			if err != nil {
				return withCode(ExitBadInput, err)
			}
			ds := compare.Compare(old, cur, lim)
			write := compare.WriteText
			if markdown {
				write = compare.WriteMarkdown
			}
			if err := write(c.OutOrStdout(), args[0], args[1], ds); err != nil {
				return err
			}
			if compare.Regressed(ds) {
				n := 0
				for _, d := range ds {
					if d.Regressed {
						n++
					}
				}
				return withCode(ExitFailure, fmt.Errorf("%d metrics regressed beyond their limits", n))
			}
			return nil
		},
	}
	c.Flags().StringArrayVar(&limits, "limit", nil, "largest allowed worsening, METRIC=PERCENT (repeatable): rps, p50, p90, p95, p99, p99.9, error_rate (points), sut_cpu, sut_mem")
	c.Flags().BoolVar(&markdown, "markdown", false, "print the table as Markdown")
	return c
}
