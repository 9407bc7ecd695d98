package jobrun

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	runnerv1 "gitea.dev/actions-proto-go/runner/v1"

	"github.com/forgeload/forgeload/internal/pkg/container"
	"github.com/forgeload/forgeload/internal/pkg/workflow"
)

// dockerPoll is how often a docker:// step's container, whose output
// has ended, is looked at until the Engine reports it exited.
const dockerPoll = 200 * time.Millisecond

// dockerStep is a uses: docker://image step: the image run once, to its
// end, with args (with.args) and entrypoint (with.entrypoint), its other
// with: inputs as INPUT_*, and the task directory mounted at its own path
// (the workspace its working directory), on the job's network when it has
// services. It gets no option, volume or capability: within the
// container allow-lists whatever they say.
//
// A Docker action's step also has its action: its pre-entrypoint runs
// when the job starts and its post-entrypoint when it ends (runPres,
// runPosts), each in a container of the same image, with the same args,
// env and settings as main, and GITHUB_STATE passing state between them.
type dockerStep struct {
	name       string
	image      string
	args       []string
	entrypoint string
	env        map[string]string // the step's env: and INPUT_*
	build      *actionBuild      // a Docker action's Dockerfile, built when the step (or its pre) starts; image is then its tag
	// A Docker action's: the action, its metadata file, its uses: and
	// whether that is a local ./path (whose pre is not run); nil and ""
	// for a docker:// step.
	action *workflow.Action
	file   string
	uses   string
	local  bool
}

func newDockerStep(ec *workflow.Context, st workflow.Step) (*dockerStep, error) {
	s := &dockerStep{name: st.DisplayName(), image: strings.TrimSpace(strings.TrimPrefix(st.Uses, "docker://")), env: map[string]string{}}
	if s.image == "" {
		return nil, fmt.Errorf("uses: docker:// names no image; write e.g. uses: docker://alpine:3")
	}
	with, err := ec.InterpolateMap(st.With)
	if err != nil {
		return nil, fmt.Errorf("with.%w", err)
	}
	if s.args, err = splitArgs(with["args"]); err != nil {
		return nil, fmt.Errorf("with.args: %w", err)
	}
	s.entrypoint = with["entrypoint"]
	for k, v := range with {
		if k != "args" && k != "entrypoint" {
			s.env["INPUT_"+strings.ToUpper(strings.ReplaceAll(k, " ", "_"))] = v
		}
	}
	for _, k := range sortedKeys(st.Env) {
		if s.env[k], err = ec.Interpolate(st.Env[k]); err != nil {
			return nil, fmt.Errorf("env %s: %w", k, err)
		}
	}
	return s, nil
}

// checkDockerAction checks that the Docker action a (its metadata file,
// in the directory dir) can run here: it names an image (docker://...)
// or a Dockerfile that passes readActionDockerfile, and the runner has
// an Engine.
func (j *job) checkDockerAction(a *workflow.Action, file, dir string) error {
	switch {
	case isDockerImage(a.Runs.Image) && strings.TrimPrefix(a.Runs.Image, "docker://") == "":
		return fmt.Errorf("%s: runs.image: docker:// names no image; write e.g. image: docker://alpine:3", file)
	case j.deps.Containers == nil:
		return fmt.Errorf("%s: runs.using: docker: Docker actions need a Docker Engine, and this runner has none; run the job on a runner with Docker", file)
	case !isDockerImage(a.Runs.Image):
		return j.checkActionDockerfile(a, file, dir)
	}
	return nil
}

// newDockerActionStep is the step of the Docker action a (in the
// directory dir): its image, or the one built from its Dockerfile, run
// with runs.args and runs.env (expressions in them see the action's
// inputs), runs.entrypoint, the inputs as INPUT_* and the uses: step's env.
func newDockerActionStep(ec *workflow.Context, st workflow.Step, a *workflow.Action, file, dir string, inputs map[string]any, env map[string]string) (*dockerStep, error) {
	ac := *ec
	ac.Inputs = inputs
	s := &dockerStep{
		name: st.DisplayName(), image: strings.TrimPrefix(a.Runs.Image, "docker://"), entrypoint: a.Runs.Entrypoint, env: map[string]string{},
		action: a, file: file, uses: st.Uses, local: isLocalAction(st.Uses),
	}
	if !isDockerImage(a.Runs.Image) {
		s.image, s.build = "", &actionBuild{uses: st.Uses, file: file, dir: dir, image: a.Runs.Image}
	}
	for k, v := range inputs {
		s.env["INPUT_"+strings.ToUpper(strings.ReplaceAll(k, " ", "_"))] = fmt.Sprint(v)
	}
	for _, k := range sortedKeys(a.Runs.Env) {
		v, err := ac.Interpolate(a.Runs.Env[k])
		if err != nil {
			return nil, fmt.Errorf("%s: runs.env.%s: %w", file, k, err)
		}
		s.env[k] = v
	}
	for k, v := range env {
		s.env[k] = v
	}
	for i, arg := range a.Runs.Args {
		v, err := ac.Interpolate(arg)
		if err != nil {
			return nil, fmt.Errorf("%s: runs.args[%d]: %w", file, i, err)
		}
		s.args = append(s.args, v)
	}
	return s, nil
}

// splitArgs splits with.args as a shell would split words: on white space,
// with '...' and "..." quoting (and \ escaping inside "..." and outside).
func splitArgs(s string) ([]string, error) {
	var out []string
	var cur strings.Builder
	inWord, quote := false, rune(0)
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case quote == '\'' && r == '\'', quote == '"' && r == '"':
			quote = 0
		case quote == '\'':
			cur.WriteRune(r)
		case r == '\\' && quote != '\'' && i+1 < len(rs):
			i++
			cur.WriteRune(rs[i])
			inWord = true
		case quote == '"':
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t' || r == '\n' || r == '\r':
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unclosed %c quote; close it or escape it with \\", quote)
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out, nil
}

func (s *dockerStep) meta() (string, string, *workflow.Action) { return s.name, s.file, s.action }

// run runs the step: a docker:// step's image, or a Docker action's main
// (with what its pre wrote to GITHUB_STATE; see runMain).
func (s *dockerStep) run(ctx context.Context, j *stepJob) (runnerv1.Result, map[string]string) {
	if s.action == nil {
		res, outs, _ := s.script(ctx, j, s.entrypoint, nil, func() {})
		return res, outs
	}
	return runMain(ctx, j, s, s.entrypoint, s.uses, s.local)
}

// script runs the image once, to its end, with entrypoint (when not
// ""), state as STATE_* and a GITHUB_STATE file, whose values it
// returns. started is called once the image is there.
func (s *dockerStep) script(ctx context.Context, j *stepJob, entrypoint string, state map[string]string, started func()) (runnerv1.Result, map[string]string, map[string]string) {
	fail := func(format string, args ...any) (runnerv1.Result, map[string]string, map[string]string) {
		j.Logf("::error::step %q: "+format, append([]any{s.name}, args...)...)
		return runnerv1.Result_RESULT_FAILURE, nil, nil
	}
	eng := j.deps.Containers
	if eng == nil {
		why := "no Docker Engine was reachable when the daemon started"
		if j.deps.ContainersErr != nil {
			why = j.deps.ContainersErr.Error()
		}
		return fail("docker:// steps need a Docker Engine, and this runner has none (%s); run the job on a runner with Docker", why)
	}
	files, err := j.newStepFiles()
	if err != nil {
		return fail("create env files: %v%s", err, leaveHint(err))
	}
	stateFile := filepath.Join(filepath.Dir(files.env), "state")
	if err := j.td.CreateNew(stateFile, nil, 0o644); err != nil {
		return fail("create the state file: %v%s", err, leaveHint(err))
	}
	j.ensureCtrKey()
	image, err := s.ensureImage(ctx, j, eng)
	if err != nil && ctx.Err() != nil {
		j.Logf("step %q stopped: %v", s.name, context.Cause(ctx))
		return runnerv1.Result_RESULT_CANCELLED, nil, nil
	} else if err != nil {
		return fail("%v", err)
	}
	started()
	env := maps.Clone(s.env)
	env["GITHUB_STATE"] = stateFile
	for k, v := range state {
		env["STATE_"+k] = v
	}
	spec := container.Spec{
		Job: j.ctrKey, Name: j.ctrKey + "-step-" + j.fileID(), Image: image, Cmd: s.args,
		Env: j.containerEnv(env, files), WorkingDir: j.ws, Network: j.ctrNetwork,
		Binds: []string{j.dir + ":" + j.dir},
		// As the daemon's user, so that what the step writes to the
		// workspace stays the runner's to read and remove.
		User: fmt.Sprintf("%d:%d", os.Getuid(), os.Getgid()),
	}
	if entrypoint != "" {
		spec.Entrypoint = []string{entrypoint}
	}
	j.Logf("[docker] %s %s", image, strings.Join(s.args, " "))
	code, err := j.runContainer(ctx, eng, spec)
	outs, cerr := j.collect(files)
	newState, serr := parseEnvFile(j.td, stateFile, "GITHUB_STATE")
	return s.result(ctx, j, code, err, errors.Join(cerr, serr)), outs, newState
}

// ensureImage makes the step's image available (built from the action's
// Dockerfile, or pulled under the pull policy) and returns its name.
func (s *dockerStep) ensureImage(ctx context.Context, j *stepJob, eng Containers) (string, error) {
	if s.build != nil {
		return j.buildActionImage(ctx, eng, s.build)
	}
	return s.image, j.pullImage(ctx, eng, "docker://"+s.image, s.image, nil)
}

// result is the result of a container that exited with code, or err,
// after reading back its files (ferr).
func (s *dockerStep) result(ctx context.Context, j *stepJob, code int, err, ferr error) runnerv1.Result {
	switch {
	case ferr != nil:
		j.Logf("::error::step %q: %v", s.name, ferr)
	case err != nil && ctx.Err() != nil:
		j.Logf("step %q stopped: %v", s.name, context.Cause(ctx))
		return runnerv1.Result_RESULT_CANCELLED
	case err != nil:
		j.Logf("::error::step %q: %v", s.name, err)
	case code != 0:
		j.Logf("::error::Container exited with code %d.", code)
	default:
		return runnerv1.Result_RESULT_SUCCESS
	}
	return runnerv1.Result_RESULT_FAILURE
}

// ensureCtrKey gives the job the key its containers are labelled with,
// when it has none yet, so that they are removed when it ends.
func (j *job) ensureCtrKey() {
	if j.ctrKey != "" {
		return
	}
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	j.ctrKey = fmt.Sprintf("forgeload-%d-%s", j.task.GetId(), hex.EncodeToString(b))
}

// containerEnv is the env of a container step: nothing of the daemon's
// env, the base env, the job's env and env, as KEY=VALUE.
func (j *job) containerEnv(env map[string]string, f stepFiles) []string {
	all := j.baseEnv(f)
	for k, v := range j.env {
		all[k] = v
	}
	for k, v := range env {
		all[k] = v
	}
	out := make([]string, 0, len(all))
	for k, v := range all {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// runContainer starts spec, streams its output to the step's log while it
// runs (masked, and workflow commands apply), waits for it to exit
// (bounded by ctx) and returns its exit code.
func (j *stepJob) runContainer(ctx context.Context, eng Containers, spec container.Spec) (int, error) {
	cid, err := eng.Start(ctx, spec)
	if err != nil {
		return 0, err
	}
	sink := &stepOutput{j: j.job, outputs: map[string]string{}}
	cmds := newCommands(sink, debugFlag(j.task) != "")
	w := newLineWriter(j.Writer(), cmds)
	err = eng.FollowLogs(ctx, cid, w)
	_ = w.Flush()
	if ctx.Err() != nil {
		// A cancelled or timed-out step stops its container now, not at
		// the job's end: the steps that still run (always(), posts) must
		// not run beside it.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), containerCleanupTimeout)
		defer cancel()
		if rerr := eng.Remove(rctx, cid); rerr != nil {
			j.Logf("the cancelled step's container is left to the job's end: %v", rerr)
		}
		return 0, context.Cause(ctx)
	}
	if merr := cmds.MaskErr(); merr != nil {
		return 0, errors.Join(err, fmt.Errorf("a value it asked to mask with ::add-mask:: is not masked (%w)", merr))
	}
	if err != nil {
		return 0, err
	}
	st, err := waitExited(ctx, eng, cid)
	if err != nil {
		return 0, err
	}
	if st.OOMKilled {
		j.Logf("the container was killed for using more memory than its limit")
	}
	return st.ExitCode, nil
}

// waitExited waits for the container, whose output has ended, to be
// seen as exited, and returns its state.
func waitExited(ctx context.Context, eng Containers, cid string) (container.State, error) {
	t := time.NewTicker(dockerPoll)
	defer t.Stop()
	for {
		st, err := eng.Inspect(ctx, cid)
		if err != nil || !st.Running {
			return st, err
		}
		select {
		case <-ctx.Done():
			return st, context.Cause(ctx)
		case <-t.C:
		}
	}
}
