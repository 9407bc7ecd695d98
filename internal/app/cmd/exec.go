package cmd

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"connectrpc.com/connect"
	runnerv1 "gitea.dev/actions-proto-go/runner/v1"
	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"
	"google.golang.org/protobuf/types/known/structpb"
	"gopkg.in/yaml.v3"

	"github.com/forgeload/forgeload/internal/app/run"
	"github.com/forgeload/forgeload/internal/pkg/config"
	"github.com/forgeload/forgeload/internal/pkg/demo"
	"github.com/forgeload/forgeload/internal/pkg/load/plan"
	"github.com/forgeload/forgeload/internal/pkg/policy"
	"github.com/forgeload/forgeload/internal/pkg/ver"
	"github.com/forgeload/forgeload/internal/pkg/workflow"
)

type execFlags struct {
	workflows string
	job       string
	secrets   []string
	vars      []string
	envs      []string
	demo      bool
}

func newExecCmd(g *globalFlags) *cobra.Command {
	f := &execFlags{}
	c := &cobra.Command{
		Use:   "exec [workflow.yml ...]",
		Short: "Run workflow jobs locally, with the same runner and steps as the daemon",
		Long: `exec runs the jobs of one or more workflow files on this machine with the
daemon's task runner and prints their logs to the terminal. No forge is
needed. Jobs run in needs: order; -j picks one job.

actions/checkout copies the current directory into the job's workspace.
--demo starts an embedded demo HTTP target on loopback and gives its URL to
the workflow as env.FORGELOAD_DEMO_URL:

  forgeload exec --demo examples/quickstart.yml`,
		RunE: func(c *cobra.Command, args []string) error {
			return runExec(c.Context(), g, f, args, c.OutOrStdout(), c.ErrOrStderr())
		},
	}
	fl := c.Flags()
	fl.StringVarP(&f.workflows, "workflows", "W", ".gitea/workflows", "workflow file or directory (used when no file is given as an argument)")
	fl.StringVarP(&f.job, "job", "j", "", "run only this job id")
	fl.StringArrayVarP(&f.secrets, "secret", "s", nil, "secret as KEY=VALUE (repeatable); masked in the output")
	fl.StringArrayVar(&f.vars, "var", nil, "variable as KEY=VALUE (repeatable), read as vars.KEY")
	fl.StringArrayVar(&f.envs, "env", nil, "extra env as KEY=VALUE (repeatable)")
	fl.BoolVar(&f.demo, "demo", false, "start the embedded demo target and expose its URL as env.FORGELOAD_DEMO_URL")
	return c
}

func parseKV(flag string, list []string) (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range list {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--%s %q: want KEY=VALUE", flag, kv)
		}
		out[k] = v
	}
	return out, nil
}

// execJob is one job of a local run.
type execJob struct {
	id      string
	file    string
	needs   []string
	payload []byte
}

func runExec(ctx context.Context, g *globalFlags, f *execFlags, args []string, stdout, stderr io.Writer) error {
	secrets, err := parseKV("secret", f.secrets)
	if err != nil {
		return withCode(ExitBadInput, err)
	}
	vars, err := parseKV("var", f.vars)
	if err != nil {
		return withCode(ExitBadInput, err)
	}
	envs, err := parseKV("env", f.envs)
	if err != nil {
		return withCode(ExitBadInput, err)
	}
	if err := config.CheckEnv(os.Environ()); err != nil {
		return withCode(ExitBadInput, err)
	}
	cfg, err := config.Load(g.config, os.Getenv)
	if err != nil {
		return withCode(ExitBadInput, err)
	}
	files := args
	if len(files) == 0 {
		files, err = workflowFiles(f.workflows)
		if err != nil {
			return withCode(ExitBadInput, err)
		}
	}
	var jobs []execJob
	for _, file := range files {
		js, err := splitJobs(file)
		if err != nil {
			return withCode(ExitBadInput, err)
		}
		jobs = append(jobs, js...)
	}
	if f.job != "" {
		var keep []execJob
		for _, j := range jobs {
			if j.id == f.job {
				keep = append(keep, j)
			}
		}
		if len(keep) == 0 {
			var ids []string
			for _, j := range jobs {
				ids = append(ids, j.id)
			}
			return withCode(ExitBadInput, fmt.Errorf("-j %s: no such job; the workflows have: %s", f.job, strings.Join(ids, ", ")))
		}
		jobs = keep
		jobs[0].needs = nil
	}
	jobs, err = orderJobs(jobs)
	if err != nil {
		return withCode(ExitBadInput, err)
	}

	if f.demo {
		d, err := demo.Start(demo.Options{})
		if err != nil {
			return err
		}
		defer d.Close()
		envs["FORGELOAD_DEMO_URL"] = d.URL()
		fmt.Fprintf(stderr, "demo target listening on %s\n", d.URL())
	}
	for k, v := range cfg.Runner.Envs {
		if _, set := envs[k]; !set {
			envs[k] = v
		}
	}
	pol, err := policy.New(ctx, policy.Options{
		Allow: cfg.Load.AllowTargets,
		Deny:  cfg.Load.DenyTargets,
	})
	if err != nil {
		return withCode(ExitBadInput, err)
	}
	cwd, _ := os.Getwd()
	logger := newLogger(cfg, stderr)
	logger.SetLevel(logrus.WarnLevel)

	results := map[string]*runnerv1.TaskNeed{}
	failed := 0
	for n, j := range jobs {
		needs := map[string]*runnerv1.TaskNeed{}
		skip := false
		for _, d := range j.needs {
			if r := results[d]; r != nil {
				needs[d] = r
				if r.Result != runnerv1.Result_RESULT_SUCCESS {
					skip = true
				}
			}
		}
		if skip {
			fmt.Fprintf(stdout, "[%s] skipped: a job it needs did not succeed\n", j.id)
			results[j.id] = &runnerv1.TaskNeed{Result: runnerv1.Result_RESULT_SKIPPED}
			continue
		}
		lf := newTerminalForge(stdout, j.id)
		r := run.New(lf, run.Options{
			Name:             "local",
			Version:          ver.Version(),
			Labels:           cfg.Runner.Labels,
			Envs:             envs,
			Timeout:          cfg.Runner.Timeout,
			ReportInterval:   cfg.Runner.ReportInterval,
			Policy:           pol,
			Limits:           plan.Limits{MaxRate: cfg.Load.MaxRate, MaxConcurrency: cfg.Load.MaxConcurrency, MaxDuration: cfg.Load.MaxDuration},
			ProgressInterval: cfg.Load.ProgressInterval,
			LocalRepo:        cwd,
			Logger:           logrus.NewEntry(logger),
			Cancelling:       true,
		})
		task, err := localTask(int64(n+1), j, cwd, secrets, vars, needs)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "[%s] ▶ job %s (%s)\n", j.id, j.id, j.file)
		if err := r.Run(ctx, task); err != nil {
			return err
		}
		res, outputs := lf.final()
		results[j.id] = &runnerv1.TaskNeed{Result: res, Outputs: outputs}
		fmt.Fprintf(stdout, "[%s] ■ job %s: %s\n", j.id, j.id, resultName(res))
		if res != runnerv1.Result_RESULT_SUCCESS && res != runnerv1.Result_RESULT_SKIPPED {
			failed++
		}
	}
	if failed > 0 {
		return withCode(ExitFailure, fmt.Errorf("%d of %d jobs did not succeed", failed, len(jobs)))
	}
	return nil
}

func resultName(r runnerv1.Result) string {
	return strings.ToLower(strings.TrimPrefix(r.String(), "RESULT_"))
}

func workflowFiles(path string) ([]string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("workflows %s: %w; give a workflow file, or -W a directory of them", path, err)
	}
	if !fi.IsDir() {
		return []string{path}, nil
	}
	var out []string
	for _, pat := range []string{"*.yml", "*.yaml"} {
		m, _ := filepath.Glob(filepath.Join(path, pat))
		out = append(out, m...)
	}
	sort.Strings(out)
	if len(out) == 0 {
		return nil, fmt.Errorf("no *.yml or *.yaml workflow files in %s", path)
	}
	return out, nil
}

// splitJobs turns a workflow file into one single-job payload per job, as
// the forge does: the job's needs: is erased (results travel in
// Task.needs) and the top-level keys are kept.
func splitJobs(file string) ([]execJob, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("read workflow: %w", err)
	}
	wfs, err := workflow.ParseJobs(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	root := doc.Content[0]
	var jobsNode *yaml.Node
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == "jobs" {
			jobsNode = root.Content[i+1]
		}
	}
	var out []execJob
	for _, wf := range wfs {
		var jobNode *yaml.Node
		for i := 0; i+1 < len(jobsNode.Content); i += 2 {
			if jobsNode.Content[i].Value == wf.JobID {
				jobNode = jobsNode.Content[i+1]
			}
		}
		one := &yaml.Node{Kind: yaml.MappingNode}
		for i := 0; i+1 < len(jobNode.Content); i += 2 {
			if jobNode.Content[i].Value == "needs" {
				continue
			}
			one.Content = append(one.Content, jobNode.Content[i], jobNode.Content[i+1])
		}
		top := &yaml.Node{Kind: yaml.MappingNode}
		for i := 0; i+1 < len(root.Content); i += 2 {
			if root.Content[i].Value == "jobs" {
				top.Content = append(top.Content, root.Content[i], &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{{Kind: yaml.ScalarNode, Value: wf.JobID}, one}})
				continue
			}
			top.Content = append(top.Content, root.Content[i], root.Content[i+1])
		}
		payload, err := yaml.Marshal(top)
		if err != nil {
			return nil, fmt.Errorf("%s: job %s: %w", file, wf.JobID, err)
		}
		out = append(out, execJob{id: wf.JobID, file: file, needs: wf.Job.Needs, payload: payload})
	}
	return out, nil
}

// orderJobs sorts jobs so every job comes after the jobs it needs.
func orderJobs(jobs []execJob) ([]execJob, error) {
	byID := map[string]execJob{}
	for _, j := range jobs {
		byID[j.id] = j
	}
	var out []execJob
	state := map[string]int{} // 1 visiting, 2 done
	var visit func(id string, path []string) error
	visit = func(id string, path []string) error {
		switch state[id] {
		case 1:
			return fmt.Errorf("jobs need each other in a cycle: %s", strings.Join(append(path, id), " -> "))
		case 2:
			return nil
		}
		j, ok := byID[id]
		if !ok {
			return fmt.Errorf("job %s needs %q, which no workflow defines", path[len(path)-1], id)
		}
		state[id] = 1
		for _, d := range j.needs {
			if err := visit(d, append(path, id)); err != nil {
				return err
			}
		}
		state[id] = 2
		out = append(out, j)
		return nil
	}
	for _, j := range jobs {
		if err := visit(j.id, nil); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// localTask builds the task a forge would send for j.
func localTask(id int64, j execJob, cwd string, secrets, vars map[string]string, needs map[string]*runnerv1.TaskNeed) (*runnerv1.Task, error) {
	gitOut := func(args ...string) string {
		out, err := exec.Command("git", append([]string{"-C", cwd}, args...)...).Output()
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(out))
	}
	actor := "local"
	if u, err := user.Current(); err == nil {
		actor = u.Username
	}
	ref := gitOut("symbolic-ref", "-q", "HEAD")
	repo := "local/" + filepath.Base(cwd)
	ctxMap := map[string]any{
		"actor":            actor,
		"triggering_actor": actor,
		"event_name":       "push",
		"event":            map[string]any{},
		"job":              j.id,
		"ref":              ref,
		"ref_name":         strings.TrimPrefix(ref, "refs/heads/"),
		"ref_type":         "branch",
		"repository":       repo,
		"repository_owner": "local",
		"run_id":           "1",
		"run_number":       "1",
		"run_attempt":      "1",
		"sha":              gitOut("rev-parse", "HEAD"),
		"workflow":         filepath.Base(j.file),
		"server_url":       "",
	}
	st, err := structpb.NewStruct(ctxMap)
	if err != nil {
		return nil, fmt.Errorf("build the task context: %w", err)
	}
	sec := map[string]string{}
	for k, v := range secrets {
		sec[k] = v
	}
	return &runnerv1.Task{Id: id, WorkflowPayload: j.payload, Context: st, Secrets: sec, Vars: vars, Needs: needs}, nil
}

// terminalForge is a report.Client that prints a task's log rows to a
// terminal instead of sending them to a forge, and keeps the final state.
type terminalForge struct {
	mu      sync.Mutex
	out     io.Writer
	prefix  string
	printed int64
	result  runnerv1.Result
	outputs map[string]string
}

func newTerminalForge(out io.Writer, job string) *terminalForge {
	return &terminalForge{out: out, prefix: "[" + job + "] ", outputs: map[string]string{}}
}

// UpdateLog prints rows not printed yet and acknowledges them all.
func (t *terminalForge) UpdateLog(_ context.Context, req *connect.Request[runnerv1.UpdateLogRequest]) (*connect.Response[runnerv1.UpdateLogResponse], error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	idx := req.Msg.GetIndex()
	rows := req.Msg.GetRows()
	for i, row := range rows {
		if idx+int64(i) < t.printed {
			continue
		}
		if req.Msg.GetNoMore() && i == len(rows)-1 && row.GetContent() == "" {
			continue // the sentinel row that closes the log
		}
		fmt.Fprintf(t.out, "%s%s\n", t.prefix, row.GetContent())
	}
	if end := idx + int64(len(req.Msg.GetRows())); end > t.printed {
		t.printed = end
	}
	return connect.NewResponse(&runnerv1.UpdateLogResponse{AckIndex: t.printed}), nil
}

// UpdateTask keeps the final result and the outputs.
func (t *terminalForge) UpdateTask(_ context.Context, req *connect.Request[runnerv1.UpdateTaskRequest]) (*connect.Response[runnerv1.UpdateTaskResponse], error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if r := req.Msg.GetState().GetResult(); r != runnerv1.Result_RESULT_UNSPECIFIED {
		t.result = r
	}
	for k, v := range req.Msg.GetOutputs() {
		if _, ok := t.outputs[k]; !ok {
			t.outputs[k] = v
		}
	}
	sent := make([]string, 0, len(t.outputs))
	for k := range t.outputs {
		sent = append(sent, k)
	}
	return connect.NewResponse(&runnerv1.UpdateTaskResponse{
		State:       &runnerv1.TaskState{Id: req.Msg.GetState().GetId()},
		SentOutputs: sent,
	}), nil
}

func (t *terminalForge) final() (runnerv1.Result, map[string]string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.result, t.outputs
}
