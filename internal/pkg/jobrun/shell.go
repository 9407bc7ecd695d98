package jobrun

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	runnerv1 "gitea.dev/actions-proto-go/runner/v1"

	"github.com/forgeload/forgeload/internal/pkg/jobfile"
	"github.com/forgeload/forgeload/internal/pkg/leftover"
	"github.com/forgeload/forgeload/internal/pkg/workflow"
)

// killGrace is how long a cancelled step's processes get between SIGTERM
// and SIGKILL.
const killGrace = 3 * time.Second

// shellCommand returns the argv for a run: step's shell, with {0} replaced
// by the script path, following GitHub's templates.
func shellCommand(shell, script string) ([]string, error) {
	var tmpl string
	switch shell {
	case "":
		tmpl = "bash -e {0}"
	case "bash":
		tmpl = "bash --noprofile --norc -eo pipefail {0}"
	case "sh":
		tmpl = "sh -e {0}"
	case "python":
		tmpl = "python3 {0}"
	default:
		tmpl = shell
		if !strings.Contains(tmpl, "{0}") {
			return nil, fmt.Errorf("shell %q is not one of bash, sh, python and has no {0} placeholder for the script; write e.g. shell: \"perl {0}\"", shell)
		}
	}
	argv := strings.Fields(tmpl)
	for i, a := range argv {
		argv[i] = strings.ReplaceAll(a, "{0}", script)
	}
	return argv, nil
}

// stepFiles are the env files of one step.
type stepFiles struct {
	env, output, path, summary string
}

// newStepFiles makes step i's env files, new and empty, in a new
// directory files/step-i of the task directory: whatever an earlier step
// left at these paths (in a job container, which mounts the task
// directory, a symlink to a host path, say) is removed, never written
// through.
func (j *stepJob) newStepFiles() (stepFiles, error) {
	if err := j.td.MkdirAll(filepath.Join(j.dir, "files"), 0o755); err != nil {
		return stepFiles{}, err
	}
	base := filepath.Join(j.dir, "files", "step-"+j.fileID())
	if err := j.td.MkdirNew(base, 0o755); err != nil {
		return stepFiles{}, err
	}
	f := stepFiles{
		env:     filepath.Join(base, "env"),
		output:  filepath.Join(base, "output"),
		path:    filepath.Join(base, "path"),
		summary: filepath.Join(base, "summary.md"),
	}
	for _, p := range []string{f.env, f.output, f.path, f.summary} {
		if err := j.td.CreateNew(p, nil, 0o644); err != nil {
			return stepFiles{}, err
		}
	}
	return f, nil
}

// collect reads back what the step wrote to its env files, inside the
// task directory.
func (j *stepJob) collect(f stepFiles) (map[string]string, error) {
	env, err := parseEnvFile(j.td, f.env, "GITHUB_ENV")
	if err != nil {
		return nil, err
	}
	for k, v := range env {
		j.env[k] = v
	}
	out, err := parseEnvFile(j.td, f.output, "GITHUB_OUTPUT")
	if err != nil {
		return nil, err
	}
	dirs, err := readPathFile(j.td, f.path)
	if err != nil {
		return nil, err
	}
	for _, d := range dirs {
		j.path = append([]string{d}, j.path...)
	}
	// A summary the runner cannot take is not uploaded, as on GitHub; the
	// step's result does not depend on it.
	if md, err := readStepFile(j.td, f.summary, "GITHUB_STEP_SUMMARY"); err != nil {
		j.Logf("::warning::job summary not uploaded: %v", err)
	} else if len(md) > 0 {
		j.uploadSummary(md)
	}
	return out, nil
}

// baseEnv is the GitHub-compatible env every step sees, before job and
// step env.
func (j *job) baseEnv(f stepFiles) map[string]string {
	g := func(k string) string { return j.ctxString(k) }
	rc := workflow.RunnerContext(j.deps.Name, "")
	env := map[string]string{
		"CI":                           "true",
		"GITHUB_ACTIONS":               "true",
		"GITEA_ACTIONS":                "true",
		"GITEA_ACTIONS_RUNNER_VERSION": j.deps.Version,
		"GITEA_ACTIONS_CAPABILITIES":   j.deps.Capabilities,
		"FORGELOAD":                    "true",
		"GITHUB_WORKSPACE":             j.ws,
		"GITHUB_SHA":                   g("sha"),
		"GITHUB_REF":                   g("ref"),
		"GITHUB_REF_NAME":              g("ref_name"),
		"GITHUB_REF_TYPE":              g("ref_type"),
		"GITHUB_HEAD_REF":              g("head_ref"),
		"GITHUB_BASE_REF":              g("base_ref"),
		"GITHUB_REPOSITORY":            g("repository"),
		"GITHUB_REPOSITORY_OWNER":      g("repository_owner"),
		"GITHUB_RUN_ID":                g("run_id"),
		"GITEA_RUN_ID":                 g("run_id"),
		"GITHUB_RUN_NUMBER":            g("run_number"),
		"GITHUB_RUN_ATTEMPT":           g("run_attempt"),
		"GITHUB_SERVER_URL":            strings.TrimSuffix(g("server_url"), "/"),
		"GITHUB_API_URL":               g("api_url"),
		"GITHUB_GRAPHQL_URL":           g("graphql_url"),
		"GITHUB_EVENT_NAME":            g("event_name"),
		"GITHUB_EVENT_PATH":            g("event_path"),
		"GITHUB_ACTOR":                 g("actor"),
		"GITHUB_TRIGGERING_ACTOR":      g("triggering_actor"),
		"GITHUB_WORKFLOW":              g("workflow"),
		"GITHUB_JOB":                   j.wf.JobID,
		"GITHUB_ENV":                   f.env,
		"GITHUB_OUTPUT":                f.output,
		"GITHUB_PATH":                  f.path,
		"GITHUB_STEP_SUMMARY":          f.summary,
		"RUNNER_OS":                    rc["os"].(string),
		"RUNNER_ARCH":                  rc["arch"].(string),
		"RUNNER_NAME":                  j.deps.Name,
		"RUNNER_TEMP":                  filepath.Join(j.dir, "temp"),
		"RUNNER_TOOL_CACHE":            filepath.Join(j.deps.WorkDir, "toolcache"),
	}
	if j.deps.Instance != "" {
		inst := strings.TrimSuffix(j.deps.Instance, "/")
		env["ACTIONS_RUNTIME_URL"] = inst + "/api/actions_pipeline/"
		env["ACTIONS_RESULTS_URL"] = inst
		env["ACTIONS_RUNTIME_TOKEN"] = j.runtimeToken()
	}
	if j.cacheURL != "" {
		env["ACTIONS_CACHE_URL"] = j.cacheURL
	}
	if t := j.task.GetSecrets()["GITHUB_TOKEN"]; t != "" {
		env["GITHUB_TOKEN"] = t
	}
	if t := j.task.GetSecrets()["GITEA_TOKEN"]; t != "" {
		env["GITEA_TOKEN"] = t
	}
	if debugFlag(j.task) != "" {
		env["RUNNER_DEBUG"] = "1"
	}
	return env
}

// stepEnv composes the process env: the allowed part of the daemon's env
// (hostEnv), base env, job env (runner.envs, env_file, workflow and job
// env:, GITHUB_ENV), the step's resolved env:.
func (j *job) stepEnv(stepEnv map[string]string, f stepFiles) []string {
	env := hostEnv(os.Environ())
	if j.jobCtr != "" {
		// In a job container nothing of the daemon's env is passed: the
		// image's own env stands (PATH too, unless GITHUB_PATH adds to it).
		env = map[string]string{}
	}
	for k, v := range j.baseEnv(f) {
		env[k] = v
	}
	for k, v := range j.env {
		env[k] = v
	}
	for k, v := range stepEnv {
		env[k] = v
	}
	if len(j.path) > 0 {
		base := env["PATH"]
		if base == "" && j.jobCtr != "" {
			base = containerPath
		}
		env["PATH"] = strings.Join(j.path, string(os.PathListSeparator)) + string(os.PathListSeparator) + base
	}
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// stepOutput is a commandSink that collects ::set-output:: values.
type stepOutput struct {
	j       *job
	outputs map[string]string
}

func (s *stepOutput) AddMask(v string) error       { return s.j.rep.AddJobMask(v) }
func (s *stepOutput) SetOutput(name, value string) { s.outputs[name] = value }

// shellStep is a run: step with its script, shell, env: and
// working-directory resolved.
type shellStep struct {
	name   string // the display name, uninterpolated, for messages
	script string
	shell  string // as written, or "sh" in a job container without bash
	env    map[string]string
	dir    string // absolute; the workspace when unset
}

// newShellStep resolves st against ec. The shell is checked here too, so
// that a bad one fails before anything is written.
func (j *job) newShellStep(ec *workflow.Context, st workflow.Step) (*shellStep, error) {
	s := &shellStep{name: st.DisplayName()}
	var err error
	if s.script, err = ec.Interpolate(st.Run); err != nil {
		return nil, fmt.Errorf("run: %w", err)
	}
	if s.shell, err = ec.Interpolate(j.wf.StepShell(st)); err != nil {
		return nil, fmt.Errorf("shell: %w", err)
	}
	if s.shell == "" && j.jobCtr != "" && !j.jobCtrBash {
		s.shell = "sh" // the image has no bash
	}
	if _, err := shellCommand(s.shell, "script"); err != nil {
		return nil, err
	}
	s.env = make(map[string]string, len(st.Env))
	for _, k := range sortedKeys(st.Env) {
		if s.env[k], err = ec.Interpolate(st.Env[k]); err != nil {
			return nil, fmt.Errorf("env %s: %w", k, err)
		}
	}
	wd := st.WorkingDirectory
	if wd == "" {
		wd = j.wf.StepWorkingDirectory(st)
	}
	if wd, err = ec.Interpolate(wd); err != nil {
		return nil, fmt.Errorf("working-directory: %w", err)
	}
	switch {
	case wd == "":
		s.dir = j.ws
	case filepath.IsAbs(wd):
		s.dir = wd
	default:
		s.dir = filepath.Join(j.ws, wd)
	}
	return s, nil
}

// run runs the script on the host, or in the job container.
func (s *shellStep) run(ctx context.Context, j *stepJob) (runnerv1.Result, map[string]string) {
	fail := func(format string, args ...any) (runnerv1.Result, map[string]string) {
		j.Logf("::error::step %q: "+format, append([]any{s.name}, args...)...)
		return runnerv1.Result_RESULT_FAILURE, nil
	}
	files, err := j.newStepFiles()
	if err != nil {
		return fail("create env files: %v%s", err, leaveHint(err))
	}
	ext := ".sh"
	if s.shell == "python" {
		ext = ".py"
	}
	scriptPath := filepath.Join(j.dir, "temp", "step-"+j.fileID()+ext)
	if err := j.td.CreateNew(scriptPath, []byte(s.script+"\n"), 0o700); err != nil {
		return fail("write script: %v%s", err, leaveHint(err))
	}
	argv, err := shellCommand(s.shell, scriptPath)
	if err != nil {
		return fail("%v", err)
	}
	env := j.stepEnv(s.env, files)
	if !j.isDir(s.dir) {
		return fail("working-directory %s does not exist; create it in an earlier step or fix the path", s.dir)
	}
	j.Logf("%s", shellEcho(argv[0], s.script))
	sink := &stepOutput{j: j.job, outputs: map[string]string{}}
	cmds := newCommands(sink, debugFlag(j.task) != "")
	stdout, stderr := newLineWriter(j.Writer(), cmds), newLineWriter(j.Writer(), cmds)
	if j.jobCtr != "" {
		err = j.runInContainer(ctx, argv, env, s.dir, stdout, stderr)
	} else {
		err = j.runProcess(ctx, argv, env, s.dir, stdout, stderr)
	}
	_ = stdout.Flush()
	_ = stderr.Flush()
	outs, cerr := j.collect(files)
	for k, v := range outs {
		sink.outputs[k] = v
	}
	if cerr != nil {
		j.Logf("::error::step %q: %v", s.name, cerr)
		return runnerv1.Result_RESULT_FAILURE, sink.outputs
	}
	if merr := cmds.MaskErr(); merr != nil {
		j.Logf("::error::step %q failed: a value it asked to mask with ::add-mask:: is not masked (%v)", s.name, merr)
		return runnerv1.Result_RESULT_FAILURE, sink.outputs
	}
	if err != nil {
		if ctx.Err() != nil {
			j.Logf("step %q stopped: %v", s.name, context.Cause(ctx))
			return runnerv1.Result_RESULT_CANCELLED, sink.outputs
		}
		var ee *exec.ExitError
		var ce *containerExit
		if errors.As(err, &ce) {
			j.Logf("::error::Process completed with exit code %d.", ce.code)
		} else if errors.As(err, &ee) {
			j.Logf("::error::Process completed with exit code %d.", ee.ExitCode())
		} else {
			j.Logf("::error::step %q: %v", s.name, err)
		}
		return runnerv1.Result_RESULT_FAILURE, sink.outputs
	}
	return runnerv1.Result_RESULT_SUCCESS, sink.outputs
}

// leaveHint is the fix for a step that made the runner's own files lead
// out of the task directory.
func leaveHint(err error) string {
	if errors.Is(err, jobfile.ErrOutside) {
		return "; a step must leave temp/ and files/ of the task directory, and what is in them, to the runner"
	}
	return ""
}

// isDir reports whether dir is a directory; inside the task directory it
// is looked up there, through no symlink that leads out.
func (j *job) isDir(dir string) bool {
	stat := os.Stat
	if _, err := jobfile.Rel(j.dir, dir); err == nil {
		stat = j.td.Stat
	}
	fi, err := stat(dir)
	return err == nil && fi.IsDir()
}

// shellEcho is the first row of a run: step: the shell and the script's
// first line, as the forge UI shows it.
func shellEcho(shell, script string) string {
	first := strings.TrimSpace(strings.SplitN(strings.TrimSpace(script), "\n", 2)[0])
	return fmt.Sprintf("[%s] %s", filepath.Base(shell), first)
}

// runProcess runs argv in its own process group, so a cancel reaches the
// whole tree: SIGTERM first, SIGKILL after killGrace. Background processes
// a step leaves behind keep running until the job ends (as on GitHub), when
// killGroups stops them; their output after the step ends (once the
// output has been silent for drainIdle) is dropped. In the daemon every
// process carries the runner's leftover marker, for the daemon that
// follows a killed one.
func (j *job) runProcess(ctx context.Context, argv, env []string, dir string, stdout, stderr *lineWriter) error {
	// The output is copied on goroutines of their own: a panic there (in
	// masking, say) must fail this step, not end the daemon.
	guarded := [2]*guardedWriter{{w: stdout}, {w: stderr}}
	pipes, err := newOutputPipes(guarded[0], guarded[1])
	if err != nil {
		return fmt.Errorf("create the output pipes of %s: %w", argv[0], err)
	}
	if j.deps.ProcessOwner != "" {
		env = leftover.Mark(env, j.deps.ProcessOwner)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Dir = dir
	cmd.Stdout = pipes.w[0]
	cmd.Stderr = pipes.w[1]
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		pipes.close()
		return fmt.Errorf("start %s: %w", argv[0], err)
	}
	pipes.start()
	pgid := cmd.Process.Pid
	j.mu.Lock()
	j.pgids = append(j.pgids, pgid)
	j.mu.Unlock()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-ctx.Done():
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		t := time.NewTimer(killGrace)
		select {
		case err = <-done:
			t.Stop()
		case <-t.C:
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			err = <-done
		}
	}
	pipes.exited()
	pipes.wait()
	for _, g := range guarded {
		if pe := g.panicked(); pe != nil {
			j.deps.Logger.WithField("task_id", j.task.GetId()).WithField("stack", string(pe.Stack)).
				Errorf("step output copier panicked: %s; the step fails, the runner keeps serving", j.rep.Mask(fmt.Sprint(pe.Value)))
			return pe
		}
	}
	return err
}

// killGroups stops every process the job's steps started.
func (j *job) killGroups() {
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, pg := range j.pgids {
		_ = syscall.Kill(-pg, syscall.SIGKILL)
	}
	j.pgids = nil
}
