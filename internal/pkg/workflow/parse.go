package workflow

import (
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/forgeload/forgeload/internal/pkg/suggest"
)

// MaxPayloadBytes is the largest workflow payload Parse accepts.
const MaxPayloadBytes = 4 << 20

// ParseError is a workflow that does not follow the schema. Line is the
// 1-based YAML line, or 0 when the error is about the whole document; Path
// names the field, e.g. "steps[2].with".
type ParseError struct {
	// Line is the 1-based line of the offending YAML node, or 0.
	Line int
	// Path is the field, such as "jobs.perf.runs-on" or "steps[2].with",
	// or "" for the whole workflow.
	Path string
	// Msg says what is wrong and how to fix it.
	Msg string
}

// Error renders the error as "workflow line 12: steps[2]: message".
func (e *ParseError) Error() string {
	var b strings.Builder
	if e.Line > 0 {
		fmt.Fprintf(&b, "workflow line %d: ", e.Line)
	}
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

func perr(n *yaml.Node, path, format string, args ...any) error {
	line := 0
	if n != nil {
		line = n.Line
	}
	return &ParseError{Line: line, Path: path, Msg: fmt.Sprintf(format, args...)}
}

// Keys of the GitHub Actions workflow schema. Every key in these sets is
// accepted, even those forgeload does not act on.
var (
	topKeys = keySet("name", "run-name", "on", "permissions", "env", "defaults", "concurrency", "jobs")
	jobKeys = keySet("name", "needs", "runs-on", "permissions", "environment", "concurrency", "outputs",
		"env", "defaults", "if", "steps", "timeout-minutes", "strategy", "continue-on-error",
		"container", "services", "uses", "with", "secrets", "snapshot")
	stepKeys     = keySet("id", "if", "name", "uses", "run", "shell", "working-directory", "with", "env", "continue-on-error", "timeout-minutes")
	defaultsKeys = keySet("run")
	runDefKeys   = keySet("shell", "working-directory")
	strategyKeys = keySet("matrix", "fail-fast", "max-parallel")
	runsOnKeys   = keySet("group", "labels")
)

var (
	stepIDRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)
	jobIDRe  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)
)

func keySet(keys ...string) []string { sort.Strings(keys); return keys }

func known(set []string, k string) bool {
	i := sort.SearchStrings(set, k)
	return i < len(set) && set[i] == k
}

// Parse parses a forge task's workflow_payload: a YAML workflow with exactly
// one job. Every key must belong to the GitHub Actions schema; errors are
// [*ParseError] values naming the line and the field. services: and
// container: are rejected as not supported yet, as is a job that calls a
// reusable workflow.
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
	if len(payload) > MaxPayloadBytes {
		return nil, &ParseError{Msg: fmt.Sprintf("workflow is %d bytes, more than the %d allowed; shorten it", len(payload), MaxPayloadBytes)}
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(payload, &doc); err != nil {
		return nil, fmt.Errorf("parse workflow yaml: %w", err)
	}
	if n := countNodes(&doc, map[*yaml.Node]int{}); n > maxNodes {
		return nil, &ParseError{Msg: fmt.Sprintf("workflow expands to more than %d YAML nodes (through aliases); remove the aliases that repeat large parts", maxNodes)}
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return nil, &ParseError{Msg: "workflow is empty; a forge task must carry a workflow with one job"}
	}
	root := resolve(doc.Content[0])
	if root.Kind != yaml.MappingNode {
		return nil, perr(root, "", "workflow must be a mapping with a jobs: key, got %s", kindName(root))
	}
	pairs, err := mapPairs(root, "")
	if err != nil {
		return nil, err
	}
	base := Workflow{}
	var jobs *yaml.Node
	var jobsKey *yaml.Node
	for _, p := range pairs {
		k, v := p.key.Value, p.val
		if !known(topKeys, k) {
			return nil, unknownKey(p.key, "", k, topKeys)
		}
		switch k {
		case "name":
			if base.Name, err = scalar(v, "name"); err != nil {
				return nil, err
			}
		case "run-name":
			if base.RunName, err = scalar(v, "run-name"); err != nil {
				return nil, err
			}
		case "env":
			if base.Env, err = stringMap(v, "env"); err != nil {
				return nil, err
			}
		case "defaults":
			if base.Defaults, err = parseDefaults(v, "defaults"); err != nil {
				return nil, err
			}
		case "jobs":
			jobs, jobsKey = v, p.key
		}
	}
	if jobs == nil {
		return nil, &ParseError{Msg: "workflow has no jobs: key; a forge task must carry exactly one job"}
	}
	if jobs.Kind != yaml.MappingNode {
		if isNull(jobs) {
			return nil, perr(jobsKey, "jobs", "workflow has no jobs; a forge task must carry exactly one")
		}
		return nil, perr(jobs, "jobs", "must be a mapping of job ids to jobs, got %s", kindName(jobs))
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
			ids[i] = p.key.Value
		}
		sort.Strings(ids)
		return nil, &ParseError{Msg: fmt.Sprintf("workflow has %d jobs (%s); a forge task must carry exactly one", len(ids), strings.Join(ids, ", "))}
	}
	if len(jobPairs) == 0 {
		return nil, perr(jobsKey, "jobs", "workflow has no jobs; add one under jobs:")
	}
	out := make([]*Workflow, 0, len(jobPairs))
	for _, p := range jobPairs {
		id := p.key.Value
		if !jobIDRe.MatchString(id) {
			return nil, perr(p.key, "jobs", "job id %q must start with a letter or _ and contain only letters, digits, - and _", id)
		}
		job, err := parseJob(p.val, "jobs."+id)
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

func parseJob(n *yaml.Node, path string) (*Job, error) {
	if n.Kind != yaml.MappingNode {
		return nil, perr(n, path, "a job must be a mapping with runs-on: and steps:, got %s", kindName(n))
	}
	pairs, err := mapPairs(n, path)
	if err != nil {
		return nil, err
	}
	job := &Job{}
	var stepsNode *yaml.Node
	for _, p := range pairs {
		k, v := p.key.Value, p.val
		kp := path + "." + k
		if !known(jobKeys, k) {
			return nil, unknownKey(p.key, path, k, jobKeys)
		}
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
		case "services", "container", "uses", "with", "secrets":
			// Serialisers may write these keys with empty values; only a
			// real value asks for something forgeload cannot do.
			if !isEmpty(v) {
				err = unsupportedJobKey(p.key, kp, k)
			}
		}
		if err != nil {
			return nil, err
		}
	}
	if stepsNode == nil {
		return nil, perr(n, path, "a job needs steps:")
	}
	if job.Steps, err = parseSteps(stepsNode); err != nil {
		return nil, err
	}
	return job, nil
}

func unsupportedJobKey(key *yaml.Node, kp, k string) error {
	switch k {
	case "services":
		return perr(key, kp, "services are not supported yet; start the service from a run: step or point the test at an existing host")
	case "container":
		return perr(key, kp, "job containers are not supported yet; forgeload runs steps on the host, so remove container:")
	case "uses":
		return perr(key, kp, "calling a reusable workflow is not supported yet; copy its steps into this job")
	default:
		return perr(key, kp, "only applies to a job that calls a reusable workflow with uses:, which forgeload does not support; remove it")
	}
}

// isEmpty reports whether n is null, "", or an empty mapping or list.
func isEmpty(n *yaml.Node) bool {
	switch n.Kind {
	case yaml.ScalarNode:
		return isNull(n) || n.Value == ""
	case yaml.MappingNode, yaml.SequenceNode:
		return len(n.Content) == 0
	}
	return false
}

func parseSteps(n *yaml.Node) ([]Step, error) {
	if n.Kind != yaml.SequenceNode {
		return nil, perr(n, "steps", "must be a list of steps, got %s", kindName(n))
	}
	if len(n.Content) == 0 {
		return nil, perr(n, "steps", "a job needs at least one step")
	}
	steps := make([]Step, 0, len(n.Content))
	ids := map[string]int{}
	for i, sn := range n.Content {
		sn = resolve(sn)
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

func parseStep(n *yaml.Node, i int) (Step, error) {
	path := fmt.Sprintf("steps[%d]", i)
	s := Step{Index: i}
	if n.Kind != yaml.MappingNode {
		return s, perr(n, path, "a step must be a mapping with run: or uses:, got %s", kindName(n))
	}
	pairs, err := mapPairs(n, path)
	if err != nil {
		return s, err
	}
	var shellKey, wdKey, withKey *yaml.Node
	for _, p := range pairs {
		k, v := p.key.Value, p.val
		kp := path + "." + k
		if !known(stepKeys, k) {
			return s, unknownKey(p.key, path, k, stepKeys)
		}
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
				shellKey = p.key
			}
		case "working-directory":
			if s.WorkingDirectory, err = scalar(v, kp); s.WorkingDirectory != "" {
				wdKey = p.key
			}
		case "env":
			s.Env, err = stringMap(v, kp)
		case "with":
			if s.With, err = stringMap(v, kp); len(s.With) > 0 {
				withKey = p.key
			}
		case "continue-on-error":
			s.ContinueOnError, err = boolOrExpr(v, kp)
		case "timeout-minutes":
			s.TimeoutMinutes, err = minutes(v, kp)
		}
		if err != nil {
			return s, err
		}
	}
	// An empty run: or uses: counts as absent, as serialisers may write one.
	hasRun, hasUses := strings.TrimSpace(s.Run) != "", s.Uses != ""
	switch {
	case hasRun && hasUses:
		return s, perr(n, path, "both run: and uses: are set; keep one")
	case !hasRun && !hasUses:
		return s, perr(n, path, "a step needs either run: or uses: (with a value)")
	case hasUses && shellKey != nil:
		return s, perr(shellKey, path+".shell", "only applies to run: steps; remove it from this uses: step")
	case hasUses && wdKey != nil:
		return s, perr(wdKey, path+".working-directory", "only applies to run: steps; remove it from this uses: step")
	case hasRun && withKey != nil:
		return s, perr(withKey, path+".with", "only applies to uses: steps; pass values to a run: step with env:")
	}
	if !hasRun {
		s.Run = ""
	}
	return s, nil
}

func parseRunsOn(n *yaml.Node, path string) ([]string, error) {
	if n.Kind != yaml.MappingNode {
		return stringList(n, path)
	}
	pairs, err := mapPairs(n, path)
	if err != nil {
		return nil, err
	}
	var labels []string
	for _, p := range pairs {
		if !known(runsOnKeys, p.key.Value) {
			return nil, unknownKey(p.key, path, p.key.Value, runsOnKeys)
		}
		if p.key.Value == "labels" {
			if labels, err = stringList(p.val, path+".labels"); err != nil {
				return nil, err
			}
		} else if _, err := scalar(p.val, path+".group"); err != nil {
			return nil, err
		}
	}
	return labels, nil
}

func parseDefaults(n *yaml.Node, path string) (Defaults, error) {
	var d Defaults
	if isNull(n) {
		return d, nil
	}
	if n.Kind != yaml.MappingNode {
		return d, perr(n, path, "must be a mapping with run:, got %s", kindName(n))
	}
	pairs, err := mapPairs(n, path)
	if err != nil {
		return d, err
	}
	for _, p := range pairs {
		if !known(defaultsKeys, p.key.Value) {
			return d, unknownKey(p.key, path, p.key.Value, defaultsKeys)
		}
		rp := path + ".run"
		if isNull(p.val) {
			continue
		}
		if p.val.Kind != yaml.MappingNode {
			return d, perr(p.val, rp, "must be a mapping with shell: or working-directory:, got %s", kindName(p.val))
		}
		rpairs, err := mapPairs(p.val, rp)
		if err != nil {
			return d, err
		}
		for _, rpr := range rpairs {
			k := rpr.key.Value
			if !known(runDefKeys, k) {
				return d, unknownKey(rpr.key, rp, k, runDefKeys)
			}
			v, err := scalar(rpr.val, rp+"."+k)
			if err != nil {
				return d, err
			}
			if k == "shell" {
				d.Shell = v
			} else {
				d.WorkingDirectory = v
			}
		}
	}
	return d, nil
}

func parseStrategy(n *yaml.Node, path string) (map[string]any, error) {
	if isNull(n) {
		return nil, nil
	}
	if n.Kind != yaml.MappingNode {
		return nil, perr(n, path, "must be a mapping with matrix:, got %s", kindName(n))
	}
	pairs, err := mapPairs(n, path)
	if err != nil {
		return nil, err
	}
	var matrix map[string]any
	for _, p := range pairs {
		k := p.key.Value
		if !known(strategyKeys, k) {
			return nil, unknownKey(p.key, path, k, strategyKeys)
		}
		if k != "matrix" {
			if _, err := scalar(p.val, path+"."+k); err != nil {
				return nil, err
			}
			continue
		}
		mp := path + ".matrix"
		if p.val.Kind != yaml.MappingNode {
			// An expression such as ${{ fromJSON(...) }}: the forge expands it.
			if _, err := scalar(p.val, mp); err != nil {
				return nil, err
			}
			continue
		}
		mpairs, err := mapPairs(p.val, mp)
		if err != nil {
			return nil, err
		}
		matrix = make(map[string]any, len(mpairs))
		for _, m := range mpairs {
			if m.key.Value == "include" || m.key.Value == "exclude" {
				continue
			}
			var v any
			if err := m.val.Decode(&v); err != nil {
				return nil, perr(m.val, mp+"."+m.key.Value, "cannot read the value: %v", err)
			}
			if l, ok := v.([]any); ok && len(l) == 1 {
				v = l[0]
			}
			matrix[m.key.Value] = v
		}
	}
	return matrix, nil
}

// YAML helpers.

// maxNodes bounds the size of a workflow with its aliases expanded, so that
// a few bytes of nested aliases cannot make parsing take unbounded time.
const maxNodes = 1 << 20

// countNodes returns the number of nodes under n with aliases expanded,
// stopping early once it passes maxNodes. A self-referencing alias counts as
// too many.
func countNodes(n *yaml.Node, memo map[*yaml.Node]int) int {
	if n.Kind == yaml.AliasNode {
		if n.Alias == nil {
			return 1
		}
		n = n.Alias
	}
	if c, ok := memo[n]; ok {
		return c
	}
	memo[n] = maxNodes + 1 // reached again while counting n: a cycle
	total := 1
	for _, c := range n.Content {
		if total += countNodes(c, memo); total > maxNodes {
			break
		}
	}
	memo[n] = total
	return total
}

type pair struct{ key, val *yaml.Node }

// resolve follows an alias to its anchor.
func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && n.Alias != nil && i < 8; i++ {
		n = n.Alias
	}
	return n
}

func mapPairs(n *yaml.Node, path string) ([]pair, error) {
	seen := make(map[string]int, len(n.Content)/2)
	out := make([]pair, 0, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := resolve(n.Content[i]), resolve(n.Content[i+1])
		if k.Kind != yaml.ScalarNode || k.ShortTag() == "!!merge" {
			return nil, perr(k, path, "keys must be plain strings (merge keys << are not supported)")
		}
		if line, dup := seen[k.Value]; dup {
			return nil, perr(k, joinPath(path, k.Value), "key is set twice (first on line %d); keep one", line)
		}
		seen[k.Value] = k.Line
		out = append(out, pair{k, v})
	}
	return out, nil
}

func joinPath(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

func unknownKey(k *yaml.Node, path, name string, set []string) error {
	msg := fmt.Sprintf("unknown key %q", name)
	if s := suggest.Closest(name, set, strings.ToLower); s != "" {
		msg += fmt.Sprintf("; did you mean %q?", s)
	}
	msg = withSep(msg) + " allowed: " + strings.Join(set, ", ")
	return perr(k, path, "%s", msg)
}

func isNull(n *yaml.Node) bool {
	return n == nil || (n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null")
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if isNull(n) {
			return "null"
		}
		return fmt.Sprintf("%q", n.Value)
	default:
		return "an empty document"
	}
}

// scalar renders a scalar node as GitHub renders it in a string context.
func scalar(n *yaml.Node, path string) (string, error) {
	if n.Kind != yaml.ScalarNode {
		return "", perr(n, path, "must be a string, number or boolean, got %s", kindName(n))
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
	if isNull(n) {
		return nil, nil
	}
	if n.Kind != yaml.MappingNode {
		return nil, perr(n, path, "must be a mapping of names to values, got %s", kindName(n))
	}
	pairs, err := mapPairs(n, path)
	if err != nil {
		return nil, err
	}
	m := make(map[string]string, len(pairs))
	for _, p := range pairs {
		v, err := scalar(p.val, path+"."+p.key.Value)
		if err != nil {
			return nil, err
		}
		m[p.key.Value] = v
	}
	return m, nil
}

func stringList(n *yaml.Node, path string) ([]string, error) {
	if n.Kind == yaml.ScalarNode {
		if isNull(n) {
			return nil, nil
		}
		v, err := scalar(n, path)
		return []string{v}, err
	}
	if n.Kind != yaml.SequenceNode {
		return nil, perr(n, path, "must be a string or a list of strings, got %s", kindName(n))
	}
	out := make([]string, 0, len(n.Content))
	for i, e := range n.Content {
		v, err := scalar(resolve(e), fmt.Sprintf("%s[%d]", path, i))
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
