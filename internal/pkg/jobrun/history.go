package jobrun

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/forgeload/forgeload/internal/pkg/client"
	"github.com/forgeload/forgeload/internal/pkg/load/compare"
	"github.com/forgeload/forgeload/internal/pkg/workflow"
)

// DefaultBaselineRuns is how many earlier results a load step's baseline:
// takes when baseline_runs is not given.
const DefaultBaselineRuns = 5

// MaxBaselineRuns is the most baseline_runs may ask for: the forge lists
// at most 50 runs on a page, and the history is read from the first.
const MaxBaselineRuns = 50

// baselineAsk is what a load step asks to compare with: the branch
// (with.baseline) and how many of its newest results (with.baseline_runs).
type baselineAsk struct {
	branch string
	runs   int
}

func isBaselineKey(k string) bool { return k == "baseline" || k == "baseline_runs" }

// parseBaselineAsk reads baseline and baseline_runs from a load step's
// interpolated with:.
func parseBaselineAsk(with map[string]string) (baselineAsk, error) {
	ask := baselineAsk{branch: with["baseline"], runs: DefaultBaselineRuns}
	v, ok := with["baseline_runs"]
	if !ok {
		return ask, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 1 || n > MaxBaselineRuns {
		return ask, fmt.Errorf("with: baseline_runs: %q is not a whole number from 1 to %d: write how many of the branch's newest results to compare with, e.g. baseline_runs: %d", v, MaxBaselineRuns, DefaultBaselineRuns)
	}
	if _, asked := with["baseline"]; !asked {
		return ask, fmt.Errorf("with: baseline_runs is set but baseline is not: add baseline: BRANCH (or baseline: true for the default branch)")
	}
	ask.runs = n
	return ask, nil
}

var unsafeArtifactChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// maxArtifactName bounds the artifact's name; longer names end in a hash.
const maxArtifactName = 120

// artifactName is the run artifact of load step i of this job:
// forgeload-<job id>-<step id> (step-<n> for a step without an id), then,
// for a leg of a matrix, the leg's values in the order of their keys. The
// forge keeps one artifact per run and name, so every job of a run (each
// leg of a matrix, each parallel job) needs its own, and the history of a
// step is found by it. When the characters an artifact name cannot hold
// were replaced, or the name is too long, a hash of the job, step and leg
// ends it, so two of them never share a name.
func (j *job) artifactName(st workflow.Step, i int) string {
	stepID := st.ID
	if stepID == "" {
		stepID = "step-" + strconv.Itoa(i+1)
	}
	parts := []string{j.wf.JobID, stepID}
	var leg []string
	if m := j.wf.Job.Matrix; len(m) > 0 {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			leg = append(leg, fmt.Sprint(m[k]))
		}
		parts = append(parts, leg...)
	}
	safe := make([]string, len(parts))
	changed := false
	for k, p := range parts {
		safe[k] = strings.Trim(unsafeArtifactChars.ReplaceAllString(p, "-"), "-")
		changed = changed || safe[k] != p
	}
	name := "forgeload-" + strings.Join(slices.DeleteFunc(safe, func(s string) bool { return s == "" }), "-")
	if !changed && len(name) <= maxArtifactName {
		return name
	}
	id, _ := json.Marshal(parts)
	sum := sha256.Sum256(id)
	return name[:min(len(name), maxArtifactName-9)] + "-" + hex.EncodeToString(sum[:4])
}

// readHistory reads the result.json of each artifact (newest first) and
// returns the results oldest first, as [compare.History] takes them, with
// the ids of their runs, newest first; one that cannot be read is left
// out with a warning.
func (j *stepJob) readHistory(arts []client.RunArtifact, branch string) ([]*compare.Result, []int64) {
	var runs []*compare.Result
	var ids []int64
	for _, a := range arts {
		r, err := resultFromZip(a.Zip, fmt.Sprintf("run %d on %s", a.RunID, branch))
		if err != nil {
			j.Logf("::warning::forgeload/load: left out of the baseline: %v", err)
			continue
		}
		runs = append(runs, r)
		ids = append(ids, a.RunID)
	}
	slices.Reverse(runs)
	return runs, ids
}

// describeHistory says which results the baseline is, for the log:
// "the forgeload-perf-api result of run 7" or "the median of the
// forgeload-perf-api results of runs 7, 6 and 5", of the workflow and
// branch, and how many were asked when fewer were found. ids are the
// runs, newest first.
func describeHistory(q client.HistoryQuery, ids []int64) string {
	names := make([]string, len(ids))
	for k, id := range ids {
		names[k] = strconv.FormatInt(id, 10)
	}
	var s string
	if len(ids) == 1 {
		s = fmt.Sprintf("the %s result of run %s", q.Name, names[0])
	} else {
		s = fmt.Sprintf("the median of the %s results of runs %s and %s", q.Name, strings.Join(names[:len(names)-1], ", "), names[len(names)-1])
	}
	s += fmt.Sprintf(" (workflow %q, branch %q)", q.Workflow, q.Branch)
	if len(ids) < q.N {
		s += fmt.Sprintf(": %d of the %d asked (baseline_runs), as no more of the branch's newest successful runs have it", len(ids), q.N)
	}
	if len(ids) > 1 && len(ids) < compare.FewRuns {
		s += fmt.Sprintf("; with fewer than %d, the run-to-run noise is judged loosely", compare.FewRuns)
	}
	return s
}

// refusedOnCancel says, once per job, that the forge accepted no upload
// because the job was cancelled: it is how the forge works, not an error
// of the step, whose summary above stays the (partial) report.
func (j *stepJob) refusedOnCancel(err error) {
	j.mu.Lock()
	said := j.saidRefused
	j.saidRefused = true
	j.mu.Unlock()
	if said {
		return
	}
	j.Logf("forgeload/load: the job was cancelled, and the forge accepts no upload from a cancelling task, so the report is not uploaded as a run artifact; the summary above is this run's partial report (the forge answered: %v)", err)
}
