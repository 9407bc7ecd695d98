package workflow

import (
	"fmt"
	"maps"
	"math"
	neturl "net/url"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/forgeload/forgeload/internal/pkg/strictyaml"
)

// CallRef is the reusable workflow a job's uses: names: a file of the
// calling repository (./.gitea/workflows/ci.yml), or of another one
// (owner/repo/.gitea/workflows/ci.yml@ref, optionally behind
// https://host/).
type CallRef struct {
	// Local is true for ./path: the file at the commit of the run.
	Local bool
	// Server is scheme://host[:port] of a full URL, or "" for the forge of
	// the task.
	Server string
	// Owner and Repo name the repository of a remote call; "" when Local.
	Owner, Repo string
	// Path is the file in the repository: .gitea/workflows/ci.yml.
	Path string
	// Ref is the tag, branch or commit of a remote call; "" when Local.
	Ref string
}

var (
	callNameRe = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]*$`)
	callRefRe  = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_./+-]*$`)
	callFileRe = regexp.MustCompile(`^\.(gitea|github)/workflows/[A-Za-z0-9_][A-Za-z0-9_.-]*\.ya?ml$`)
)

const callForms = "./.gitea/workflows/FILE.yml, owner/repo/.gitea/workflows/FILE.yml@ref or https://host/owner/repo/.gitea/workflows/FILE.yml@ref (.github/workflows works too)"

// ParseCallRef parses the uses: of a job. Every part is checked, so that
// none can reach git as an option or leave the repository.
func ParseCallRef(uses string) (CallRef, error) {
	if rest, ok := strings.CutPrefix(uses, "./"); ok {
		if strings.Contains(rest, "@") {
			return CallRef{}, fmt.Errorf("%q: a workflow of this repository (./) takes no @ref: it is read at the run's commit; write %s", uses, callForms)
		}
		if !callFileRe.MatchString(rest) {
			return CallRef{}, fmt.Errorf("%q is not a workflow file in .gitea/workflows or .github/workflows; write %s", uses, callForms)
		}
		return CallRef{Local: true, Path: rest}, nil
	}
	r := CallRef{}
	i := strings.LastIndexByte(uses, '@')
	if i < 0 {
		return r, fmt.Errorf("%q has no @ref; write %s", uses, callForms)
	}
	target, ref := uses[:i], uses[i+1:]
	if strings.HasPrefix(target, "https://") || strings.HasPrefix(target, "http://") {
		u, err := neturl.Parse(target)
		if err != nil || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
			return r, fmt.Errorf("%q is not a URL of the form https://host/owner/repo/.gitea/workflows/FILE.yml@ref", target)
		}
		r.Server, target = u.Scheme+"://"+u.Host, strings.TrimPrefix(u.Path, "/")
	}
	parts := strings.SplitN(target, "/", 3)
	if len(parts) < 3 {
		return r, fmt.Errorf("%q names no workflow file; write %s", uses, callForms)
	}
	for _, p := range parts[:2] {
		if !callNameRe.MatchString(p) || p == ".." {
			return r, fmt.Errorf("%q: %q is not a valid owner or repository name (letters, digits, _ . -)", uses, p)
		}
	}
	if !callFileRe.MatchString(parts[2]) {
		return r, fmt.Errorf("%q: %q is not a workflow file in .gitea/workflows or .github/workflows; write %s", uses, parts[2], callForms)
	}
	if !callRefRe.MatchString(ref) || strings.Contains(ref, "..") || len(ref) > 255 {
		return r, fmt.Errorf("%q: @%s is not a valid ref; write a tag, branch or commit id", uses, ref)
	}
	r.Owner, r.Repo, r.Path, r.Ref = parts[0], strings.TrimSuffix(parts[1], ".git"), path.Clean(parts[2]), ref
	return r, nil
}

// Called is a reusable workflow: what its on.workflow_call declares, and
// its jobs.
type Called struct {
	// Inputs are the declared inputs, by name.
	Inputs map[string]CallInput
	// Outputs map each declared output to its value: expression, which
	// reads the jobs context.
	Outputs map[string]string
	// Secrets are the declared secrets, by name; required: true is true.
	Secrets map[string]bool
	// Jobs are the workflow's jobs in file order, each a [Workflow] of its
	// own, as [ParseJobs] returns them, with each strategy.matrix expanded:
	// one entry per combination, all with the job's JobID (see
	// [ExpandMatrix]).
	Jobs []*Workflow
}

// CallInput is one entry of on.workflow_call.inputs.
type CallInput struct {
	// Type is boolean, number or string.
	Type string
	// Required is required: true.
	Required bool
	// Default is the default: as written (it may be an expression), and
	// HasDefault whether one is given.
	Default    string
	HasDefault bool
}

// ParseCalled parses a reusable workflow file: its on: must include
// workflow_call. Errors are [*ParseError] values naming file (the caller's
// name for it), line and field.
func ParseCalled(payload []byte, file string) (*Called, error) {
	c, err := parseCalled(payload)
	if err != nil {
		if pe, ok := err.(*ParseError); ok {
			pe.File = file
		}
		return nil, err
	}
	return c, nil
}

func parseCalled(payload []byte) (*Called, error) {
	root, err := parseRoot(payload)
	if err != nil {
		return nil, err
	}
	var on *yaml.Node
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == "on" {
			on = strictyaml.Resolve(root.Content[i+1])
		}
	}
	c := &Called{Inputs: map[string]CallInput{}, Outputs: map[string]string{}, Secrets: map[string]bool{}}
	call, found := workflowCall(on)
	if !found {
		return nil, &ParseError{Line: lineOf(on), Path: "on", Msg: "the workflow is not reusable: its on: has no workflow_call; add on: workflow_call to it"}
	}
	if call != nil && !strictyaml.IsNull(call) {
		if err := c.readCall(call); err != nil {
			return nil, err
		}
	}
	if c.Jobs, err = ParseJobs(payload); err != nil {
		return nil, err
	}
	if c.Jobs, err = expandMatrices(root, c.Jobs); err != nil {
		return nil, err
	}
	return c, nil
}

// expandMatrices replaces each job of jobs whose strategy.matrix is a
// mapping by one job per combination, as the forge expands a workflow's
// jobs: the same JobID, Matrix holding the combination's values and Name
// the suffix " (v1, v2)" (unless the name is an expression). A matrix
// written as an expression is an error: nothing here can evaluate it
// before the job runs.
func expandMatrices(root *yaml.Node, jobs []*Workflow) ([]*Workflow, error) {
	nodes := map[string]*yaml.Node{}
	if jn := mappingChild(root, "jobs"); jn != nil {
		for i := 0; i+1 < len(jn.Content); i += 2 {
			nodes[jn.Content[i].Value] = strictyaml.Resolve(jn.Content[i+1])
		}
	}
	var out []*Workflow
	for _, w := range jobs {
		m := mappingChild(mappingChild(nodes[w.JobID], "strategy"), "matrix")
		if m == nil {
			out = append(out, w)
			continue
		}
		path := "jobs." + w.JobID + ".strategy.matrix"
		if m.Kind != yaml.MappingNode {
			return nil, perr(m, path, "a matrix written as an expression cannot be expanded in a called workflow, which the runner expands; write its dimensions as lists")
		}
		combos, err := ExpandMatrix(m, path)
		if err != nil {
			return nil, err
		}
		for _, c := range combos {
			one := *w
			job := *w.Job
			job.Matrix = c.Values
			job.Name = firstNonEmpty(job.Name, w.JobID)
			if !strings.Contains(job.Name, "${{") {
				job.Name += c.Suffix()
			}
			one.Job = &job
			out = append(out, &one)
		}
	}
	return out, nil
}

// mappingChild is the value of key in the mapping n, or nil.
func mappingChild(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return strictyaml.Resolve(n.Content[i+1])
		}
	}
	return nil
}

func lineOf(n *yaml.Node) int {
	if n == nil {
		return 0
	}
	return n.Line
}

// workflowCall finds workflow_call in on: (a string, a list or a mapping)
// and returns its value (nil for the string and list forms).
func workflowCall(on *yaml.Node) (*yaml.Node, bool) {
	if on == nil {
		return nil, false
	}
	switch on.Kind {
	case yaml.ScalarNode:
		return nil, on.Value == "workflow_call"
	case yaml.SequenceNode:
		for _, e := range on.Content {
			if e.Kind == yaml.ScalarNode && e.Value == "workflow_call" {
				return nil, true
			}
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(on.Content); i += 2 {
			if on.Content[i].Value == "workflow_call" {
				return strictyaml.Resolve(on.Content[i+1]), true
			}
		}
	}
	return nil, false
}

func (c *Called) readCall(call *yaml.Node) error {
	const p = "on.workflow_call"
	return fields(call, p, "a mapping with inputs:, outputs: and secrets:", map[string]func(*yaml.Node, string) error{
		"inputs":  c.readInputs,
		"outputs": c.readOutputs,
		"secrets": c.readSecrets,
	})
}

func (c *Called) readInputs(n *yaml.Node, p string) error {
	return eachEntry(n, p, func(name string, v *yaml.Node, ip string) error {
		in := CallInput{Type: "string"}
		err := fields(v, ip, "a mapping with type:, required: and default:", map[string]func(*yaml.Node, string) error{
			"description": ignore,
			"type": func(v *yaml.Node, tp string) (err error) {
				if in.Type, err = scalar(v, tp); err == nil && in.Type != "boolean" && in.Type != "number" && in.Type != "string" {
					err = perr(v, tp, "type %q is not boolean, number or string", in.Type)
				}
				return err
			},
			"required": func(v *yaml.Node, rp string) error {
				s, err := scalar(v, rp)
				if err == nil && s != "true" && s != "false" {
					return perr(v, rp, "%q must be true or false", s)
				}
				in.Required = s == "true"
				return err
			},
			"default": func(v *yaml.Node, dp string) (err error) {
				in.Default, err = scalar(v, dp)
				in.HasDefault = true
				return err
			},
		})
		c.Inputs[name] = in
		return err
	})
}

func (c *Called) readOutputs(n *yaml.Node, p string) error {
	return eachEntry(n, p, func(name string, v *yaml.Node, op string) error {
		found := false
		err := fields(v, op, "a mapping with value:", map[string]func(*yaml.Node, string) error{
			"description": ignore,
			"value": func(v *yaml.Node, vp string) (err error) {
				found = true
				c.Outputs[name], err = scalar(v, vp)
				return err
			},
		})
		if err == nil && !found {
			err = perr(v, op, "an output needs value: (such as ${{ jobs.build.outputs.version }})")
		}
		return err
	})
}

func (c *Called) readSecrets(n *yaml.Node, p string) error {
	return eachEntry(n, p, func(name string, v *yaml.Node, sp string) error {
		c.Secrets[name] = false
		return fields(v, sp, "a mapping with description: and required:", map[string]func(*yaml.Node, string) error{
			"description": ignore,
			"required": func(v *yaml.Node, rp string) error {
				s, err := scalar(v, rp)
				if err == nil && s != "true" && s != "false" {
					return perr(v, rp, "%q must be true or false", s)
				}
				c.Secrets[name] = s == "true"
				return err
			},
		})
	})
}

// eachEntry calls each with the name, value and path of every entry of the
// mapping n (null is empty).
func eachEntry(n *yaml.Node, p string, each func(name string, v *yaml.Node, path string) error) error {
	if strictyaml.IsNull(n) {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		return want(n, p, "a mapping of names to their declarations")
	}
	pairs, err := mapPairs(n, p)
	if err != nil {
		return err
	}
	for _, e := range pairs {
		if err := each(e.Name, e.Value, p+"."+e.Name); err != nil {
			return err
		}
	}
	return nil
}

// CallInputs builds the inputs context of a called workflow from the
// caller's with: values (evaluated), typed by the declarations; defaults
// are evaluated by evalDefault. Names match case-insensitively. An input
// the workflow does not declare, a required one not given, or a value that
// is not of its type is an error naming the input and the fix.
func (c *Called) CallInputs(with map[string]string, evalDefault func(string) (string, error)) (map[string]any, error) {
	declared := make(map[string]string, len(c.Inputs))
	for name := range c.Inputs {
		declared[strings.ToLower(name)] = name
	}
	given := map[string]string{}
	for _, k := range slices.Sorted(maps.Keys(with)) {
		name, ok := declared[strings.ToLower(k)]
		if !ok {
			return nil, fmt.Errorf("with.%s: the called workflow declares no input %q under on.workflow_call.inputs (it has: %s); remove it or declare it", k, k, strings.Join(slices.Sorted(maps.Keys(c.Inputs)), ", "))
		}
		given[name] = with[k]
	}
	for _, name := range slices.Sorted(maps.Keys(c.Inputs)) {
		if _, ok := given[name]; !ok && c.Inputs[name].Required {
			return nil, fmt.Errorf("input %q is required by the called workflow (on.workflow_call.inputs.%s.required); give it under the job's with", name, name)
		}
	}
	out := make(map[string]any, len(c.Inputs))
	for _, name := range slices.Sorted(maps.Keys(c.Inputs)) {
		in := c.Inputs[name]
		v, ok := given[name]
		if !ok && in.HasDefault {
			d, err := evalDefault(in.Default)
			if err != nil {
				return nil, fmt.Errorf("on.workflow_call.inputs.%s.default: %w", name, err)
			}
			v = d
		}
		tv, err := typedCallInput(v, in, ok || in.HasDefault)
		if err != nil {
			return nil, fmt.Errorf("input %q: %w", name, err)
		}
		out[name] = tv
	}
	return out, nil
}

func typedCallInput(v string, in CallInput, set bool) (any, error) {
	t := strings.TrimSpace(v)
	switch in.Type {
	case "boolean":
		switch {
		case !set || strings.EqualFold(t, "false"):
			return false, nil
		case strings.EqualFold(t, "true"):
			return true, nil
		}
		return nil, fmt.Errorf("is declared type: boolean, and %d bytes that are not true or false were given; give true or false", len(v))
	case "number":
		if !set {
			return 0.0, nil
		}
		f, err := strconv.ParseFloat(t, 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return nil, fmt.Errorf("is declared type: number, and %d bytes that are not a number were given; give a number", len(v))
		}
		return f, nil
	}
	return v, nil
}
