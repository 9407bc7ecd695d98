package jobrun

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"path/filepath"
	"strings"

	runnerv1 "gitea.dev/actions-proto-go/runner/v1"

	"github.com/forgeload/forgeload/internal/pkg/jobfile"
	"github.com/forgeload/forgeload/internal/pkg/workflow"
)

// MaxActionDepth bounds how deep composite actions nest (an action that
// uses itself, say).
const MaxActionDepth = 10

// isLocalAction reports whether uses names an action in the workspace:
// "./path".
func isLocalAction(uses string) bool {
	return strings.HasPrefix(uses, "./")
}

// compositeStep is a uses: step of a composite action, its metadata read
// and checked and its inputs resolved when the step starts.
type compositeStep struct {
	name   string
	uses   string
	dir    string // the action's directory: GITHUB_ACTION_PATH
	file   string // its action.yml, for messages
	action *workflow.Action
	inputs map[string]any
	env    map[string]string // the uses: step's own env:, resolved
	notes  []string          // warnings for the step's log (unknown inputs ...)
}

// newCompositeStep reads the action st uses (local, from the workspace,
// or remote, fetched into the task directory when the job started),
// through the task directory (no symlink leads the read out of it), and
// resolves its inputs against ec.
func (j *job) newCompositeStep(ec *workflow.Context, st workflow.Step) (step, error) {
	var base, rel, label string
	if f, ok := j.actions[st.Uses]; ok {
		base, rel, label = f.root, f.ref.path, f.ref.name()+"@"+f.ref.ref+": "
	} else {
		var err error
		if rel, err = jobfile.Rel(j.ws, strings.TrimPrefix(st.Uses, "./")); err != nil {
			return nil, fmt.Errorf("%w; a local action is a directory of the workspace: ./path/to/action", err)
		}
		base = j.ws
	}
	a, file, err := j.loadAction(base, rel, label)
	if err != nil {
		return nil, err
	}
	s := &compositeStep{name: st.DisplayName(), uses: st.Uses, dir: filepath.Join(base, rel), file: file, action: a}
	if s.inputs, s.notes, err = resolveInputs(ec, a, st.With, file); err != nil {
		return nil, err
	}
	s.env = make(map[string]string, len(st.Env))
	for _, k := range sortedKeys(st.Env) {
		if s.env[k], err = ec.Interpolate(st.Env[k]); err != nil {
			return nil, fmt.Errorf("env %s: %w", k, err)
		}
	}
	switch {
	case isNodeAction(a):
		return j.newNodeStep(st, a, file, base, rel, s.inputs, s.env)
	case a.Runs.Using == "docker":
		return newDockerActionStep(ec, st, a, file, s.dir, s.inputs, s.env)
	}
	return s, nil
}

// loadAction reads and parses rel/action.yml, else rel/action.yaml, inside
// base (a directory of the task directory), and checks that it is a
// composite action, or a JavaScript action that can run here. file names the file read in messages: label (the
// remote action, or "" for the workspace) and its path in base.
func (j *job) loadAction(base, rel, label string) (a *workflow.Action, file string, err error) {
	root, err := j.td.OpenRoot(base)
	if err != nil {
		return nil, "", err
	}
	defer root.Close()
	var data []byte
	for _, name := range []string{"action.yml", "action.yaml"} {
		p := path.Join(filepath.ToSlash(rel), name)
		file = label + p
		data, err = jobfile.ReadIn(root, p, file, workflow.MaxActionBytes)
		if !errors.Is(err, fs.ErrNotExist) {
			break
		}
	}
	switch {
	case errors.Is(err, fs.ErrNotExist) && label == "":
		return nil, "", fmt.Errorf("no action.yml or action.yaml in %s of the workspace; check the repository out first (uses: actions/checkout) or fix the path", orDot(rel))
	case errors.Is(err, fs.ErrNotExist):
		return nil, "", fmt.Errorf("%sno action.yml or action.yaml in %s; check the action's name and directory", label, orDot(rel))
	case err != nil:
		return nil, "", err
	}
	if a, err = workflow.ParseAction(file, data); err != nil {
		return nil, "", err
	}
	switch {
	case isNodeAction(a):
		if err := j.checkNode(a, file, base, rel); err != nil {
			return nil, "", err
		}
	case a.Runs.Using == "docker":
		if err := j.checkDockerAction(a, file, filepath.Join(base, rel)); err != nil {
			return nil, "", err
		}
	case a.Runs.Using != "composite":
		return nil, "", fmt.Errorf("%s: runs.using: %s actions are not run by this runner yet (only composite, docker and, with runner.node, JavaScript ones)", file, a.Runs.Using)
	}
	return a, file, nil
}

func orDot(rel string) string {
	if rel == "" || rel == "." {
		return "the repository's root"
	}
	return rel
}

// resolveInputs is the inputs context of a composite action: each input
// the step's with: gives (matched case-insensitively), else its default
// (evaluated against ec), else "". Inputs the action does not declare, and
// required ones not given, are notes, as GitHub warns of them.
func resolveInputs(ec *workflow.Context, a *workflow.Action, with map[string]string, file string) (map[string]any, []string, error) {
	given, err := ec.InterpolateMap(with)
	if err != nil {
		return nil, nil, fmt.Errorf("with.%w", err)
	}
	byLower := map[string]string{}
	for k := range given {
		byLower[strings.ToLower(k)] = k
	}
	inputs := map[string]any{}
	var notes []string
	for _, id := range a.InputIDs {
		in := a.Inputs[id]
		if k, ok := byLower[strings.ToLower(id)]; ok {
			inputs[id] = given[k]
			delete(byLower, strings.ToLower(id))
			continue
		}
		v := ""
		if in.HasDefault {
			if v, err = ec.Interpolate(in.Default); err != nil {
				return nil, nil, fmt.Errorf("%s: inputs.%s.default: %w", file, id, err)
			}
		} else if strings.EqualFold(in.Required, "true") {
			notes = append(notes, fmt.Sprintf("input %q is required by %s and not given in with:", id, file))
		}
		inputs[id] = v
	}
	for _, k := range sortedKeys(byLower) {
		notes = append(notes, fmt.Sprintf("with.%s is not an input of %s (it declares: %s); it is ignored", byLower[k], file, strings.Join(a.InputIDs, ", ")))
	}
	return inputs, notes, nil
}

// run runs the action's steps in order as parts of this step (their rows
// in its log), then evaluates its outputs. Every uses: among them is
// checked before the first runs.
func (s *compositeStep) run(ctx context.Context, j *stepJob) (runnerv1.Result, map[string]string) {
	if j.depth >= MaxActionDepth {
		j.Logf("::error::step %q: composite actions nest more than %d deep (%s uses an action that leads back to it?); flatten them", s.name, MaxActionDepth, s.uses)
		return runnerv1.Result_RESULT_FAILURE, nil
	}
	for _, n := range s.notes {
		j.Logf("::warning::%s", n)
	}
	for k, st := range s.action.Runs.Steps {
		if st.Uses == "" {
			continue
		}
		why, instead := usesSupport(st.Uses)
		if why == "" && isRemoteAction(st.Uses) && !IsNative(st.Uses) {
			if err := j.prepareRemote(ctx, st.Uses, j.Writer()); err != nil {
				why, instead = err.Error(), remoteAdvice(st.Uses)
			}
		}
		if why != "" {
			j.Logf("::error::%s: %s: runs.steps[%d] uses %q: %s; %s", s.uses, s.file, k, st.Uses, why, instead)
			return runnerv1.Result_RESULT_FAILURE, nil
		}
	}
	c := &compositeRun{s: s, j: j, steps: map[string]workflow.StepResult{}, status: workflow.StatusSuccess}
	for k, st := range s.action.Runs.Steps {
		c.runOne(ctx, k, st)
	}
	return c.finish()
}

// compositeRun is one run of a composite action: its steps' results and
// its status so far.
type compositeRun struct {
	s      *compositeStep
	j      *stepJob
	steps  map[string]workflow.StepResult
	status workflow.JobStatus
}

// context is the expression context inside the action: the job's, with
// the action's inputs, its own steps, the uses: step's env and
// github.action_path.
func (c *compositeRun) context() *workflow.Context {
	ec := c.j.exprContext(c.status)
	ec.Inputs = c.s.inputs
	ec.Steps = c.steps
	gh := maps.Clone(ec.Github)
	gh["action_path"] = c.s.dir
	ec.Github = gh
	maps.Copy(ec.Env, c.s.env)
	return ec
}

// runOne runs step k of the action, when its if: holds.
func (c *compositeRun) runOne(ctx context.Context, k int, st workflow.Step) {
	if ctx.Err() != nil {
		c.status = workflow.StatusCancelled
	}
	ec := c.context()
	name := st.DisplayName()
	ok, err := ec.EvalIf(st.If)
	if err != nil {
		c.j.Logf("::error::%s: %s: runs.steps[%d] %q: if: %v", c.s.uses, c.s.file, k, name, err)
		c.record(st, "failure", "failure", nil)
		c.status = workflow.StatusFailure
		return
	}
	if !ok {
		c.record(st, "skipped", "skipped", nil)
		return
	}
	c.j.Logf("▶ %s: %s", c.s.uses, name)
	sub := &stepJob{job: c.j.job, i: c.j.i, sub: fmt.Sprintf("%s.%d", c.j.fileID(), k), depth: c.j.depth + 1,
		lim: c.j.lim.nested(st.ContinueOnError, ec), inLocal: c.j.inLocal}
	if sub.inLocal == "" && isLocalAction(c.s.uses) {
		sub.inLocal = c.s.uses
	}
	res, outputs := c.j.execStep(ctx, ec, st, sub, c.resolve)
	coe, err := ec.EvalBool(st.ContinueOnError)
	if err != nil {
		c.j.Logf("::warning::continue-on-error: %v", err)
	}
	outcome := resultWord(res)
	conclusion := outcome
	if res == runnerv1.Result_RESULT_FAILURE && coe {
		conclusion = "success"
	}
	c.record(st, outcome, conclusion, outputs)
	switch {
	case res == runnerv1.Result_RESULT_CANCELLED:
		c.status = workflow.StatusCancelled
	case res == runnerv1.Result_RESULT_FAILURE && !coe && c.status == workflow.StatusSuccess:
		c.status = workflow.StatusFailure
	}
}

// resolve resolves a step of the action: a run: step sees the uses:
// step's env under its own, and GITHUB_ACTION_PATH; its working directory
// is the workspace unless it sets one (the job's defaults do not apply).
func (c *compositeRun) resolve(ec *workflow.Context, st workflow.Step, name string) (step, error) {
	if st.Run == "" {
		return c.j.resolveStep(ec, st, name)
	}
	if st.WorkingDirectory == "" {
		st.WorkingDirectory = "."
	}
	sh, err := c.j.newShellStep(ec, st)
	if err != nil {
		return nil, fmt.Errorf("%s: %s: runs.steps: step %q: %w", c.s.uses, c.s.file, name, err)
	}
	env := maps.Clone(c.s.env)
	env["GITHUB_ACTION_PATH"] = c.s.dir
	maps.Copy(env, sh.env)
	sh.env = env
	return sh, nil
}

func (c *compositeRun) record(st workflow.Step, outcome, conclusion string, outputs map[string]string) {
	if st.ID == "" {
		return
	}
	if outputs == nil {
		outputs = map[string]string{}
	}
	c.steps[st.ID] = workflow.StepResult{Outcome: outcome, Conclusion: conclusion, Outputs: outputs}
}

// finish evaluates the action's outputs and maps its status to the step's
// result.
func (c *compositeRun) finish() (runnerv1.Result, map[string]string) {
	ec := c.context()
	out := map[string]string{}
	for _, id := range c.s.action.OutputIDs {
		v, err := ec.Interpolate(c.s.action.Outputs[id].Value)
		if err != nil {
			c.j.Logf("::warning::%s: %s: outputs.%s.value: %v", c.s.uses, c.s.file, id, err)
			continue
		}
		out[id] = v
	}
	switch c.status {
	case workflow.StatusFailure:
		return runnerv1.Result_RESULT_FAILURE, out
	case workflow.StatusCancelled:
		return runnerv1.Result_RESULT_CANCELLED, out
	}
	return runnerv1.Result_RESULT_SUCCESS, out
}
