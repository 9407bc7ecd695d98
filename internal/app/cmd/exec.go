package cmd

import (
	"context"
	"errors"
	"fmt"
	"github.com/forgeload/forgeload/internal/pkg/jobrun"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
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
	"github.com/forgeload/forgeload/internal/pkg/container"
	"github.com/forgeload/forgeload/internal/pkg/demo"
	"github.com/forgeload/forgeload/internal/pkg/policy"
	"github.com/forgeload/forgeload/internal/pkg/ver"
	"github.com/forgeload/forgeload/internal/pkg/workflow"
)

type execFlags struct {
	workflows  string
	job        string
	secrets    []string
	vars       []string
	envs       []string
	demo       bool
	list       bool
	resultsDir string
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
	fl.StringArrayVarP(&f.secrets, "secret", "s", nil, "secret as NAME (value from the environment variable NAME), NAME=@FILE (value read from FILE) or NAME=VALUE (visible in ps: warns); repeatable; masked in the output")
	fl.StringArrayVar(&f.vars, "var", nil, "variable as KEY=VALUE (repeatable), read as vars.KEY")
	fl.StringArrayVar(&f.envs, "env", nil, "extra env as KEY=VALUE (repeatable)")
	fl.BoolVar(&f.demo, "demo", false, "start the embedded demo target and expose its URL as env.FORGELOAD_DEMO_URL")
	fl.StringVar(&f.resultsDir, "results-dir", resultsDirDefault, "write each load step's report.html and result.json under this directory, in exec-<time>-<pid>/<step>; '' writes none")
	fl.BoolVarP(&f.list, "list", "l", false, "list the jobs in the order they would run, and run nothing (as act_runner exec -l)")
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

// maxSecretFile bounds a secret read from a file by --secret NAME=@FILE.
const maxSecretFile = 1 << 20

// parseSecrets reads the --secret flags: NAME takes the value of the
// environment variable NAME, NAME=@FILE the content of FILE (one final
// line break dropped), and NAME=VALUE the value as given, with a warning to
// warn that the process list and the shell history show it. Errors never
// quote a value.
func parseSecrets(list []string, warn io.Writer) (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range list {
		name, v, hasValue := strings.Cut(kv, "=")
		if name == "" {
			return nil, errors.New("--secret with no name: want NAME (read from the environment variable NAME), NAME=@FILE or NAME=VALUE")
		}
		switch {
		case !hasValue:
			env, ok := os.LookupEnv(name)
			if !ok {
				return nil, fmt.Errorf("--secret %s: the environment variable %s is not set: export it first, or use --secret %s=@FILE to read the value from a file", name, name, name)
			}
			v = env
		case strings.HasPrefix(v, "@"):
			b, err := readSecretFile(v[1:])
			if err != nil {
				return nil, fmt.Errorf("--secret %s=@%s: %w", name, v[1:], err)
			}
			v = b
		default:
			fmt.Fprintf(warn, "warning: --secret %s=VALUE puts the value in the process list (ps) and the shell history; use --secret %s (read from the environment variable %s) or --secret %s=@FILE\n", name, name, name, name)
		}
		out[name] = v
	}
	return out, nil
}

// readSecretFile reads a secret's value from path, at most maxSecretFile
// bytes, without one final line break (as echo and editors leave it).
func readSecretFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("read the secret: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxSecretFile+1))
	if err != nil {
		return "", fmt.Errorf("read the secret: %w", err)
	}
	if len(b) > maxSecretFile {
		return "", fmt.Errorf("the file is larger than %d bytes: a secret must be smaller", maxSecretFile)
	}
	s := strings.TrimSuffix(string(b), "\n")
	return strings.TrimSuffix(s, "\r"), nil
}

// execJob is one job of a local run: a workflow job, or one combination of
// its strategy.matrix.
type execJob struct {
	id      string
	name    string // id, with the matrix suffix for a matrix job: "perf (10)"
	file    string
	needs   []string
	payload []byte
}

// runExec is `forgeload exec`: the jobs of the workflow files, picked and
// ordered (see [newLocalRun]), run one after another (see [localRun.Run]).
func runExec(ctx context.Context, g *globalFlags, f *execFlags, args []string, stdout, stderr io.Writer) error {
	l, err := newLocalRun(g.config, f, args, stderr)
	if err != nil {
		return err
	}
	if f.list {
		return listJobs(stdout, l.jobs)
	}
	if f.demo {
		d, err := demo.Start(demo.Options{})
		if err != nil {
			return err
		}
		defer d.Close()
		l.envs["FORGELOAD_DEMO_URL"] = d.URL()
		fmt.Fprintf(stderr, "demo target listening on %s\n", d.URL())
	}
	stop, err := l.start(ctx, stderr)
	if err != nil {
		return err
	}
	defer stop()
	return l.Run(ctx, stdout)
}

// localRun is one `forgeload exec`: the jobs to run in needs: order, and
// what each job's task runner is given (the daemon's, with no forge: the
// job's log goes to the terminal and actions/checkout copies cwd).
type localRun struct {
	cfg                 *config.Config
	jobs                []execJob
	secrets, vars, envs map[string]string
	cwd                 string
	resultsDir          string // where load steps write their results; "" none

	// Set by start.
	pol        *policy.Policy
	log        *logrus.Entry
	containers run.Containers
	engErr     error
	cache      jobrun.CacheServer
}

// newLocalRun reads the flags, the config and the workflow files (args, or
// those under -W), keeps the job -j names (without its needs), and orders
// the jobs after the jobs they need. Warnings (a --secret given with its
// value) go to warn. Every error is bad input (exit 2).
func newLocalRun(cfgPath string, f *execFlags, args []string, warn io.Writer) (*localRun, error) {
	l := &localRun{}
	var err error
	if l.secrets, err = parseSecrets(f.secrets, warn); err != nil {
		return nil, withCode(ExitBadInput, err)
	}
	for _, kv := range []struct {
		flag string
		list []string
		to   *map[string]string
	}{{"var", f.vars, &l.vars}, {"env", f.envs, &l.envs}} {
		if *kv.to, err = parseKV(kv.flag, kv.list); err != nil {
			return nil, withCode(ExitBadInput, err)
		}
	}
	if l.cfg, err = loadConfig(cfgPath); err != nil {
		return nil, err
	}
	files := args
	if len(files) == 0 {
		files, err = workflowFiles(f.workflows)
		if err != nil {
			return nil, withCode(ExitBadInput, err)
		}
	}
	for _, file := range files {
		js, err := splitJobs(file)
		if err != nil {
			return nil, withCode(ExitBadInput, err)
		}
		l.jobs = append(l.jobs, js...)
	}
	if f.job != "" {
		var keep []execJob
		for _, j := range l.jobs {
			if j.id == f.job {
				j.needs = nil
				keep = append(keep, j)
			}
		}
		if len(keep) == 0 {
			var ids []string
			for _, j := range l.jobs {
				ids = append(ids, j.id)
			}
			return nil, withCode(ExitBadInput, fmt.Errorf("-j %s: no such job; the workflows have: %s", f.job, strings.Join(ids, ", ")))
		}
		l.jobs = keep
	}
	if l.jobs, err = orderJobs(l.jobs); err != nil {
		return nil, withCode(ExitBadInput, err)
	}
	l.cwd, _ = os.Getwd()
	l.resultsDir = execResultsDir(f.resultsDir)
	return l, nil
}

// start adds runner.envs under the --env values, builds the target policy
// and the logger, and connects to the local Docker Engine when a job needs
// containers; what those leave is removed by stop.
func (l *localRun) start(ctx context.Context, stderr io.Writer) (stop func(), err error) {
	for k, v := range l.cfg.Runner.Envs {
		if _, set := l.envs[k]; !set {
			l.envs[k] = v
		}
	}
	l.pol, err = policy.New(ctx, policy.Options{
		Allow: l.cfg.Load.AllowTargets,
		Deny:  l.cfg.Load.DenyTargets,
	})
	if err != nil {
		return nil, withCode(ExitBadInput, err)
	}
	logger := newLogger(l.cfg, stderr)
	logger.SetLevel(logrus.WarnLevel)
	l.log = logrus.NewEntry(logger)
	cctx, stopCache := context.WithCancel(ctx)
	var cacheWG sync.WaitGroup
	if l.cache, err = startCache(cctx, l.cfg.Cache, &cacheWG, l.log); err != nil {
		stopCache()
		return nil, err
	}
	stopped := func() { stopCache(); cacheWG.Wait() }
	// Services, job containers, docker:// steps and Docker actions run on
	// the local Docker Engine, under an owner of this process alone; what
	// they leave is removed by stop.
	if !slices.ContainsFunc(l.jobs, func(j execJob) bool { return needsContainers(j.payload, l.cfg.Runner.Labels) }) {
		return stopped, nil
	}
	eng, err := connectEngine(ctx, l.cfg, fmt.Sprintf("forgeload-exec-%d", os.Getpid()))
	if err != nil {
		l.engErr = err // the jobs that need it fail with this reason
		return stopped, nil
	}
	l.containers = eng
	return func() { stopEngine(eng, l.log); stopped() }, nil
}

// Run runs the jobs in order, each given the results of the jobs it needs
// as the forge gives them in a task's needs. The task runner decides from
// those and the job's if: (none means success()) whether the job runs or
// is skipped, as in the daemon, so an if: failure() or if: always() job
// runs after a failed job it needs. It fails (exit 1) when a job did not
// succeed.
func (l *localRun) Run(ctx context.Context, stdout io.Writer) error {
	results := map[string]*runnerv1.TaskNeed{}
	failed := 0
	for n, j := range l.jobs {
		needs := map[string]*runnerv1.TaskNeed{}
		for _, d := range j.needs {
			if r := results[d]; r != nil {
				needs[d] = r
			}
		}
		lf := newTerminalForge(stdout, j.name)
		lf.steps = newStepNames(j.payload)
		task, err := localTask(int64(n+1), j, l.cwd, l.secrets, l.vars, needs)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "[%s] ▶ job %s (%s)\n", j.name, j.name, j.file)
		if err := run.New(lf, l.runnerOptions()).Run(ctx, task); err != nil {
			return err
		}
		res, outputs := lf.final()
		results[j.id] = mergeNeed(results[j.id], res, outputs)
		fmt.Fprintf(stdout, "[%s] ■ job %s: %s\n", j.name, j.name, resultName(res))
		if res != runnerv1.Result_RESULT_SUCCESS && res != runnerv1.Result_RESULT_SKIPPED {
			failed++
		}
	}
	if failed > 0 {
		return withCode(ExitFailure, fmt.Errorf("%d of %d jobs did not succeed", failed, len(l.jobs)))
	}
	return nil
}

// runnerOptions are the task runner's options for one local job: the
// daemon's, from the same config, with no forge behind them.
func (l *localRun) runnerOptions() run.Options {
	cfg := l.cfg
	return run.Options{
		Config: jobrun.Config{
			Name:             "local",
			Version:          ver.Version(),
			Labels:           cfg.Runner.Labels,
			Envs:             l.envs,
			Timeout:          cfg.Runner.Timeout,
			Policy:           l.pol,
			Limits:           loadLimits(cfg.Load),
			ProgressInterval: cfg.Load.ProgressInterval,
			LocalRepo:        l.cwd,
			ResultsDir:       l.resultsDir,
			Logger:           l.log,
			Cancelling:       true,
			Containers:       l.containers,
			ContainersErr:    l.engErr,
			PullPolicy:       container.PullPolicy(cfg.Container.PullPolicy),
			ServiceTimeout:   cfg.Container.ServiceTimeout,
			ActionCache:      actionCache(cfg.Runner),
			Cache:            l.cache,
			Node:             cfg.Runner.Node,
			ValidVolumes:     cfg.Container.ValidVolumes,
			OptionsPolicy:    container.Policy{Capabilities: cfg.Container.AllowedCapabilities, Options: cfg.Container.AllowedOptions},
			BuildNetwork:     cfg.Container.AllowBuildNetwork,
			BuildTimeout:     cfg.Container.BuildTimeout,
		},
		ReportInterval: cfg.Runner.ReportInterval,
	}
}

// mergeNeed adds one run of a job to what later jobs see of it in needs: a
// matrix job succeeded only if every one of its jobs did, and its outputs
// are those its jobs set, the later ones winning, as on Gitea.
func mergeNeed(prev *runnerv1.TaskNeed, res runnerv1.Result, outputs map[string]string) *runnerv1.TaskNeed {
	if prev == nil {
		return &runnerv1.TaskNeed{Result: res, Outputs: outputs}
	}
	if prev.Result == runnerv1.Result_RESULT_SUCCESS || prev.Result == runnerv1.Result_RESULT_SKIPPED {
		prev.Result = res
	}
	for k, v := range outputs {
		prev.Outputs[k] = v
	}
	return prev
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
// Task.needs), the top-level keys are kept, and a strategy.matrix is
// expanded into one job per combination (see jobPayloads).
func splitJobs(file string) ([]execJob, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("read workflow: %w", err)
	}
	wfs, err := workflow.ParseJobs(data)
	var pe *workflow.ParseError
	if errors.As(err, &pe) {
		pe.File = file // its lines are the file's: "ci.yml:12: steps[2]: ..."
		return nil, err
	}
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
		jobs, err := jobPayloads(root, wf.JobID, one)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		for _, j := range jobs {
			j.file, j.needs = file, wf.Job.Needs
			out = append(out, j)
		}
	}
	return out, nil
}

// jobPayloads returns the payloads of job id (its mapping node one, under
// the workflow's top-level keys from root). A job with a strategy.matrix
// mapping becomes one payload per combination, as Gitea sends them: the
// matrix holds that combination's values as one-element lists, and the
// job's name (its id when it has none) gets the suffix " (v1, v2)", unless
// the name is an expression.
func jobPayloads(root *yaml.Node, id string, one *yaml.Node) ([]execJob, error) {
	marshal := func(job *yaml.Node) ([]byte, error) {
		top := &yaml.Node{Kind: yaml.MappingNode}
		for i := 0; i+1 < len(root.Content); i += 2 {
			if root.Content[i].Value == "jobs" {
				top.Content = append(top.Content, root.Content[i], &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{{Kind: yaml.ScalarNode, Value: id}, job}})
				continue
			}
			top.Content = append(top.Content, root.Content[i], root.Content[i+1])
		}
		b, err := yaml.Marshal(top)
		if err != nil {
			return nil, fmt.Errorf("job %s: %w", id, err)
		}
		return b, nil
	}
	strategy, matrix := mappingValue(one, "strategy"), (*yaml.Node)(nil)
	if strategy != nil {
		matrix = mappingValue(strategy, "matrix")
	}
	if matrix == nil {
		payload, err := marshal(one)
		return []execJob{{id: id, name: id, payload: payload}}, err
	}
	combos, err := workflow.ExpandMatrix(matrix, "jobs."+id+".strategy.matrix")
	if err != nil {
		return nil, err
	}
	name := id
	if n := mappingValue(one, "name"); n != nil && n.Kind == yaml.ScalarNode && n.Value != "" {
		name = n.Value
	}
	var out []execJob
	for _, c := range combos {
		m, err := c.Node()
		if err != nil {
			return nil, fmt.Errorf("job %s: %w", id, err)
		}
		jobName := name
		if !strings.Contains(name, "${{") {
			jobName += c.Suffix()
		}
		job := withValue(one, "strategy", withValue(strategy, "matrix", m))
		job = withValue(job, "name", &yaml.Node{Kind: yaml.ScalarNode, Value: jobName})
		payload, err := marshal(job)
		if err != nil {
			return nil, err
		}
		out = append(out, execJob{id: id, name: id + c.Suffix(), payload: payload})
	}
	return out, nil
}

// mappingValue returns the value of key in mapping n, or nil.
func mappingValue(n *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// withValue returns a copy of mapping n with key set to v (added at the end
// if n lacks it).
func withValue(n *yaml.Node, key string, v *yaml.Node) *yaml.Node {
	out := &yaml.Node{Kind: yaml.MappingNode, Content: make([]*yaml.Node, 0, len(n.Content)+2)}
	found := false
	for i := 0; i+1 < len(n.Content); i += 2 {
		val := n.Content[i+1]
		if n.Content[i].Value == key {
			val, found = v, true
		}
		out.Content = append(out.Content, n.Content[i], val)
	}
	if !found {
		out.Content = append(out.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: key}, v)
	}
	return out
}

// orderJobs sorts jobs so every job comes after the jobs it needs; the jobs
// of one matrix stay together, in order.
func orderJobs(jobs []execJob) ([]execJob, error) {
	byID := map[string][]execJob{}
	for _, j := range jobs {
		byID[j.id] = append(byID[j.id], j)
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
		js, ok := byID[id]
		if !ok {
			return fmt.Errorf("job %s needs %q, which no workflow defines", path[len(path)-1], id)
		}
		state[id] = 1
		for _, d := range js[0].needs {
			if err := visit(d, append(path, id)); err != nil {
				return err
			}
		}
		state[id] = 2
		out = append(out, js...)
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
	steps   stepNames
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
	t.steps.print(t.out, t.prefix, req.Msg.GetState().GetSteps())
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
