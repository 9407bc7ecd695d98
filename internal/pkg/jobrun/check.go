package jobrun

import (
	"context"
	"fmt"
	"io"
	"strings"

	runnerv1 "gitea.dev/actions-proto-go/runner/v1"

	"github.com/forgeload/forgeload/internal/pkg/workflow"
)

// refusal is a step this runner cannot run, found before any step runs:
// the step, what it uses, why it cannot run and what to do instead.
type refusal struct {
	i             int
	name, uses    string
	why, instead  string
	continueOnErr bool // continue-on-error: true, literally: the job goes on
}

func (r refusal) String() string {
	return fmt.Sprintf("step %d %q uses %q: %s; %s", r.i+1, r.name, r.uses, r.why, r.instead)
}

// actionAdvice is what to add to the fetch error of a well-known action
// the forge did not serve, by name in lower case: what works here once
// the action is on the forge, and what to do without it.
var actionAdvice = map[string]string{
	"actions/setup-go":          "it downloads Go from the internet, which a runner without access cannot; install Go on the runner host (or use a container: image that has it) and drop this step",
	"actions/setup-node":        "it downloads Node.js from the internet, which a runner without access cannot; install Node.js on the runner host (or use a container: image that has it) and drop this step",
	"actions/setup-python":      "it downloads Python from the internet, which a runner without access cannot; install Python on the runner host (or use a container: image that has it) and drop this step",
	"actions/setup-java":        "it downloads a JDK from the internet, which a runner without access cannot; install a JDK on the runner host (or use a container: image that has it) and drop this step",
	"actions/cache":             "once the forge serves it, actions/cache@v3 and @v4 run against this runner's cache server (cache.enabled in the runner's config)",
	"actions/upload-artifact":   "once the forge serves it, actions/upload-artifact@v3 runs here (@v4 refuses every server but GitHub's); forgeload/load uploads its own report without it",
	"actions/download-artifact": "once the forge serves it, actions/download-artifact@v3 runs here (@v4 refuses every server but GitHub's); forgeload/load fetches its baseline itself (with: baseline:)",
}

// checkSteps checks every step of the job before any runs. Each step that
// uses what this runner cannot run is reported, in the job's rows and in
// its own, naming the step, what it uses, why and what to do instead. A
// job with such a step, unless it continues on error, fails before any step
// runs (its other steps are reported skipped), as Gitea's runner fails a
// job whose actions it cannot fetch when the job is set up. ec is the
// job's context when it starts: a step whose with: has no ${{ }} is
// resolved against it, so inputs a kind refuses are reported now too.
func (j *job) checkSteps(ctx context.Context, ec *workflow.Context) bool {
	var refused []refusal
	for i, st := range j.wf.Job.Steps {
		if r, bad := j.checkStep(ctx, ec, i, st); bad {
			refused = append(refused, r)
		}
	}
	fatal := false
	for _, r := range refused {
		level := "error"
		if r.continueOnErr {
			level = "warning"
		} else {
			fatal = true
		}
		j.rep.Logf(-1, "::%s::%s", level, r)
	}
	if !fatal {
		return true
	}
	j.rep.Logf(-1, "::error::this runner cannot run %d step(s) of job %s (listed above), so none of its steps ran; fix them and re-run the job", countFatal(refused), j.wf.JobID)
	byStep := map[int]refusal{}
	for _, r := range refused {
		byStep[r.i] = r
	}
	for i := range j.wf.Job.Steps {
		j.rep.StepStart(i)
		if r, ok := byStep[i]; ok {
			j.rep.Logf(i, "::error::%s", r)
			j.rep.StepEnd(i, runnerv1.Result_RESULT_FAILURE)
			continue
		}
		j.rep.StepEnd(i, runnerv1.Result_RESULT_SKIPPED)
	}
	return false
}

func countFatal(rs []refusal) int {
	n := 0
	for _, r := range rs {
		if !r.continueOnErr {
			n++
		}
	}
	return n
}

// checkStep checks one step; true means it cannot run, as r says. A
// remote action is fetched now, and its metadata checked.
func (j *job) checkStep(ctx context.Context, ec *workflow.Context, i int, st workflow.Step) (r refusal, bad bool) {
	if st.Uses == "" {
		return refusal{}, false
	}
	r = refusal{i: i, name: st.DisplayName(), uses: st.Uses, continueOnErr: strings.TrimSpace(st.ContinueOnError) == "true"}
	r.why, r.instead = usesSupport(st.Uses)
	if r.why != "" {
		return r, true
	}
	if strings.HasPrefix(st.Uses, "docker://") && j.deps.Containers == nil {
		r.why = "docker:// steps need a Docker Engine, and this runner has none"
		if j.deps.ContainersErr != nil {
			r.why += " (" + j.deps.ContainersErr.Error() + ")"
		}
		r.instead = "run the job on a runner with Docker, or run the image's program in a run: step"
		return r, true
	}
	if isRemoteAction(st.Uses) && !IsNative(st.Uses) {
		if err := j.prepareRemote(ctx, st.Uses, j.rep.Writer(-1)); err != nil {
			r.why, r.instead = err.Error(), remoteAdvice(st.Uses)
			return r, true
		}
		if uses, err := j.prepareNested(ctx, st.Uses, j.rep.Writer(-1), map[string]bool{}, 1); err != nil {
			r.why, r.instead = err.Error(), remoteAdvice(uses)
			return r, true
		}
		return refusal{}, false
	}
	action, _ := workflow.UsesRef(st.Uses)
	if _, native := usesKinds[strings.ToLower(action)]; !native || hasExpr(st.With) {
		// Resolved when the step starts: a local action is read then,
		// after the checkout that brings it.
		return refusal{}, false
	}
	if _, err := j.resolveStep(ec, st, r.name); err != nil {
		r.why, r.instead = err.Error(), "fix the step's with: inputs"
		return r, true
	}
	return refusal{}, false
}

func hasExpr(m map[string]string) bool {
	for _, v := range m {
		if strings.Contains(v, "${{") {
			return true
		}
	}
	return false
}

// usesSupport says why a uses: reference cannot run here and what to do
// instead; "" when it can.
func usesSupport(uses string) (why, instead string) {
	action, ref := workflow.UsesRef(uses)
	lower := strings.ToLower(action)
	switch {
	case strings.HasPrefix(lower, "docker://"):
		return "", ""
	case isLocalAction(uses):
		return "", ""
	case strings.HasPrefix(action, "../") || action == "." || action == "..":
		return "a local action must be a directory inside the workspace",
			"write uses: ./path/to/action (relative to the repository's root)"
	case ref == "":
		return "a uses: reference needs a version after @ (owner/repo@v1)", "add the ref, e.g. " + action + "@v1"
	}
	if _, ok := usesKinds[lower]; ok {
		return "", ""
	}
	if strings.Count(action, "/") >= 2 && (strings.HasSuffix(lower, ".yml") || strings.HasSuffix(lower, ".yaml")) {
		return "a reusable workflow is called by a job, not a step",
			"move it to a job of its own: jobs.<id>.uses: " + uses + " (with: and secrets: beside it), and needs: that job where its outputs are used"
	}
	return "", "" // a remote action: fetched and checked when the job starts
}

// IsNative reports whether uses names an action this runner runs itself
// (actions/checkout, forgeload/load): one that needs no fetch, no
// Node.js and no Docker Engine.
func IsNative(uses string) bool {
	action, _ := workflow.UsesRef(uses)
	_, ok := usesKinds[strings.ToLower(action)]
	return ok
}

// remoteAdvice is what to do about a remote action this runner could not
// fetch or check: the fetch error says which.
func remoteAdvice(uses string) string {
	action, ref := workflow.UsesRef(uses)
	advice := "check that " + action + " exists on the forge with the ref " + ref +
		" (owner/repo resolves against the forge's DEFAULT_ACTIONS_URL: mirror the repository there, or write the full https://host/owner/repo@ref) and that this job's token may read it; composite, JavaScript (runner.node) and Docker actions run here"
	if a := actionAdvice[strings.ToLower(action)]; a != "" {
		advice += "; " + a
	}
	return advice
}

// prepareRemote fetches the remote action uses names (the job's rows log
// the fetch) and checks that it is a composite action.
func (j *job) prepareRemote(ctx context.Context, uses string, out io.Writer) error {
	f, err := j.fetchAction(ctx, uses, out)
	if err != nil {
		return err
	}
	_, _, err = j.loadAction(f.root, f.ref.path, f.ref.name()+"@"+f.ref.ref+": ")
	return err
}

// prepareNested fetches and checks, when the job starts, each action from
// a repository that the action uses names (fetched already) uses, when it
// is a composite action, depth deep, and those they use in turn, as
// GitHub's runner does when it sets the job up: their pre: runs then
// (runPres). It returns the uses: that failed, with an error naming
// where it is. seen holds the actions walked, each once.
func (j *job) prepareNested(ctx context.Context, uses string, out io.Writer, seen map[string]bool, depth int) (string, error) {
	f := j.actions[uses]
	if f == nil || seen[uses] || depth > MaxActionDepth {
		return "", nil // too deep: the composite step reports it when it runs
	}
	seen[uses] = true
	a, file, err := j.loadAction(f.root, f.ref.path, f.ref.name()+"@"+f.ref.ref+": ")
	if err != nil || a.Runs.Using != "composite" {
		return "", nil // a bad action is prepareRemote's to report
	}
	for k, st := range a.Runs.Steps {
		if !isRemoteAction(st.Uses) || IsNative(st.Uses) {
			continue
		}
		if why, _ := usesSupport(st.Uses); why != "" {
			continue // reported when the composite step runs
		}
		if err := j.prepareRemote(ctx, st.Uses, out); err != nil {
			return st.Uses, fmt.Errorf("%s: runs.steps[%d] uses %q: %w", file, k, st.Uses, err)
		}
		if u, err := j.prepareNested(ctx, st.Uses, out, seen, depth+1); err != nil {
			return u, err
		}
	}
	return "", nil
}
