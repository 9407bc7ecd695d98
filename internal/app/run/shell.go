package run

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

func (j *job) newStepFiles(i int) (stepFiles, error) {
	base := filepath.Join(j.dir, "files", fmt.Sprintf("step-%d", i))
	if err := os.MkdirAll(base, 0o755); err != nil {
		return stepFiles{}, err
	}
	f := stepFiles{
		env:     filepath.Join(base, "env"),
		output:  filepath.Join(base, "output"),
		path:    filepath.Join(base, "path"),
		summary: filepath.Join(base, "summary.md"),
	}
	for _, p := range []string{f.env, f.output, f.path, f.summary} {
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			return stepFiles{}, err
		}
	}
	return f, nil
}

// collect reads back what the step wrote to its env files.
func (j *job) collect(f stepFiles, i int) (map[string]string, error) {
	env, err := parseEnvFile(f.env)
	if err != nil {
		return nil, fmt.Errorf("GITHUB_ENV: %w", err)
	}
	for k, v := range env {
		j.env[k] = v
	}
	out, err := parseEnvFile(f.output)
	if err != nil {
		return nil, fmt.Errorf("GITHUB_OUTPUT: %w", err)
	}
	dirs, err := readPathFile(f.path)
	if err != nil {
		return nil, fmt.Errorf("GITHUB_PATH: %w", err)
	}
	for _, d := range dirs {
		j.path = append([]string{d}, j.path...)
	}
	if md, err := os.ReadFile(f.summary); err == nil && len(md) > 0 {
		j.uploadSummary(i, md)
	}
	return out, nil
}

// baseEnv is the GitHub-compatible env every step sees, before job and
// step env.
func (j *job) baseEnv(f stepFiles) map[string]string {
	g := func(k string) string { return j.ctxString(k) }
	rc := workflow.RunnerContext(j.r.o.Name, "")
	env := map[string]string{
		"CI":                           "true",
		"GITHUB_ACTIONS":               "true",
		"GITEA_ACTIONS":                "true",
		"GITEA_ACTIONS_RUNNER_VERSION": j.r.o.Version,
		"GITEA_ACTIONS_CAPABILITIES":   j.r.o.Capabilities,
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
		"RUNNER_NAME":                  j.r.o.Name,
		"RUNNER_TEMP":                  filepath.Join(j.dir, "temp"),
		"RUNNER_TOOL_CACHE":            filepath.Join(j.r.o.WorkDir, "toolcache"),
	}
	if j.r.o.Instance != "" {
		inst := strings.TrimSuffix(j.r.o.Instance, "/")
		env["ACTIONS_RUNTIME_URL"] = inst + "/api/actions_pipeline/"
		env["ACTIONS_RESULTS_URL"] = inst
		env["ACTIONS_RUNTIME_TOKEN"] = j.runtimeToken()
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

// stepEnv composes the process env: host env, base env, job env, step env.
func (j *job) stepEnv(ec *workflow.Context, st workflow.Step, f stepFiles) ([]string, error) {
	env := map[string]string{}
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	for k, v := range j.baseEnv(f) {
		env[k] = v
	}
	for k, v := range j.env {
		env[k] = v
	}
	for _, k := range sortedKeys(st.Env) {
		v, err := ec.Interpolate(st.Env[k])
		if err != nil {
			return nil, fmt.Errorf("env %s: %w", k, err)
		}
		env[k] = v
	}
	if len(j.path) > 0 {
		env["PATH"] = strings.Join(j.path, string(os.PathListSeparator)) + string(os.PathListSeparator) + env["PATH"]
	}
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out, nil
}

// stepOutput is a commandSink that collects ::set-output:: values.
type stepOutput struct {
	j       *job
	outputs map[string]string
}

func (s *stepOutput) AddMask(v string)             { s.j.rep.AddMask(v) }
func (s *stepOutput) SetOutput(name, value string) { s.outputs[name] = value }

// workdir resolves a step's working directory against the workspace.
func (j *job) workdir(ec *workflow.Context, st workflow.Step) (string, error) {
	wd := st.WorkingDirectory
	if wd == "" {
		wd = j.wf.StepWorkingDirectory(st)
	}
	if wd == "" {
		return j.ws, nil
	}
	wd, err := ec.Interpolate(wd)
	if err != nil {
		return "", fmt.Errorf("working-directory: %w", err)
	}
	if !filepath.IsAbs(wd) {
		wd = filepath.Join(j.ws, wd)
	}
	return wd, nil
}

// runShell runs a run: step on the host.
func (j *job) runShell(ctx context.Context, ec *workflow.Context, st workflow.Step, i int) (runnerv1.Result, map[string]string) {
	fail := func(format string, args ...any) (runnerv1.Result, map[string]string) {
		j.rep.Logf(i, "::error::"+format, args...)
		return runnerv1.Result_RESULT_FAILURE, nil
	}
	script, err := ec.Interpolate(st.Run)
	if err != nil {
		return fail("step %q: run: %v", st.DisplayName(), err)
	}
	files, err := j.newStepFiles(i)
	if err != nil {
		return fail("step %q: create env files: %v", st.DisplayName(), err)
	}
	shell, err := ec.Interpolate(j.wf.StepShell(st))
	if err != nil {
		return fail("step %q: shell: %v", st.DisplayName(), err)
	}
	ext := ".sh"
	if shell == "python" {
		ext = ".py"
	}
	scriptPath := filepath.Join(j.dir, "temp", fmt.Sprintf("step-%d%s", i, ext))
	if err := os.WriteFile(scriptPath, []byte(script+"\n"), 0o700); err != nil {
		return fail("step %q: write script: %v", st.DisplayName(), err)
	}
	argv, err := shellCommand(shell, scriptPath)
	if err != nil {
		return fail("step %q: %v", st.DisplayName(), err)
	}
	env, err := j.stepEnv(ec, st, files)
	if err != nil {
		return fail("step %q: %v", st.DisplayName(), err)
	}
	wd, err := j.workdir(ec, st)
	if err != nil {
		return fail("step %q: %v", st.DisplayName(), err)
	}
	if fi, err := os.Stat(wd); err != nil || !fi.IsDir() {
		return fail("step %q: working-directory %s does not exist; create it in an earlier step or fix the path", st.DisplayName(), wd)
	}
	j.rep.Logf(i, "%s", shellEcho(argv[0], script))
	sink := &stepOutput{j: j, outputs: map[string]string{}}
	lw := newLineWriter(j.rep.Writer(i), sink, debugFlag(j.task) != "")
	err = j.runProcess(ctx, argv, env, wd, lw)
	_ = lw.Flush()
	outs, cerr := j.collect(files, i)
	for k, v := range outs {
		sink.outputs[k] = v
	}
	if cerr != nil {
		j.rep.Logf(i, "::error::step %q: %v", st.DisplayName(), cerr)
		return runnerv1.Result_RESULT_FAILURE, sink.outputs
	}
	if err != nil {
		if ctx.Err() != nil {
			j.rep.Logf(i, "step %q stopped: %v", st.DisplayName(), context.Cause(ctx))
			return runnerv1.Result_RESULT_CANCELLED, sink.outputs
		}
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			j.rep.Logf(i, "::error::Process completed with exit code %d.", ee.ExitCode())
		} else {
			j.rep.Logf(i, "::error::step %q: %v", st.DisplayName(), err)
		}
		return runnerv1.Result_RESULT_FAILURE, sink.outputs
	}
	return runnerv1.Result_RESULT_SUCCESS, sink.outputs
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
// killGroups stops them; their output after the step ends is dropped.
func (j *job) runProcess(ctx context.Context, argv, env []string, dir string, out *lineWriter) error {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Dir = dir
	cmd.Stdout = out
	cmd.Stderr = out
	cmd.WaitDelay = time.Second
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", argv[0], err)
	}
	pgid := cmd.Process.Pid
	j.mu.Lock()
	j.pgids = append(j.pgids, pgid)
	j.mu.Unlock()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
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
	if errors.Is(err, exec.ErrWaitDelay) {
		// The step exited but a background child still holds its output.
		err = nil
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
