package workflow

import (
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/forgeload/forgeload/internal/pkg/strictyaml"
)

// MaxPayloadBytes is the largest workflow payload Parse accepts.
const MaxPayloadBytes = 4 << 20

// ParseError is a workflow that does not follow the schema. Line is the
// 1-based YAML line, or 0 when the error is about the whole document; Path
// names the field, e.g. "steps[2].with".
type ParseError struct {
	// File names the workflow file, for a local run; "" for a forge
	// task's payload, whose lines are those of the job as the forge sent
	// it, not of a file in the repository.
	File string
	// Line is the 1-based line of the offending YAML node, or 0.
	Line int
	// Path is the field, such as "jobs.perf.runs-on" or "steps[2].with",
	// or "" for the whole workflow.
	Path string
	// Msg says what is wrong and how to fix it.
	Msg string
}

// Error renders the error as "ci.yml:12: steps[2]: message" when File is
// set, else as "workflow line 12: steps[2]: message".
func (e *ParseError) Error() string {
	s := (&strictyaml.Error{File: e.File, Line: e.Line, Path: e.Path, Msg: e.Msg}).Error()
	if e.File == "" && e.Line > 0 {
		s = "workflow " + s // "workflow line 12: ..."
	}
	return s
}

func perr(n *yaml.Node, path, format string, args ...any) error {
	return parseError(strictyaml.Errorf(n, path, format, args...))
}

// parseError turns an error of the strict-YAML layer into a ParseError.
func parseError(e *strictyaml.Error) error {
	return &ParseError{Line: e.Line, Path: e.Path, Msg: e.Msg}
}

// want is the kind error: "want <want>, got <what n is>".
func want(n *yaml.Node, path, want string) error {
	return parseError(strictyaml.Want(n, path, want))
}

// Keys of the GitHub Actions workflow schema. Every key in these sets is
// accepted, even those forgeload does not act on.
var (
	topKeys = []string{"name", "run-name", "on", "permissions", "env", "defaults", "concurrency", "jobs"}
	jobKeys = []string{"name", "needs", "runs-on", "permissions", "environment", "concurrency", "outputs",
		"env", "defaults", "if", "steps", "timeout-minutes", "strategy", "continue-on-error",
		"container", "services", "uses", "with", "secrets", "snapshot"}
	stepKeys = []string{"id", "if", "name", "uses", "run", "shell", "working-directory", "with", "env", "continue-on-error", "timeout-minutes"}
)

var (
	stepIDRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)
	jobIDRe  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)
)

// Parse parses a forge task's workflow_payload: a YAML workflow with exactly
// one job. Every key must belong to the GitHub Actions schema; errors are
// [*ParseError] values naming the line and the field. A job may call a
// reusable workflow (uses:, with no steps); see [ParseCalled].
func Parse(payload []byte) (*Workflow, error) {
	ws, err := parse(payload, true)
	if err != nil {
		return nil, err
	}
	return ws[0], nil
}

// ParseJobs parses a workflow with any number of jobs, for local runs, and
// returns one [Workflow] per job in file order, each sharing the top-level
// keys. Matrices are not expanded. The rules are those of [Parse], except
// the job count.
func ParseJobs(payload []byte) ([]*Workflow, error) {
	return parse(payload, false)
}

func parse(payload []byte, exactlyOne bool) ([]*Workflow, error) {
	root, err := parseRoot(payload)
	if err != nil {
		return nil, err
	}
	base := Workflow{}
	var jobs *yaml.Node
	var jobsKey *yaml.Node
	err = walk(root, "", "", topKeys, func(p strictyaml.Pair, kp string) (err error) {
		switch v := p.Value; p.Name {
		case "name":
			base.Name, err = scalar(v, kp)
		case "run-name":
			base.RunName, err = scalar(v, kp)
		case "env":
			base.Env, err = stringMap(v, kp)
		case "defaults":
			base.Defaults, err = parseDefaults(v, kp)
		case "on":
			base.InputTypes = dispatchInputTypes(v)
		case "jobs":
			jobs, jobsKey = v, p.Key
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if jobs == nil {
		return nil, &ParseError{Msg: "workflow has no jobs: key; a forge task must carry exactly one job"}
	}
	if jobs.Kind != yaml.MappingNode {
		if strictyaml.IsNull(jobs) {
			return nil, perr(jobsKey, "jobs", "workflow has no jobs; a forge task must carry exactly one")
		}
		return nil, want(jobs, "jobs", "a mapping of job ids to jobs")
	}
	jobPairs, err := mapPairs(jobs, "jobs")
	if err != nil {
		return nil, err
	}
	if exactlyOne && len(jobPairs) != 1 {
		if len(jobPairs) == 0 {
			return nil, perr(jobsKey, "jobs", "workflow has no jobs; a forge task must carry exactly one")
		}
		ids := make([]string, len(jobPairs))
		for i, p := range jobPairs {
			ids[i] = p.Name
		}
		sort.Strings(ids)
		return nil, &ParseError{Msg: fmt.Sprintf("workflow has %d jobs (%s); a forge task must carry exactly one", len(ids), strings.Join(ids, ", "))}
	}
	if len(jobPairs) == 0 {
		return nil, perr(jobsKey, "jobs", "workflow has no jobs; add one under jobs:")
	}
	out := make([]*Workflow, 0, len(jobPairs))
	for _, p := range jobPairs {
		id := p.Name
		if !jobIDRe.MatchString(id) {
			return nil, perr(p.Key, "jobs", "job id %q must start with a letter or _ and contain only letters, digits, - and _", id)
		}
		job, err := parseJob(p.Value, "jobs."+id)
		if err != nil {
			return nil, err
		}
		w := base
		w.JobID = id
		w.Job = job
		out = append(out, &w)
	}
	return out, nil
}

// parseRoot reads payload as YAML, within the size and alias bounds, and
// returns its top mapping.
func parseRoot(payload []byte) (*yaml.Node, error) {
	if len(payload) > MaxPayloadBytes {
		return nil, &ParseError{Msg: fmt.Sprintf("workflow is %d bytes, more than the %d allowed; shorten it", len(payload), MaxPayloadBytes)}
	}
	root, _, serr := strictyaml.Parse(payload)
	if serr != nil {
		return nil, parseError(serr)
	}
	if root == nil {
		return nil, &ParseError{Msg: "workflow is empty; a forge task must carry a workflow with one job"}
	}
	if strictyaml.Expanded(root, maxNodes) > maxNodes {
		return nil, &ParseError{Msg: fmt.Sprintf("workflow expands to more than %d YAML nodes (through aliases); remove the aliases that repeat large parts", maxNodes)}
	}
	if root.Kind != yaml.MappingNode {
		return nil, want(root, "", "a mapping with a jobs: key")
	}
	return root, nil
}

func parseJob(n *yaml.Node, path string) (*Job, error) {
	if n.Kind != yaml.MappingNode {
		return nil, want(n, path, "a mapping with runs-on: and steps:")
	}
	job := &Job{}
	var stepsNode *yaml.Node
	err := walk(n, path, "", jobKeys, func(p strictyaml.Pair, kp string) (err error) {
		k, v := p.Name, p.Value
		switch k {
		case "name":
			job.Name, err = scalar(v, kp)
		case "needs":
			job.Needs, err = stringList(v, kp)
		case "runs-on":
			job.RunsOn, err = parseRunsOn(v, kp)
		case "env":
			job.Env, err = stringMap(v, kp)
		case "if":
			job.If, err = scalar(v, kp)
		case "outputs":
			job.Outputs, err = stringMap(v, kp)
		case "timeout-minutes":
			job.TimeoutMinutes, err = minutes(v, kp)
		case "continue-on-error":
			job.ContinueOnError, err = boolOrExpr(v, kp)
		case "defaults":
			job.Defaults, err = parseDefaults(v, kp)
		case "strategy":
			job.Matrix, err = parseStrategy(v, kp)
		case "steps":
			stepsNode = v
		case "services":
			job.Services, err = parseServices(v, kp)
		case "container":
			if !isEmpty(v) {
				job.Container, err = parseContainer(v, kp)
			}
		case "uses":
			err = parseJobUses(job, v, kp)
		case "with":
			job.With, err = stringMap(v, kp)
		case "secrets":
			err = parseJobSecrets(job, v, kp)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if err := finishJob(job, n, stepsNode, path); err != nil {
		return nil, err
	}
	return job, nil
}

// finishJob checks that the job (node n, at path) either calls a
// reusable workflow or has steps (stepsNode), and parses them.
func finishJob(job *Job, n, stepsNode *yaml.Node, path string) (err error) {
	if job.Uses != "" {
		return checkCallJob(job, n, stepsNode, path)
	}
	if len(job.With) > 0 || len(job.Secrets) > 0 || job.SecretsInherit {
		return perr(n, path, "with: and secrets: only apply to a job that calls a reusable workflow with uses:; remove them, or add uses:")
	}
	if stepsNode == nil {
		return perr(n, path, "a job needs steps: (or uses: to call a reusable workflow)")
	}
	job.Steps, err = parseSteps(stepsNode)
	return err
}

// parseJobUses reads a job's uses:, a reusable workflow; serialisers may
// write it empty, which counts as absent.
func parseJobUses(job *Job, v *yaml.Node, kp string) error {
	if isEmpty(v) {
		return nil
	}
	s, err := scalar(v, kp)
	if err != nil {
		return err
	}
	job.Uses = strings.TrimSpace(s)
	if _, err := ParseCallRef(job.Uses); err != nil {
		return perr(v, kp, "%v", err)
	}
	return nil
}

// parseJobSecrets reads a calling job's secrets:, inherit or a mapping.
func parseJobSecrets(job *Job, v *yaml.Node, kp string) (err error) {
	if v.Kind == yaml.ScalarNode && !strictyaml.IsNull(v) {
		if v.Value != "inherit" {
			return perr(v, kp, "%q: want inherit, or a mapping of secret names to values", v.Value)
		}
		job.SecretsInherit = true
		return nil
	}
	job.Secrets, err = stringMap(v, kp)
	return err
}

// checkCallJob checks a job that calls a reusable workflow: its jobs bring
// the steps, containers and services.
func checkCallJob(job *Job, n, stepsNode *yaml.Node, path string) error {
	switch {
	case stepsNode != nil && !isEmpty(stepsNode):
		return perr(stepsNode, path+".steps", "a job that calls a reusable workflow (uses:) has no steps: of its own; move them into a job of its own")
	case job.Container != nil:
		return perr(n, path+".container", "a job that calls a reusable workflow (uses:) takes no container:; set it on the called workflow's jobs")
	case len(job.Services) > 0:
		return perr(n, path+".services", "a job that calls a reusable workflow (uses:) takes no services:; set them on the called workflow's jobs")
	}
	return nil
}

// isEmpty reports whether n is null, "", or an empty mapping or list.
func isEmpty(n *yaml.Node) bool {
	switch n.Kind {
	case yaml.ScalarNode:
		return strictyaml.IsNull(n) || n.Value == ""
	case yaml.MappingNode, yaml.SequenceNode:
		return len(n.Content) == 0
	}
	return false
}

func parseSteps(n *yaml.Node) ([]Step, error) {
	if n.Kind != yaml.SequenceNode {
		return nil, want(n, "steps", "a list of steps")
	}
	if len(n.Content) == 0 {
		return nil, perr(n, "steps", "a job needs at least one step")
	}
	steps := make([]Step, 0, len(n.Content))
	ids := map[string]int{}
	for i, sn := range n.Content {
		sn = strictyaml.Resolve(sn)
		s, err := parseStep(sn, i)
		if err != nil {
			return nil, err
		}
		if s.ID != "" {
			lid := strings.ToLower(s.ID)
			if j, dup := ids[lid]; dup {
				return nil, perr(sn, fmt.Sprintf("steps[%d].id", i), "id %q is already used by steps[%d]; step ids must be unique", s.ID, j)
			}
			ids[lid] = i
		}
		steps = append(steps, s)
	}
	return steps, nil
}

// parseStep parses steps[i], the mapping n.
func parseStep(n *yaml.Node, i int) (Step, error) {
	path := fmt.Sprintf("steps[%d]", i)
	s := Step{Index: i}
	if n.Kind != yaml.MappingNode {
		return s, want(n, path, "a mapping with run: or uses:")
	}
	var only kindKeys
	err := walk(n, path, "", stepKeys, func(p strictyaml.Pair, kp string) error {
		return setStepField(&s, &only, p, kp)
	})
	if err != nil {
		return s, err
	}
	if err := checkStepKind(&s, only, n, path); err != nil {
		return s, err
	}
	return s, nil
}

// kindKeys are the keys, when set, that apply to one kind of step only,
// for the error that names them.
type kindKeys struct{ shell, workingDirectory, with *yaml.Node }

// setStepField sets the field of s that key p (at kp) holds.
func setStepField(s *Step, only *kindKeys, p strictyaml.Pair, kp string) (err error) {
	k, v := p.Name, p.Value
	switch k {
	case "id":
		if s.ID, err = scalar(v, kp); err == nil && s.ID != "" && !stepIDRe.MatchString(s.ID) {
			err = perr(v, kp, "step id %q must start with a letter or _ and contain only letters, digits, - and _", s.ID)
		}
	case "name":
		s.Name, err = scalar(v, kp)
	case "if":
		s.If, err = scalar(v, kp)
	case "uses":
		s.Uses, err = scalar(v, kp)
		s.Uses = strings.TrimSpace(s.Uses)
	case "run":
		s.Run, err = scalar(v, kp)
	case "shell":
		if s.Shell, err = scalar(v, kp); s.Shell != "" {
			only.shell = p.Key
		}
	case "working-directory":
		if s.WorkingDirectory, err = scalar(v, kp); s.WorkingDirectory != "" {
			only.workingDirectory = p.Key
		}
	case "env":
		s.Env, err = stringMap(v, kp)
	case "with":
		if s.With, err = stringMap(v, kp); len(s.With) > 0 {
			only.with = p.Key
		}
	case "continue-on-error":
		s.ContinueOnError, err = boolOrExpr(v, kp)
	case "timeout-minutes":
		s.TimeoutMinutes, err = minutes(v, kp)
	}
	return err
}

// checkStepKind checks that step s (node n, at path) is either a run: or a
// uses: step, with no key of the other kind, and clears a run: of white
// space only from a uses: step.
func checkStepKind(s *Step, only kindKeys, n *yaml.Node, path string) error {
	// An empty run: or uses: counts as absent, as serialisers may write one.
	hasRun, hasUses := strings.TrimSpace(s.Run) != "", s.Uses != ""
	switch {
	case hasRun && hasUses:
		return perr(n, path, "both run: and uses: are set; keep one")
	case !hasRun && !hasUses:
		return perr(n, path, "a step needs either run: or uses: (with a value)")
	case hasUses && only.shell != nil:
		return perr(only.shell, path+".shell", "only applies to run: steps; remove it from this uses: step")
	case hasUses && only.workingDirectory != nil:
		return perr(only.workingDirectory, path+".working-directory", "only applies to run: steps; remove it from this uses: step")
	case hasRun && only.with != nil:
		return perr(only.with, path+".with", "only applies to uses: steps; pass values to a run: step with env:")
	}
	if !hasRun {
		s.Run = ""
	}
	return nil
}

func parseRunsOn(n *yaml.Node, path string) ([]string, error) {
	if n.Kind != yaml.MappingNode {
		return stringList(n, path)
	}
	var labels []string
	err := fields(n, path, "", map[string]func(*yaml.Node, string) error{
		"group":  ignore,
		"labels": func(v *yaml.Node, p string) (err error) { labels, err = stringList(v, p); return err },
	})
	return labels, err
}

func parseDefaults(n *yaml.Node, path string) (Defaults, error) {
	var d Defaults
	err := fields(n, path, "a mapping with run:", map[string]func(*yaml.Node, string) error{
		"run": func(v *yaml.Node, p string) error {
			return fields(v, p, "a mapping with shell: or working-directory:", map[string]func(*yaml.Node, string) error{
				"shell":             func(v *yaml.Node, p string) (err error) { d.Shell, err = scalar(v, p); return err },
				"working-directory": func(v *yaml.Node, p string) (err error) { d.WorkingDirectory, err = scalar(v, p); return err },
			})
		},
	})
	return d, err
}

func parseStrategy(n *yaml.Node, path string) (map[string]any, error) {
	var matrix map[string]any
	err := fields(n, path, "a mapping with matrix:", map[string]func(*yaml.Node, string) error{
		"fail-fast":    ignore,
		"max-parallel": ignore,
		"matrix": func(v *yaml.Node, mp string) error {
			if v.Kind != yaml.MappingNode {
				// An expression such as ${{ fromJSON(...) }}: the forge expands it.
				_, err := scalar(v, mp)
				return err
			}
			mpairs, err := mapPairs(v, mp)
			if err != nil {
				return err
			}
			matrix = make(map[string]any, len(mpairs))
			for _, m := range mpairs {
				if m.Name == "include" || m.Name == "exclude" {
					continue
				}
				var val any
				if err := m.Value.Decode(&val); err != nil {
					return perr(m.Value, mp+"."+m.Name, "cannot read the value: %v", err)
				}
				if l, ok := val.([]any); ok && len(l) == 1 {
					val = l[0]
				}
				matrix[m.Name] = val
			}
			return nil
		},
	})
	return matrix, err
}

// YAML helpers.

// dispatchInputTypes reads the type: of each on.workflow_dispatch.inputs
// entry. on: is the forge's business (it chose to run this job), so a shape
// it does not expect gives no types rather than an error.
func dispatchInputTypes(on *yaml.Node) map[string]string {
	child := func(n *yaml.Node, name string) *yaml.Node {
		if n == nil || n.Kind != yaml.MappingNode {
			return nil
		}
		pairs, _ := strictyaml.Mapping(n, "", strictyaml.Keys{})
		for _, p := range pairs {
			if p.Name == name {
				return p.Value
			}
		}
		return nil
	}
	inputs := child(child(on, "workflow_dispatch"), "inputs")
	if inputs == nil || inputs.Kind != yaml.MappingNode {
		return nil
	}
	pairs, _ := strictyaml.Mapping(inputs, "", strictyaml.Keys{})
	types := map[string]string{}
	for _, p := range pairs {
		if t := child(p.Value, "type"); t != nil && t.Kind == yaml.ScalarNode {
			types[p.Name] = strings.ToLower(strings.TrimSpace(t.Value))
		}
	}
	return types
}

// ignore checks that a key forgeload does not act on has a scalar value.
func ignore(v *yaml.Node, path string) error {
	_, err := scalar(v, path)
	return err
}

// maxNodes bounds the size of a workflow with its aliases expanded, so that
// a few bytes of nested aliases cannot make parsing take unbounded time.
const maxNodes = 1 << 20

// mapPairs returns the pairs of the mapping n of any plain keys, or the
// first error of the strict-YAML layer.
func mapPairs(n *yaml.Node, path string) ([]strictyaml.Pair, error) {
	pairs, errs := strictyaml.Mapping(n, path, strictyaml.Keys{})
	if len(errs) > 0 {
		return nil, parseError(errs[0])
	}
	return pairs, nil
}

// walk calls each with the pairs of the block n, whose keys must be among
// names, and their paths, in document order, and returns the first error:
// of the block's kind (see [strictyaml.Block]; what is the kind it wants),
// of a key (set twice, unknown, ...) or of each.
func walk(n *yaml.Node, path, what string, names []string, each func(p strictyaml.Pair, path string) error) error {
	var err error
	strictyaml.Block(n, path, what, strictyaml.Keys{Names: names}, func(e *strictyaml.Error) {
		if err == nil {
			err = parseError(e)
		}
	}, func(p strictyaml.Pair, kp string) {
		if err == nil {
			err = each(p, kp)
		}
	})
	return err
}

// fields decodes the block n, whose keys are those of set, by calling
// set[key] with each value and its path, in document order, up to the first
// error. A null n is empty; a node of another kind is an error naming what
// it wants.
func fields(n *yaml.Node, path, what string, set map[string]func(v *yaml.Node, path string) error) error {
	names := make([]string, 0, len(set))
	for k := range set {
		names = append(names, k)
	}
	return walk(n, path, what, names, func(p strictyaml.Pair, kp string) error {
		return set[p.Name](p.Value, kp)
	})
}

// scalar renders a scalar node as GitHub renders it in a string context.
func scalar(n *yaml.Node, path string) (string, error) {
	if n.Kind != yaml.ScalarNode {
		return "", want(n, path, "a string, number or boolean")
	}
	switch n.ShortTag() {
	case "!!null":
		return "", nil
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err == nil {
			return strconv.FormatBool(b), nil
		}
	case "!!int":
		var i int64
		if err := n.Decode(&i); err == nil {
			return strconv.FormatInt(i, 10), nil
		}
	case "!!float":
		var f float64
		if err := n.Decode(&f); err == nil {
			return formatNumber(f), nil
		}
	}
	return n.Value, nil
}

func stringMap(n *yaml.Node, path string) (map[string]string, error) {
	if strictyaml.IsNull(n) {
		return nil, nil
	}
	if n.Kind != yaml.MappingNode {
		return nil, want(n, path, "a mapping of names to values")
	}
	pairs, err := mapPairs(n, path)
	if err != nil {
		return nil, err
	}
	m := make(map[string]string, len(pairs))
	for _, p := range pairs {
		v, err := scalar(p.Value, path+"."+p.Name)
		if err != nil {
			return nil, err
		}
		m[p.Name] = v
	}
	return m, nil
}

func stringList(n *yaml.Node, path string) ([]string, error) {
	if n.Kind == yaml.ScalarNode {
		if strictyaml.IsNull(n) {
			return nil, nil
		}
		v, err := scalar(n, path)
		return []string{v}, err
	}
	if n.Kind != yaml.SequenceNode {
		return nil, want(n, path, "a string or a list of strings")
	}
	out := make([]string, 0, len(n.Content))
	for i, e := range n.Content {
		v, err := scalar(strictyaml.Resolve(e), strictyaml.Index(path, i))
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

func minutes(n *yaml.Node, path string) (string, error) {
	v, err := scalar(n, path)
	if err != nil || v == "" || strings.Contains(v, "${{") {
		return v, err
	}
	f, perrr := strconv.ParseFloat(v, 64)
	if perrr != nil || f <= 0 || math.IsInf(f, 0) || math.IsNaN(f) {
		return "", perr(n, path, "%q is not a positive number of minutes or a ${{ }} expression", v)
	}
	return v, nil
}

func boolOrExpr(n *yaml.Node, path string) (string, error) {
	v, err := scalar(n, path)
	if err != nil || v == "" || v == "true" || v == "false" || strings.Contains(v, "${{") {
		return v, err
	}
	return "", perr(n, path, "%q must be true, false or a ${{ }} expression", v)
}
