package jobrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	runnerv1 "gitea.dev/actions-proto-go/runner/v1"

	"github.com/forgeload/forgeload/internal/pkg/jobfile"
	"github.com/forgeload/forgeload/internal/pkg/workflow"
)

// nodeStep is a uses: step of a JavaScript action (runs.using: node12 to
// node24), run with the Node.js the admin gave (runner.node) on the host,
// or with the image's node in the job container.
type nodeStep struct {
	name, uses string
	dir        string // the action's directory: GITHUB_ACTION_PATH
	file       string // its metadata file, for messages
	action     *workflow.Action
	inputs     map[string]any
	env        map[string]string // the uses: step's env:, resolved
	local      bool              // uses: ./path, whose pre: is not run
}

// stagedAction is the step of an action that may have a pre and a post:
// a JavaScript action (pre: and post:, scripts run with node) or a Docker
// action (pre-entrypoint and post-entrypoint, run as the entrypoint of
// its image, with its runs.args and env, as GitHub's runner runs them).
type stagedAction interface {
	// script runs the action once with what (a script, or an entrypoint;
	// "" is the image's own for a Docker action), with state as STATE_*,
	// and returns its result, outputs and what it wrote to GITHUB_STATE.
	// started is called once it can start (a post registers then).
	script(ctx context.Context, j *stepJob, what string, state map[string]string, started func()) (runnerv1.Result, map[string]string, map[string]string)
	// meta is the step's name, the action's metadata file and the action.
	meta() (name, file string, a *workflow.Action)
}

// postStep is the post of an action (stagedAction) whose pre or main
// started, run when the job's steps are done with the state (j.states)
// of its step, key, within lim.
type postStep struct {
	s   stagedAction
	key string
	lim limits
}

// stage is the pre or post of an action: lim bounds it, and a pre that
// starts registers the post with postLim.
type stage struct {
	title, field  string // "Pre", "runs.pre-if"
	script, cond  string
	registersPost bool
	lim, postLim  limits
}

func preStage(a *workflow.Action, lim, postLim limits) stage {
	return stage{title: "Pre", field: "runs.pre-if", script: preScript(a), cond: a.Runs.PreIf, registersPost: true, lim: lim, postLim: postLim}
}

func postStage(a *workflow.Action, lim limits) stage {
	return stage{title: "Post", field: "runs.post-if", script: postScript(a), cond: a.Runs.PostIf, lim: lim}
}

// preScript is the pre of the action a: a JavaScript action's pre:, a
// Docker action's pre-entrypoint; "" when it has none.
func preScript(a *workflow.Action) string {
	switch {
	case isNodeAction(a):
		return a.Runs.Pre
	case a.Runs.Using == "docker":
		return a.Runs.PreEntrypoint
	}
	return ""
}

// postScript is the post of the action a, as preScript.
func postScript(a *workflow.Action) string {
	switch {
	case isNodeAction(a):
		return a.Runs.Post
	case a.Runs.Using == "docker":
		return a.Runs.PostEntrypoint
	}
	return ""
}

// isNodeAction reports whether a is a JavaScript action.
func isNodeAction(a *workflow.Action) bool { return strings.HasPrefix(a.Runs.Using, "node") }

// checkNode checks that the JavaScript action a (its metadata file, in
// the directory rel of base) can run here: a Node.js is configured, or
// the job runs in a job container (whose image's node runs it), and main
// (and pre and post) lie inside base: the action's repository, or the
// workspace for a local action. A path may leave the action's own
// directory (actions/cache/restore has main: ../dist/restore-only/index.js),
// as on GitHub, but not base.
func (j *job) checkNode(a *workflow.Action, file, base, rel string) error {
	switch {
	case j.deps.Node == "" && j.jobImage() == nil:
		return fmt.Errorf("%s: runs.using: %s: this runner runs JavaScript actions only with a Node.js its admin gives (runner.node, e.g. /usr/bin/node), and none is set; or run the job in a container: whose image has node", file, a.Runs.Using)
	case a.Runs.Main == "":
		return fmt.Errorf("%s: runs.main: missing; a JavaScript action needs main: (the script to run)", file)
	}
	where := "the action's repository"
	if base == j.ws {
		where = "the workspace"
	}
	for _, f := range []struct{ key, v string }{{"runs.main", a.Runs.Main}, {"runs.pre", a.Runs.Pre}, {"runs.post", a.Runs.Post}} {
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
// checkNode, with its resolved inputs and env.
func (j *job) newNodeStep(st workflow.Step, a *workflow.Action, file, base, rel string, inputs map[string]any, env map[string]string) (*nodeStep, error) {
	if err := j.checkNode(a, file, base, rel); err != nil {
		return nil, err
	}
	return &nodeStep{name: st.DisplayName(), uses: st.Uses, dir: filepath.Join(base, rel), file: file, action: a, inputs: inputs, env: env, local: isLocalAction(st.Uses)}, nil
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

func (s *nodeStep) meta() (string, string, *workflow.Action) { return s.name, s.file, s.action }

// run runs main, with what the step's pre wrote to GITHUB_STATE (see
// runMain).
func (s *nodeStep) run(ctx context.Context, j *stepJob) (runnerv1.Result, map[string]string) {
	return runMain(ctx, j, s, s.action.Runs.Main, s.uses, s.local)
}

// runMain runs main, the main of the action step s (uses: uses, local
// for ./path), with what the step's pre wrote to GITHUB_STATE, and
// registers its post for the job's end once main starts. The pre of an
// action from a repository ran when the job started (runPres), also
// nested in composite actions from repositories; that of a local action,
// or of one nested in a local composite action, is not run, as on
// GitHub, where it is not there when the job starts.
func runMain(ctx context.Context, j *stepJob, s stagedAction, main, uses string, local bool) (runnerv1.Result, map[string]string) {
	key := j.fileID()
	_, file, a := s.meta()
	if pre := preScript(a); pre != "" {
		field := "runs.pre"
		if a.Runs.Using == "docker" {
			field = "runs.pre-entrypoint"
		}
		switch {
		case local:
			j.Logf("::warning::%s: %s is not run for a local action (uses: %s), as on GitHub: the action is not there when the job starts; publish the action in a repository to have it run", file, field, uses)
		case j.inLocal != "":
			j.Logf("::warning::%s: %s is not run for an action nested in a local action (uses: %s), as on GitHub: the local action is not there when the job starts; publish it in a repository to have the pre run", file, field, j.inLocal)
		}
	}
	res, outputs, state := s.script(ctx, j, main, j.states[key], func() {
		if postScript(a) != "" {
			j.registerPost(s, key, j.lim)
		}
	})
	j.saveState(key, state)
	return res, outputs
}

// registerPost registers the post of s, the action of step key, bounded
// by lim, once: a second registration (main, after pre) keeps its place
// and takes s, resolved later, for its inputs.
func (j *job) registerPost(s stagedAction, key string, lim limits) {
	for n := range j.posts {
		if j.posts[n].key == key {
			j.posts[n].s = s
			return
		}
	}
	j.posts = append(j.posts, postStep{s: s, key: key, lim: lim})
}

// saveState adds what a script of step key wrote to GITHUB_STATE to the
// step's state.
func (j *job) saveState(key string, state map[string]string) {
	if len(state) == 0 {
		return
	}
	if j.states == nil {
		j.states = map[string]map[string]string{}
	}
	if j.states[key] == nil {
		j.states[key] = map[string]string{}
	}
	maps.Copy(j.states[key], state)
}

// runStage runs the pre or post st of s, the action of step key, as sj,
// when its condition (by default always()) holds in ec, within st.lim;
// its rows follow a "Pre <name>" or "Post <name>" row. A condition that
// is false skips it; one that does not evaluate fails it.
func (j *job) runStage(ctx context.Context, ec *workflow.Context, s stagedAction, sj *stepJob, st stage, key string) runnerv1.Result {
	name, file, a := s.meta()
	cond := st.cond
	if cond == "" {
		cond = "always()"
	}
	ok, err := ec.EvalIf(cond)
	if err != nil {
		sj.Logf("::error::%s of step %q: %s: %s: %v", strings.ToLower(st.title), name, file, st.field, err)
		return runnerv1.Result_RESULT_FAILURE
	}
	if !ok {
		return runnerv1.Result_RESULT_SKIPPED
	}
	sj.Logf("%s %s", st.title, name)
	return j.limited(ctx, ec, sj, st.lim, strings.ToLower(st.title), name, func(ctx context.Context) runnerv1.Result {
		res, _, state := s.script(ctx, sj, st.script, j.states[key], func() {
			if st.registersPost && postScript(a) != "" {
				j.registerPost(s, key, st.postLim)
			}
		})
		j.saveState(key, state)
		return res
	})
}

// runPres runs, before the job's first step and in the order of its
// steps, the pre of each action from a repository (fetched when the job
// started) that has one: a JavaScript action's pre:, a Docker action's
// pre-entrypoint (its image built or pulled first); and, as the pre of a
// composite action from a repository, those of the actions from
// repositories nested in it (compositePres), as GitHub's runner does;
// each when its pre-if (by default always()) holds for the job's status
// so far (the step's own if: is for its main), bounded by its step's
// timeout-minutes and forgiven by its continue-on-error. It returns the
// job's status after them: a failed pre fails the job. Their rows are the
// job's own, before its steps', as the posts' are after them.
func (j *job) runPres(jobCtx, outer context.Context, status workflow.JobStatus) workflow.JobStatus {
	for i, st := range j.wf.Job.Steps {
		if st.Uses == "" || j.actions[st.Uses] == nil {
			continue
		}
		if jobCtx.Err() != nil {
			status = workflow.StatusCancelled
		}
		ec := j.exprContext(status)
		s, err := j.newCompositeStep(ec, st)
		if err != nil {
			continue // the main step's to report
		}
		lim, key := stepLimits(st), strconv.Itoa(i)
		sj := &stepJob{job: j, i: -1, sub: "pre-" + key}
		ctx, cancel := stageContext(jobCtx, outer)
		res := runnerv1.Result_RESULT_SKIPPED
		switch s := s.(type) {
		case *compositeStep:
			if j.nestedPre(s.action, 1) {
				sj.Logf("Pre %s", s.name)
				res = j.limited(ctx, ec, sj, lim, "pre", s.name, func(ctx context.Context) runnerv1.Result {
					return j.compositePres(ctx, sj, s, key, lim, 1, status)
				})
			}
		case stagedAction:
			if _, _, a := s.meta(); a != nil && preScript(a) != "" {
				res = j.runStage(ctx, ec, s, sj, preStage(a, lim, lim), key)
			}
		}
		cancel()
		status = afterStage(status, res)
	}
	return status
}

// stageContext is the context a pre or post runs in: the job's, or,
// once the job is cancelled, one detached from the cancel but bounded,
// as for the always() steps.
func stageContext(jobCtx, outer context.Context) (context.Context, context.CancelFunc) {
	if jobCtx.Err() != nil {
		return cleanupContext(outer)
	}
	return jobCtx, func() {}
}

// afterStage is the job's status after a pre or post that ended with
// res.
func afterStage(status workflow.JobStatus, res runnerv1.Result) workflow.JobStatus {
	switch res {
	case runnerv1.Result_RESULT_FAILURE:
		return worse(status, workflow.StatusFailure)
	case runnerv1.Result_RESULT_CANCELLED:
		return workflow.StatusCancelled
	}
	return status
}

// script runs one script of the action (pre, main or post) with node,
// on the host or in the job container, its inputs as INPUT_*, state as
// STATE_*, and a GITHUB_STATE file, whose values it returns.
//
// started is called once node can start (a post registers then): not
// when the job container has no node, which fails the script alone.
func (s *nodeStep) script(ctx context.Context, j *stepJob, script string, state map[string]string, started func()) (runnerv1.Result, map[string]string, map[string]string) {
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
	maps.Copy(env, s.env)
	maps.Copy(env, s.inputEnv())
	for k, v := range state {
		env["STATE_"+k] = v
	}
	path := filepath.Join(s.dir, filepath.FromSlash(script))
	procEnv := j.stepEnv(env, files)
	if j.jobCtr != "" {
		// The task directory, which holds the action (a copy, for one
		// from a repository) and every GITHUB_* file, is mounted at the
		// same path: they keep their names in the container.
		if err := j.containerNode(ctx, procEnv); err != nil {
			return fail("%v", err)
		}
	}
	started()
	j.Logf("[node] %s", filepath.ToSlash(filepath.Join(filepath.Base(s.dir), script)))
	sink := &stepOutput{j: j.job, outputs: map[string]string{}}
	cmds := newCommands(sink, debugFlag(j.task) != "")
	stdout, stderr := newLineWriter(j.Writer(), cmds), newLineWriter(j.Writer(), cmds)
	if j.jobCtr != "" {
		err = j.runInContainer(ctx, []string{"node", path}, procEnv, j.ws, stdout, stderr)
	} else {
		err = j.runProcess(ctx, []string{j.deps.Node, path}, procEnv, j.ws, stdout, stderr)
	}
	_ = stdout.Flush()
	_ = stderr.Flush()
	outs, cerr := j.collect(files)
	maps.Copy(sink.outputs, outs)
	newState, serr := parseEnvFile(j.td, stateFile, "GITHUB_STATE")
	return s.result(ctx, j, err, errors.Join(cerr, serr), cmds), sink.outputs, newState
}

// result is the result of a script that ended with err, after reading
// back its files (ferr) and its commands.
func (s *nodeStep) result(ctx context.Context, j *stepJob, err, ferr error, cmds *commands) runnerv1.Result {
	var ee *exec.ExitError
	var ce *containerExit
	switch {
	case ferr != nil:
		j.Logf("::error::step %q: %v", s.name, ferr)
	case cmds.MaskErr() != nil:
		j.Logf("::error::step %q failed: a value it asked to mask with ::add-mask:: is not masked (%v)", s.name, cmds.MaskErr())
	case err != nil && ctx.Err() != nil:
		j.Logf("step %q stopped: %v", s.name, context.Cause(ctx))
		return runnerv1.Result_RESULT_CANCELLED
	case errors.As(err, &ee):
		j.Logf("::error::Node.js exited with code %d.", ee.ExitCode())
	case errors.As(err, &ce):
		j.Logf("::error::Node.js exited with code %d.", ce.code)
	case err != nil && j.jobCtr != "":
		j.Logf("::error::step %q: %v (node of the job container's image %s)", s.name, err, j.jobCtrImage)
	case err != nil:
		j.Logf("::error::step %q: %v (runner.node is %s)", s.name, err, j.deps.Node)
	default:
		return runnerv1.Result_RESULT_SUCCESS
	}
	return runnerv1.Result_RESULT_FAILURE
}

// containerNode checks that node is on the job container's PATH (env is
// the script's): in a job container a JavaScript action runs with the
// image's Node.js, as on Gitea's runner, never with one of the host's.
func (j *job) containerNode(ctx context.Context, env []string) error {
	code, err := j.deps.Containers.Exec(ctx, j.jobCtr, []string{"sh", "-c", "command -v node"}, env, "/", j.jobCtrUser, io.Discard, io.Discard)
	switch {
	case err != nil:
		return fmt.Errorf("look for node in the job container (image %s): %w", j.jobCtrImage, err)
	case code != 0:
		return fmt.Errorf("the job container's image %s has no node on its PATH, and in a job with container: a JavaScript action runs with the image's Node.js; use an image that has Node.js (node:20-bookworm-slim, say), install it in an earlier step (adding its directory to GITHUB_PATH), or run the job on the host, where runner.node runs it", j.jobCtrImage)
	}
	return nil
}

// runPosts runs the post of each action (a JavaScript action's post:, a
// Docker action's post-entrypoint) whose pre or main started, the last
// registered first, when its post-if (by default
// always()) holds for the job's status, with its step's state, bounded
// by its step's timeout-minutes and forgiven by its continue-on-error,
// and returns the job's status after them: a failed post fails the job.
// Their rows are the job's own, after its steps'. After a cancel they
// run as the always() steps do: bounded, detached from the cancel.
func (j *job) runPosts(jobCtx, outer context.Context, status workflow.JobStatus) workflow.JobStatus {
	for n := len(j.posts) - 1; n >= 0; n-- {
		p := j.posts[n]
		if jobCtx.Err() != nil {
			status = workflow.StatusCancelled
		}
		ctx, cancel := stageContext(jobCtx, outer)
		sj := &stepJob{job: j, i: -1, sub: fmt.Sprintf("post-%d", n)}
		_, _, a := p.s.meta()
		res := j.runStage(ctx, j.exprContext(status), p.s, sj, postStage(a, p.lim), p.key)
		cancel()
		if res == runnerv1.Result_RESULT_FAILURE {
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
