package forgetest

import (
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	runnerv1 "gitea.dev/actions-proto-go/runner/v1"
	"gopkg.in/yaml.v3"
)

// WithCallExpansion makes the Forge expand reusable workflows itself, as
// Gitea 1.27 does (go-gitea/gitea#37478): a job with uses: is queued with
// [Forge.QueueCall], never reaches a runner, and each job of the called
// workflow becomes a task of its own. Without it the Forge behaves as
// Gitea up to 1.26, which sends the calling job to a runner as one task
// ([Forge.QueueJob]) and leaves the called workflow to it.
func WithCallExpansion() Option {
	return func(f *Forge) { f.expandCalls = true }
}

// Call is a calling job the Forge expanded ([Forge.QueueCall]).
type Call struct {
	f       *Forge
	tasks   map[string]int64  // called job id -> its task
	outputs map[string]string // on.workflow_call.outputs name -> "job.output"
}

// Tasks returns the task of each called job, by job id.
func (c *Call) Tasks() map[string]int64 { return maps.Clone(c.tasks) }

// Need is the calling job as a job that needs it receives it (Task.needs),
// once every called job is done: its result is failure if one failed,
// cancelled if one was cancelled, success otherwise (a skipped job does not
// fail it), and its outputs are on.workflow_call.outputs, read from the
// called jobs' outputs, as Gitea computes them. ok is false while a called
// job is not done.
func (c *Call) Need() (need *runnerv1.TaskNeed, ok bool) {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	res := runnerv1.Result_RESULT_SUCCESS
	for _, id := range c.tasks {
		t := c.f.tasks[id]
		if !t.status.isDone() {
			return nil, false
		}
		switch r := t.view(c.f).Result; {
		case r == runnerv1.Result_RESULT_FAILURE:
			res = r
		case r == runnerv1.Result_RESULT_CANCELLED && res == runnerv1.Result_RESULT_SUCCESS:
			res = r
		}
	}
	out := map[string]string{}
	for name, src := range c.outputs {
		job, key, _ := strings.Cut(src, ".")
		if v, ok := c.f.tasks[c.tasks[job]].outputs[key]; ok {
			out[name] = v
		}
	}
	return &runnerv1.TaskNeed{Result: res, Outputs: out}, true
}

// QueueCall expands the calling job j (a one-job workflow whose job has
// uses:) as Gitea 1.27 does, on a Forge made [WithCallExpansion]: it reads
// the called workflow (./.gitea/workflows/x.yml from the repository of
// [Forge.AddRepo] at its commit; owner/repo/path@ref from a repository of
// [Forge.AddRepo] or [Forge.AddActionRepo]), evaluates its inputs (the
// with: values, else the defaults, typed by their type:) and secrets
// (inherit, or a mapping of ${{ secrets.NAME }}), and queues each called
// job as a task: its payload the called workflow with that job alone (its
// name, on, env and defaults kept), its context j's with event set to the
// workflow_call payload Gitea exposes to called jobs ({"inputs": ...,
// "workflow", "ref"}), its secrets those the call passes. A called job
// that needs others is handed out only once they are done, with their
// results and outputs in Task.needs.
//
// The fake is simpler than Gitea: with: and secrets: values are literals
// or ${{ secrets.NAME }}, no expression is evaluated; an output's value
// must be ${{ jobs.<id>.outputs.<name> }}; a called job may not have a
// matrix or call another workflow. Anything else is an error.
func (f *Forge) QueueCall(j Job) (*Call, error) {
	if !f.expandCalls {
		return nil, fmt.Errorf("forgetest: QueueCall needs a Forge made WithCallExpansion (Gitea 1.27); up to 1.26 the calling job is a task: use QueueJob")
	}
	caller, err := parseCaller(j.Payload)
	if err != nil {
		return nil, err
	}
	content, err := f.calledFile(caller.uses)
	if err != nil {
		return nil, err
	}
	called, err := parseCalled(content)
	if err != nil {
		return nil, fmt.Errorf("forgetest: QueueCall: %s: %w", caller.uses, err)
	}
	inputs, err := called.inputValues(caller.with)
	if err != nil {
		return nil, fmt.Errorf("forgetest: QueueCall: %s: %w", caller.uses, err)
	}
	secrets, err := callSecrets(caller.secrets, j.Secrets)
	if err != nil {
		return nil, err
	}
	c := &Call{f: f, tasks: map[string]int64{}, outputs: called.outputs}
	for _, cj := range called.jobs {
		child := Job{RunsOn: cj.runsOn, Payload: cj.payload, Secrets: secrets, Vars: j.Vars, ReadOnlyToken: j.ReadOnlyToken}
		child.Context = maps.Clone(j.Context)
		if child.Context == nil {
			child.Context = map[string]any{}
		}
		child.Context["event"] = map[string]any{"inputs": inputs, "workflow": caller.uses, "ref": "refs/heads/main"}
		var needs []int64
		for _, n := range cj.needs {
			id, ok := c.tasks[n]
			if !ok {
				return nil, fmt.Errorf("forgetest: QueueCall: %s: jobs.%s.needs: %q is no job above it", caller.uses, cj.id, n)
			}
			needs = append(needs, id)
		}
		c.tasks[cj.id] = f.queueJob(child, needs, cj.needs)
	}
	return c, nil
}

// callNeedsReady reports whether every called job t needs is done, and if
// so fills t's Task.needs with their results and outputs. f.mu is held.
func (f *Forge) callNeedsReady(t *task) bool {
	for _, id := range t.callNeeds {
		if !f.tasks[id].status.isDone() {
			return false
		}
	}
	if len(t.callNeeds) > 0 {
		t.job.Needs = map[string]*runnerv1.TaskNeed{}
		for i, id := range t.callNeeds {
			n := f.tasks[id]
			t.job.Needs[t.callNeedIDs[i]] = &runnerv1.TaskNeed{Result: n.view(f).Result, Outputs: maps.Clone(n.outputs)}
		}
	}
	return true
}

// caller is the calling job of a payload.
type caller struct {
	uses    string
	with    map[string]string
	secrets *yaml.Node
}

func parseCaller(payload []byte) (caller, error) {
	var wf struct {
		Jobs map[string]struct {
			Uses    string            `yaml:"uses"`
			With    map[string]string `yaml:"with"`
			Secrets yaml.Node         `yaml:"secrets"`
		} `yaml:"jobs"`
	}
	if err := yaml.Unmarshal(payload, &wf); err != nil || len(wf.Jobs) != 1 {
		return caller{}, fmt.Errorf("forgetest: QueueCall: the payload is not a one-job workflow (%v)", err)
	}
	for _, jb := range wf.Jobs {
		if jb.Uses == "" {
			return caller{}, fmt.Errorf("forgetest: QueueCall: the job has no uses:; queue it with QueueJob")
		}
		return caller{uses: jb.Uses, with: jb.With, secrets: &jb.Secrets}, nil
	}
	return caller{}, nil
}

// calledFile reads the file uses names from the forge's repositories.
func (f *Forge) calledFile(uses string) ([]byte, error) {
	f.mu.Lock()
	root, repo, sha := f.gitRoot, f.repo, f.repoSHA
	f.mu.Unlock()
	path, ref := strings.TrimPrefix(uses, "./"), sha
	if !strings.HasPrefix(uses, "./") {
		parts := strings.SplitN(uses, "/", 3)
		if len(parts) != 3 {
			return nil, fmt.Errorf("forgetest: QueueCall: uses %q: want ./path or owner/repo/path@ref", uses)
		}
		repo = parts[0] + "/" + parts[1]
		if path, ref, _ = strings.Cut(parts[2], "@"); ref == "" {
			return nil, fmt.Errorf("forgetest: QueueCall: uses %q has no @ref", uses)
		}
	}
	if root == "" || repo == "" {
		return nil, fmt.Errorf("forgetest: QueueCall: uses %q: the forge has no repository (AddRepo)", uses)
	}
	out, err := gitIn(root, "--git-dir="+filepath.Join(root, filepath.FromSlash(repo)+".git"), "show", ref+":"+path)
	if err != nil {
		return nil, fmt.Errorf("forgetest: QueueCall: read %s: %w", uses, err)
	}
	return []byte(out + "\n"), nil
}

// called is a parsed called workflow.
type called struct {
	inputs  map[string]callInput
	outputs map[string]string
	jobs    []calledJob
}

type callInput struct {
	typ, def string
	hasDef   bool
}

type calledJob struct {
	id      string
	runsOn  []string
	needs   []string
	payload []byte
}

// outputRE is the one output value form the fake evaluates.
var outputRE = regexp.MustCompile(`^\$\{\{\s*jobs\.([A-Za-z0-9_-]+)\.outputs\.([A-Za-z0-9_-]+)\s*\}\}$`)

func parseCalled(content []byte) (*called, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(content, &doc); err != nil || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("not a YAML mapping (%v)", err)
	}
	top := doc.Content[0]
	var decl struct {
		On struct {
			WorkflowCall struct {
				Inputs map[string]struct {
					Type    string    `yaml:"type"`
					Default yaml.Node `yaml:"default"`
				} `yaml:"inputs"`
				Outputs map[string]struct {
					Value string `yaml:"value"`
				} `yaml:"outputs"`
			} `yaml:"workflow_call"`
		} `yaml:"on"`
	}
	if err := top.Decode(&decl); err != nil {
		return nil, fmt.Errorf("on.workflow_call: %w", err)
	}
	c := &called{inputs: map[string]callInput{}, outputs: map[string]string{}}
	for name, in := range decl.On.WorkflowCall.Inputs {
		ci := callInput{typ: in.Type}
		if in.Default.Kind == yaml.ScalarNode {
			ci.def, ci.hasDef = in.Default.Value, true
		}
		c.inputs[name] = ci
	}
	for name, o := range decl.On.WorkflowCall.Outputs {
		m := outputRE.FindStringSubmatch(strings.TrimSpace(o.Value))
		if m == nil {
			return nil, fmt.Errorf("on.workflow_call.outputs.%s: the fake forge evaluates only ${{ jobs.<id>.outputs.<name> }}", name)
		}
		c.outputs[name] = m[1] + "." + m[2]
	}
	jobs, err := splitJobs(top)
	if err != nil {
		return nil, err
	}
	c.jobs = jobs
	return c, nil
}

// splitJobs makes one payload per job of the workflow top: the workflow
// with that job alone.
func splitJobs(top *yaml.Node) ([]calledJob, error) {
	var jobsNode *yaml.Node
	for i := 0; i+1 < len(top.Content); i += 2 {
		if top.Content[i].Value == "jobs" {
			jobsNode = top.Content[i+1]
		}
	}
	if jobsNode == nil || jobsNode.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("jobs: missing")
	}
	var out []calledJob
	for i := 0; i+1 < len(jobsNode.Content); i += 2 {
		id, body := jobsNode.Content[i].Value, jobsNode.Content[i+1]
		var jb struct {
			RunsOn   yaml.Node `yaml:"runs-on"`
			Needs    yaml.Node `yaml:"needs"`
			Uses     string    `yaml:"uses"`
			Strategy struct {
				Matrix yaml.Node `yaml:"matrix"`
			} `yaml:"strategy"`
		}
		if err := body.Decode(&jb); err != nil {
			return nil, fmt.Errorf("jobs.%s: %w", id, err)
		}
		if jb.Uses != "" || jb.Strategy.Matrix.Kind != 0 {
			return nil, fmt.Errorf("jobs.%s: the fake forge does not expand a nested call or a matrix", id)
		}
		one := *top
		one.Content = nil
		for k := 0; k+1 < len(top.Content); k += 2 {
			v := top.Content[k+1]
			if top.Content[k].Value == "jobs" {
				v = &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{jobsNode.Content[i], body}}
			}
			one.Content = append(one.Content, top.Content[k], v)
		}
		payload, err := yaml.Marshal(&one)
		if err != nil {
			return nil, err
		}
		out = append(out, calledJob{id: id, runsOn: strings1(&jb.RunsOn), needs: strings1(&jb.Needs), payload: payload})
	}
	return out, nil
}

// strings1 reads a scalar or a list of scalars.
func strings1(n *yaml.Node) []string {
	switch n.Kind {
	case yaml.ScalarNode:
		return []string{n.Value}
	case yaml.SequenceNode:
		var out []string
		for _, e := range n.Content {
			out = append(out, e.Value)
		}
		return out
	}
	return nil
}

// inputValues is the workflow_call inputs: each declared input's with:
// value (names matched case-insensitively), else its default, typed.
func (c *called) inputValues(with map[string]string) (map[string]any, error) {
	out := map[string]any{}
	for name, in := range c.inputs {
		v, ok := "", false
		for k, wv := range with {
			if strings.EqualFold(k, name) {
				v, ok = wv, true
			}
		}
		if !ok {
			if !in.hasDef {
				continue
			}
			v = in.def
		}
		if strings.Contains(v, "${{") {
			return nil, fmt.Errorf("input %s: the fake forge evaluates no expression (%q)", name, v)
		}
		switch in.typ {
		case "boolean":
			out[name] = strings.EqualFold(strings.TrimSpace(v), "true")
		case "number":
			n, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				return nil, fmt.Errorf("input %s: %q is not a number", name, v)
			}
			out[name] = n
		default:
			out[name] = v
		}
	}
	return out, nil
}

// secretRE is the one secrets: value form the fake evaluates.
var secretRE = regexp.MustCompile(`^\$\{\{\s*secrets\.([A-Za-z0-9_]+)\s*\}\}$`)

// callSecrets is what the called jobs get of the caller's secrets: all of
// them for secrets: inherit, those a mapping names, else none (the tokens
// QueueJob adds to every task aside).
func callSecrets(n *yaml.Node, caller map[string]string) (map[string]string, error) {
	out := map[string]string{}
	switch {
	case n == nil || n.Kind == 0:
	case n.Kind == yaml.ScalarNode && n.Value == "inherit":
		maps.Copy(out, caller)
	case n.Kind == yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			m := secretRE.FindStringSubmatch(strings.TrimSpace(n.Content[i+1].Value))
			if m == nil {
				return nil, fmt.Errorf("forgetest: QueueCall: secrets.%s: the fake forge evaluates only ${{ secrets.NAME }}", n.Content[i].Value)
			}
			if v, ok := caller[m[1]]; ok {
				out[n.Content[i].Value] = v
			}
		}
	default:
		return nil, fmt.Errorf("forgetest: QueueCall: secrets: want inherit or a mapping")
	}
	return out, nil
}
