package jobrun

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/forgeload/forgeload/internal/pkg/load/outcome"
)

// MaxConfirm is the most reruns `confirm:` may ask for.
const MaxConfirm = 3

// parseConfirm reads a load step's with.confirm: how many times to run
// the load test again when its comparison with the baseline judged
// REGRESSION before the step fails (0, the default, never). It needs a
// baseline: to compare with.
func parseConfirm(with map[string]string) (int, error) {
	v, ok := with["confirm"]
	if !ok {
		return 0, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 0 || n > MaxConfirm {
		return 0, fmt.Errorf("with: confirm: %q is not a whole number from 0 to %d: write how many times to run the load test again, when it fails only on its baseline thresholds, before the step fails, e.g. confirm: 1", v, MaxConfirm)
	}
	if _, asked := with["baseline"]; n > 0 && !asked {
		return 0, fmt.Errorf("with: confirm is set but baseline is not: a rerun confirms a regression against a baseline, so add baseline: BRANCH (or baseline: true for the default branch), or remove confirm")
	}
	return n, nil
}

// runReport is one run of a load step as it was logged: its outcome, its
// Markdown summary (with the comparison, if any) when that could be
// written, and the comparison alone in Markdown (nil without a baseline).
type runReport struct {
	o          *outcome.Outcome
	md         []byte
	mdOK       bool
	comparison []byte
}

// runName names run i of a step for people: "first run", "confirm run 1", …
func runName(i int) string {
	if i == 0 {
		return "first run"
	}
	return "confirm run " + strconv.Itoa(i)
}

// runTag names run i of a step for files and outputs: "first", "confirm",
// "confirm-2", "confirm-3".
func runTag(i int) string {
	switch i {
	case 0:
		return "first"
	case 1:
		return "confirm"
	}
	return "confirm-" + strconv.Itoa(i)
}

// runFiles are the report and result file names of run i in the step's
// artifact: report.html and result.json for the first run (the one a
// later run's baseline reads), report-confirm.html and
// result-confirm.json for the first rerun, then -confirm-2, -confirm-3.
func runFiles(i int) (report, result string) {
	if i == 0 {
		return "report.html", "result.json"
	}
	return "report-" + runTag(i) + ".html", "result-" + runTag(i) + ".json"
}

// confirmNext logs why run i (0 the first) of a step that confirms is run
// again, and reports whether it is: only when its comparison judged
// REGRESSION and reruns are left.
func (j *stepJob) confirmNext(reps []runReport, confirm int) bool {
	i := len(reps) - 1
	o := reps[i].o
	if !o.Regression || i >= confirm {
		return false
	}
	for _, r := range o.Verdict.Reasons {
		j.Logf("%s: REGRESSION: %s", runName(i), r)
	}
	j.Logf("confirm: running the load test again (rerun %d of up to %d) before the step fails on its baseline thresholds", i+1, confirm)
	return true
}

// confirmDecision logs which run decided a step that was run again, and
// says so in Markdown for the job summary and the pull request comment.
func (j *stepJob) confirmDecision(reps []runReport) string {
	last := len(reps) - 1
	o := reps[last].o
	var msg string
	switch {
	case o.Regression:
		msg = fmt.Sprintf("every rerun agrees (REGRESSION %d times): the step fails", len(reps))
	case o.Verdict.Kind == outcome.Pass:
		msg = "the rerun did not confirm the regression of the first run: the step passes"
	default:
		msg = fmt.Sprintf("the rerun ended %s", strings.ToUpper(o.Verdict.Kind.String()))
	}
	msg += fmt.Sprintf("; decided by the %s (decided_by: %s)", runName(last), runTag(last))
	j.Logf("confirm: %s", msg)
	return "**confirm:** " + msg + ".\n"
}

// confirmMarkdown is the job summary of a step that was run again: which
// run decided, then each run's summary under its own heading.
func confirmMarkdown(decision string, reps []runReport) []byte {
	var b bytes.Buffer
	b.WriteString(decision)
	for i, r := range reps {
		if !r.mdOK {
			continue
		}
		fmt.Fprintf(&b, "\n### %s%s\n\n", strings.ToUpper(runName(i)[:1]), runName(i)[1:])
		b.Write(r.md)
	}
	return b.Bytes()
}
