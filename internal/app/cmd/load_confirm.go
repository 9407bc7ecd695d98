package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/forgeload/forgeload/internal/pkg/load/build"
	"github.com/forgeload/forgeload/internal/pkg/load/compare"
	"github.com/forgeload/forgeload/internal/pkg/load/outcome"
	"github.com/forgeload/forgeload/internal/pkg/load/spec"
	"github.com/forgeload/forgeload/internal/pkg/loadrun"
)

// maxConfirm is the most reruns --confirm may ask for (as confirm: in a
// job's load step).
const maxConfirm = 3

// checkConfirm checks --confirm: 0 to 3, and only with a baseline.
func checkConfirm(f *loadFlags) error {
	if f.confirm < 0 || f.confirm > maxConfirm {
		return fmt.Errorf("--confirm %d: give a whole number from 0 to %d: how many times to run the test again, when it fails only on its baseline thresholds, before it fails, e.g. --confirm 1", f.confirm, maxConfirm)
	}
	if f.confirm > 0 && len(f.baseline) == 0 {
		return errors.New("--confirm needs --baseline: a rerun confirms a regression against a baseline, so add --baseline OLD.json, or remove --confirm")
	}
	return nil
}

// rerunner builds a test from cfg and s again (without the dashboard's
// feed: the dashboard shows the first run as it happens, then the run
// that decides), runs it and judges it against base as runLoad judges
// the first run.
func rerunner(ctx context.Context, cfg *spec.Config, s build.Settings, base *compare.Result) func() (*outcome.Outcome, error) {
	s.OnSecond = nil
	return func() (*outcome.Outcome, error) {
		t, err := loadrun.New(ctx, cfg, loadrun.Settings{Engine: s})
		if err != nil {
			return nil, withCode(ExitBadInput, err)
		}
		defer t.Close()
		out, err := t.Run(ctx)
		if err != nil {
			return nil, withCode(ExitBadInput, err)
		}
		return outcome.New(outcome.Input{
			Result: out.Result, Thresholds: t.Engine.Thresholds, Baseline: base, Info: localRunInfo(cfg),
			Stopped: out.Stop(), Cancelled: ctx.Err() != nil, ValidityWarn: cfg.Validity == spec.ValidityWarn, Duet: out.Duet,
		}), nil
	}
}

// confirmLoad runs the test again with rerun, up to --confirm times, while
// the last run failed only on its baseline thresholds (o.Regression),
// printing each earlier run's summary and comparison on stdout under its
// name; it returns the run that decides: the first that did not regress,
// else the last.
func confirmLoad(ctx context.Context, f *loadFlags, o *outcome.Outcome, rerun func() (*outcome.Outcome, error), stdout, stderr io.Writer) (*outcome.Outcome, error) {
	for i := 1; i <= f.confirm && o.Regression && ctx.Err() == nil; i++ {
		fmt.Fprintf(stdout, "%s:\n", confirmRunName(i-1))
		if err := o.WriteText(stdout); err != nil {
			return nil, err
		}
		if err := writeBaselineDeltas(stdout, o); err != nil {
			return nil, err
		}
		fmt.Fprintf(stdout, "\n%s:\n", confirmRunName(i))
		fmt.Fprintf(stderr, "confirm: %s failed only on its baseline thresholds (%v); running the test again (rerun %d of up to %d)\n", confirmRunName(i-1), o.Verdict.Err(), i, f.confirm)
		var err error
		if o, err = rerun(); err != nil {
			return nil, err
		}
		switch {
		case !o.Regression:
			fmt.Fprintf(stderr, "confirm: the rerun did not confirm the regression; decided by %s\n", confirmRunName(i))
		case i == f.confirm:
			fmt.Fprintf(stderr, "confirm: every rerun agrees (REGRESSION %d times); decided by %s\n", i+1, confirmRunName(i))
		}
	}
	return o, nil
}

// confirmRunName names run i of a confirmed test: "first run",
// "confirm run 1", …
func confirmRunName(i int) string {
	if i == 0 {
		return "first run"
	}
	return fmt.Sprintf("confirm run %d", i)
}
