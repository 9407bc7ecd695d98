package workflow

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/forgeload/forgeload/internal/pkg/strictyaml"
)

// MaxActionBytes is the largest action metadata file ParseAction accepts.
const MaxActionBytes = 1 << 20

// Action is an action's metadata (action.yml or action.yaml), parsed.
// Expression-valued fields hold the source text, unevaluated.
type Action struct {
	// Name and Description are name: and description:.
	Name, Description string
	// Inputs are inputs:, by id as written; InputIDs lists them in file
	// order.
	Inputs   map[string]ActionInput
	InputIDs []string
	// Outputs are outputs:, by id; OutputIDs lists them in file order.
	Outputs   map[string]ActionOutput
	OutputIDs []string
	// Runs is runs:.
	Runs ActionRuns
}

// ActionInput is one of an action's inputs:.
type ActionInput struct {
	Description string
	// Required is required: as written ("true", "false" or "").
	Required string
	// Default is default:, maybe an expression; HasDefault says whether
	// it was given.
	Default    string
	HasDefault bool
}

// ActionOutput is one of an action's outputs:. Value is value:, set for a
// composite action (usually ${{ steps.<id>.outputs.<name> }}).
type ActionOutput struct {
	Description, Value string
}

// ActionRuns is an action's runs:. Using is lower-cased: "composite",
// "docker", "node12", "node16", "node20", "node24". The fields of the
// other kinds are kept for the messages that refuse them.
type ActionRuns struct {
	Using string
	// Steps are a composite action's steps.
	Steps []Step
	// Main, Pre, Post, PreIf and PostIf are a JavaScript action's.
	Main, Pre, Post, PreIf, PostIf string
	// Image, Entrypoint, PreEntrypoint, PostEntrypoint, Args and Env
	// are a Docker action's.
	Image, Entrypoint             string
	PreEntrypoint, PostEntrypoint string
	Args                          []string
	Env                           map[string]string
}

var (
	actionKeys       = []string{"name", "author", "description", "inputs", "outputs", "runs", "branding"}
	actionInputKeys  = []string{"description", "required", "default", "deprecationMessage"}
	actionOutputKeys = []string{"description", "value"}
	actionRunsKeys   = []string{"using", "steps", "main", "pre", "post", "pre-if", "post-if",
		"image", "entrypoint", "args", "env", "pre-entrypoint", "post-entrypoint"}
	actionUsing = []string{"composite", "docker", "node12", "node16", "node20", "node24"}
)

// ParseAction parses the action metadata file data, named file in errors
// (as "file:line: field: message", a [*ParseError]). Every key must belong
// to GitHub's metadata schema; runs.using must be one of composite,
// docker, node12, node16, node20 and node24; a composite action needs
// runs.steps, each run: step with a shell:, a Docker action runs.image and
// a JavaScript action runs.main, as on GitHub.
func ParseAction(file string, data []byte) (*Action, error) {
	a, err := parseAction(data)
	var pe *ParseError
	if errors.As(err, &pe) {
		pe.File = file
		if pe.Line == 0 {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
	}
	return a, err
}

func parseAction(data []byte) (*Action, error) {
	if len(data) > MaxActionBytes {
		return nil, &ParseError{Msg: fmt.Sprintf("action metadata is %d bytes, more than the %d allowed; shorten it", len(data), MaxActionBytes)}
	}
	root, _, serr := strictyaml.Parse(data)
	if serr != nil {
		return nil, parseError(serr)
	}
	if root == nil {
		return nil, &ParseError{Msg: "action metadata is empty; it needs at least runs: with using:"}
	}
	if strictyaml.Expanded(root, maxNodes) > maxNodes {
		return nil, &ParseError{Msg: fmt.Sprintf("action metadata expands to more than %d YAML nodes (through aliases); remove the aliases that repeat large parts", maxNodes)}
	}
	if root.Kind != yaml.MappingNode {
		return nil, want(root, "", "a mapping with runs:")
	}
	a := &Action{Inputs: map[string]ActionInput{}, Outputs: map[string]ActionOutput{}}
	var runs *yaml.Node
	err := walk(root, "", "", actionKeys, func(p strictyaml.Pair, kp string) (err error) {
		switch v := p.Value; p.Name {
		case "name":
			a.Name, err = scalar(v, kp)
		case "description":
			a.Description, err = scalar(v, kp)
		case "inputs":
			err = parseActionInputs(a, v, kp)
		case "outputs":
			err = parseActionOutputs(a, v, kp)
		case "runs":
			runs = v
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if runs == nil {
		return nil, perr(root, "runs", "missing; an action needs runs: with using: (composite, docker or node20)")
	}
	if a.Runs, err = parseActionRuns(runs); err != nil {
		return nil, err
	}
	return a, nil
}

func parseActionInputs(a *Action, n *yaml.Node, path string) error {
	return walk(n, path, "a mapping of input ids to their description, required and default", nil, func(p strictyaml.Pair, kp string) error {
		in := ActionInput{}
		err := walk(p.Value, kp, "a mapping with description:, required: and default:", actionInputKeys, func(f strictyaml.Pair, fp string) (err error) {
			switch f.Name {
			case "description":
				in.Description, err = scalar(f.Value, fp)
			case "required":
				in.Required, err = scalar(f.Value, fp)
			case "default":
				in.Default, err = scalar(f.Value, fp)
				in.HasDefault = true
			case "deprecationMessage":
				_, err = scalar(f.Value, fp)
			}
			return err
		})
		if err != nil {
			return err
		}
		a.Inputs[p.Name] = in
		a.InputIDs = append(a.InputIDs, p.Name)
		return nil
	})
}

func parseActionOutputs(a *Action, n *yaml.Node, path string) error {
	return walk(n, path, "a mapping of output ids to their description and value", nil, func(p strictyaml.Pair, kp string) error {
		out := ActionOutput{}
		err := walk(p.Value, kp, "a mapping with description: and value:", actionOutputKeys, func(f strictyaml.Pair, fp string) (err error) {
			switch f.Name {
			case "description":
				out.Description, err = scalar(f.Value, fp)
			case "value":
				out.Value, err = scalar(f.Value, fp)
			}
			return err
		})
		if err != nil {
			return err
		}
		a.Outputs[p.Name] = out
		a.OutputIDs = append(a.OutputIDs, p.Name)
		return nil
	})
}

func parseActionRuns(n *yaml.Node) (ActionRuns, error) {
	var r ActionRuns
	var steps, usingNode *yaml.Node
	err := walk(n, "runs", "a mapping with using:", actionRunsKeys, func(p strictyaml.Pair, kp string) (err error) {
		v := p.Value
		switch p.Name {
		case "using":
			r.Using, err = scalar(v, kp)
			r.Using, usingNode = strings.ToLower(strings.TrimSpace(r.Using)), v
		case "steps":
			steps = v
		case "main":
			r.Main, err = scalar(v, kp)
		case "pre":
			r.Pre, err = scalar(v, kp)
		case "post":
			r.Post, err = scalar(v, kp)
		case "pre-if":
			r.PreIf, err = scalar(v, kp)
		case "post-if":
			r.PostIf, err = scalar(v, kp)
		case "image":
			r.Image, err = scalar(v, kp)
		case "entrypoint":
			r.Entrypoint, err = scalar(v, kp)
		case "args":
			if v.Kind == yaml.ScalarNode && !strictyaml.IsNull(v) {
				// GitHub's schema wants a list: a string would be one
				// argument, spaces and all, which is rarely what was meant.
				return want(v, kp, "a list of strings, one argument each (args: [\"-c\", \"echo hi\"])")
			}
			r.Args, err = stringList(v, kp)
		case "env":
			r.Env, err = stringMap(v, kp)
		case "pre-entrypoint":
			r.PreEntrypoint, err = scalar(v, kp)
		case "post-entrypoint":
			r.PostEntrypoint, err = scalar(v, kp)
		}
		return err
	})
	if err != nil {
		return r, err
	}
	if err := checkActionRuns(&r, n, usingNode, steps); err != nil {
		return r, err
	}
	if steps != nil {
		if r.Steps, err = parseCompositeSteps(steps); err != nil {
			return r, err
		}
	}
	return r, nil
}

// checkActionRuns checks that runs: (the node n, its using: and steps:
// nodes given) has what its kind of action needs, and nothing of another.
func checkActionRuns(r *ActionRuns, n, usingNode, steps *yaml.Node) error {
	switch {
	case usingNode == nil:
		return perr(n, "runs.using", "missing; write using: composite, docker or node20")
	case !slices.Contains(actionUsing, r.Using):
		return perr(usingNode, "runs.using", "%q is not one of %s", r.Using, strings.Join(actionUsing, ", "))
	case r.Using == "composite" && steps == nil:
		return perr(n, "runs.steps", "missing; a composite action needs steps:")
	case r.Using != "composite" && steps != nil:
		return perr(steps, "runs.steps", "only applies to using: composite; this action uses %s", r.Using)
	case r.Using == "docker" && strings.TrimSpace(r.Image) == "":
		return perr(n, "runs.image", "missing; a Docker action names its image (image: docker://name:tag) or its Dockerfile (image: Dockerfile)")
	case strings.HasPrefix(r.Using, "node") && strings.TrimSpace(r.Main) == "":
		return perr(n, "runs.main", "missing; a JavaScript action needs main: (the script to run, such as dist/index.js)")
	}
	return nil
}

// parseCompositeSteps parses runs.steps: workflow steps, each run: step
// with a shell: (GitHub has no default shell in a composite action).
func parseCompositeSteps(n *yaml.Node) ([]Step, error) {
	if n.Kind == yaml.SequenceNode && len(n.Content) == 0 {
		return nil, perr(n, "runs.steps", "a composite action needs at least one step")
	}
	steps, err := parseSteps(n)
	var pe *ParseError
	if errors.As(err, &pe) {
		pe.Path = "runs." + pe.Path
	}
	if err != nil {
		return nil, err
	}
	for i, s := range steps {
		if s.Run != "" && strings.TrimSpace(s.Shell) == "" {
			return nil, perr(strictyaml.Resolve(n.Content[i]), fmt.Sprintf("runs.steps[%d].shell", i), "missing; a run: step of a composite action needs shell: (bash, sh, python or a {0} template)")
		}
	}
	return steps, nil
}
