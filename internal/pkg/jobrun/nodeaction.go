package jobrun

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"

	runnerv1 "gitea.dev/actions-proto-go/runner/v1"

	"github.com/forgeload/forgeload/internal/pkg/jobfile"
	"github.com/forgeload/forgeload/internal/pkg/workflow"
)

// nodeStep is a uses: step of a JavaScript action (runs.using: node12 to
// node24), run with the Node.js the admin gave (runner.node) on the host.
type nodeStep struct {
	name, uses string
	dir        string // the action's directory: GITHUB_ACTION_PATH
	file       string // its metadata file, for messages
	action     *workflow.Action
	inputs     map[string]any
	env        map[string]string // the uses: step's env:, resolved
}

// postStep is the post: of a JavaScript action whose main ran, run when
// the job's steps are done.
type postStep struct {
	s     *nodeStep
	state map[string]string // what main wrote to GITHUB_STATE
}

// isNodeAction reports whether a is a JavaScript action.
func isNodeAction(a *workflow.Action) bool { return strings.HasPrefix(a.Runs.Using, "node") }

// checkNode checks that the JavaScript action a (its metadata file, in
// the directory rel of base) can run here: a Node.js is configured, the
// job has no container, it has no pre:, and main (and post) lie inside
// base: the action's repository, or the workspace for a local action. A
// path may leave the action's own directory (actions/cache/restore has
// main: ../dist/restore-only/index.js), as on GitHub, but not base.
func (j *job) checkNode(a *workflow.Action, file, base, rel string) error {
	switch {
	case j.deps.Node == "":
		return fmt.Errorf("%s: runs.using: %s: this runner runs JavaScript actions only with a Node.js its admin gives (runner.node, e.g. /usr/bin/node), and none is set", file, a.Runs.Using)
	case j.jobCtr != "" || j.jobImage() != nil:
		return fmt.Errorf("%s: runs.using: %s: JavaScript actions are not run in a job container (container:, or a docker:// label) yet; run the job on the host", file, a.Runs.Using)
	case a.Runs.Pre != "":
		return fmt.Errorf("%s: runs.pre: not supported by this runner yet; use an action that has no pre: script", file)
	case a.Runs.Main == "":
		return fmt.Errorf("%s: runs.main: missing; a JavaScript action needs main: (the script to run)", file)
	}
	where := "the action's repository"
	if base == j.ws {
		where = "the workspace"
	}
	for _, f := range []struct{ key, v string }{{"runs.main", a.Runs.Main}, {"runs.post", a.Runs.Post}} {
		if f.v == "" {
			continue
		}
		if _, err := jobfile.Rel(base, filepath.Join(rel, filepath.FromSlash(f.v))); err != nil || filepath.IsAbs(f.v) {
			return fmt.Errorf("%s: %s: %q is not a file inside %s; give a path relative to action.yml", file, f.key, f.v, where)
		}
	}
	return nil
}

// newNodeStep is the step of the JavaScript action a, checked by
// checkNode.
func (j *job) newNodeStep(st workflow.Step, a *workflow.Action, file, base, rel string, inputs map[string]any, env map[string]string) (*nodeStep, error) {
	if err := j.checkNode(a, file, base, rel); err != nil {
		return nil, err
	}
	return &nodeStep{name: st.DisplayName(), uses: st.Uses, dir: filepath.Join(base, rel), file: file, action: a, inputs: inputs, env: env}, nil
}

// inputEnv is INPUT_<NAME> for each input, as the actions toolkit reads
// them: the name upper-cased, spaces as _.
func (s *nodeStep) inputEnv() map[string]string {
	env := map[string]string{}
	for k, v := range s.inputs {
		env["INPUT_"+strings.ToUpper(strings.ReplaceAll(k, " ", "_"))] = fmt.Sprint(v)
	}
	return env
}

// run runs main, then registers post (with what main wrote to
// GITHUB_STATE) for the job's end.
func (s *nodeStep) run(ctx context.Context, j *stepJob) (runnerv1.Result, map[string]string) {
	res, outputs, state := s.script(ctx, j, s.action.Runs.Main, nil)
	if s.action.Runs.Post != "" {
		j.posts = append(j.posts, postStep{s: s, state: state})
	}
	return res, outputs
}

// script runs one script of the action (main or post) with node, its
// inputs as INPUT_*, state (for post) as STATE_*, and a GITHUB_STATE
// file, whose values it returns.
func (s *nodeStep) script(ctx context.Context, j *stepJob, script string, state map[string]string) (runnerv1.Result, map[string]string, map[string]string) {
	fail := func(format string, args ...any) (runnerv1.Result, map[string]string, map[string]string) {
		j.Logf("::error::step %q: "+format, append([]any{s.name}, args...)...)
		return runnerv1.Result_RESULT_FAILURE, nil, nil
	}
	files, err := j.newStepFiles()
	if err != nil {
		return fail("create env files: %v%s", err, leaveHint(err))
	}
	stateFile := filepath.Join(filepath.Dir(files.env), "state")
	if err := j.td.CreateNew(stateFile, nil, 0o644); err != nil {
		return fail("create the state file: %v%s", err, leaveHint(err))
	}
	env := map[string]string{"GITHUB_ACTION_PATH": s.dir, "GITHUB_STATE": stateFile}
	for k, v := range s.env {
		env[k] = v
	}
	for k, v := range s.inputEnv() {
		env[k] = v
	}
	for k, v := range state {
		env["STATE_"+k] = v
	}
	argv := []string{j.deps.Node, filepath.Join(s.dir, filepath.FromSlash(script))}
	j.Logf("[node] %s", filepath.ToSlash(filepath.Join(filepath.Base(s.dir), script)))
	sink := &stepOutput{j: j.job, outputs: map[string]string{}}
	cmds := newCommands(sink, debugFlag(j.task) != "")
	stdout, stderr := newLineWriter(j.Writer(), cmds), newLineWriter(j.Writer(), cmds)
	err = j.runProcess(ctx, argv, j.stepEnv(env, files), j.ws, stdout, stderr)
	_ = stdout.Flush()
	_ = stderr.Flush()
	outs, cerr := j.collect(files)
	for k, v := range outs {
		sink.outputs[k] = v
	}
	newState, serr := parseEnvFile(j.td, stateFile, "GITHUB_STATE")
	switch {
	case cerr != nil:
		j.Logf("::error::step %q: %v", s.name, cerr)
	case serr != nil:
		j.Logf("::error::step %q: %v", s.name, serr)
	case cmds.MaskErr() != nil:
		j.Logf("::error::step %q failed: a value it asked to mask with ::add-mask:: is not masked (%v)", s.name, cmds.MaskErr())
	case err != nil && ctx.Err() != nil:
		j.Logf("step %q stopped: %v", s.name, context.Cause(ctx))
		return runnerv1.Result_RESULT_CANCELLED, sink.outputs, newState
	case err != nil:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			j.Logf("::error::Node.js exited with code %d.", ee.ExitCode())
		} else {
			j.Logf("::error::step %q: %v (runner.node is %s)", s.name, err, j.deps.Node)
		}
	default:
		return runnerv1.Result_RESULT_SUCCESS, sink.outputs, newState
	}
	return runnerv1.Result_RESULT_FAILURE, sink.outputs, newState
}

// runPosts runs the post: of each JavaScript action whose main ran, the
// last first, when its post-if (by default always()) holds for the job's
// status, and returns the job's status after them: a failed post fails
// the job. Their rows are the job's own, after its steps'.
func (j *job) runPosts(jobCtx, outer context.Context, status workflow.JobStatus) workflow.JobStatus {
	for n := len(j.posts) - 1; n >= 0; n-- {
		p := j.posts[n]
		if jobCtx.Err() != nil {
			status = workflow.StatusCancelled
		}
		ec := j.exprContext(status)
		cond := p.s.action.Runs.PostIf
		if cond == "" {
			cond = "always()"
		}
		ok, err := ec.EvalIf(cond)
		if err != nil {
			j.rep.Logf(-1, "::error::post of step %q: %s: runs.post-if: %v", p.s.name, p.s.file, err)
			status = worse(status, workflow.StatusFailure)
			continue
		}
		if !ok {
			continue
		}
		j.rep.Logf(-1, "Post %s", p.s.name)
		ctx := jobCtx
		if ctx.Err() != nil {
			var cancel context.CancelFunc
			ctx, cancel = cleanupContext(outer)
			defer cancel()
		}
		sj := &stepJob{job: j, i: -1, sub: fmt.Sprintf("post-%d", n)}
		if res, _, _ := p.s.script(ctx, sj, p.s.action.Runs.Post, p.state); res == runnerv1.Result_RESULT_FAILURE {
			status = worse(status, workflow.StatusFailure)
		}
	}
	return status
}

// worse is the job status after a step that ended with s: a failure
// turns only a success into a failure.
func worse(status, s workflow.JobStatus) workflow.JobStatus {
	if status == workflow.StatusSuccess {
		return s
	}
	return status
}
