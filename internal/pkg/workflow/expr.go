package workflow

import (
	"fmt"
	"math"
	"strings"

	"github.com/rhysd/actionlint"

	"github.com/forgeload/forgeload/internal/pkg/suggest"
)

// JobStatus is the status of the job so far, as the status functions
// success(), failure() and cancelled() and job.status see it.
type JobStatus string

// The job statuses. The zero value "" means [StatusSuccess].
const (
	// StatusSuccess means every step so far succeeded (or continued on error).
	StatusSuccess JobStatus = "success"
	// StatusFailure means a step failed.
	StatusFailure JobStatus = "failure"
	// StatusCancelled means the job was cancelled.
	StatusCancelled JobStatus = "cancelled"
	// StatusSkipped is a status only a job-level if: sees (see
	// [NeedsStatus]): a needed job was skipped, none failed or was
	// cancelled. success(), failure() and cancelled() are all false, so
	// only an if: with always() or a needs.<id>.result test runs the job.
	StatusSkipped JobStatus = "skipped"
)

// StepResult is what the steps context holds for one finished step with an
// id: steps.<id>.outputs.<name>, steps.<id>.outcome and
// steps.<id>.conclusion.
type StepResult struct {
	// Outputs are the outputs the step set.
	Outputs map[string]string
	// Outcome is the result before continue-on-error is applied:
	// "success", "failure", "cancelled" or "skipped".
	Outcome string
	// Conclusion is the result after continue-on-error is applied.
	Conclusion string
}

func (r StepResult) object() map[string]any {
	return map[string]any{"outputs": orEmpty(r.Outputs), "outcome": r.Outcome, "conclusion": r.Conclusion}
}

// NeedResult is what the needs context holds for one job this job depends
// on: needs.<job>.outputs.<name> and needs.<job>.result.
type NeedResult struct {
	// Outputs are the job's outputs.
	Outputs map[string]string
	// Result is "success", "failure", "cancelled" or "skipped".
	Result string
}

func (r NeedResult) object() map[string]any {
	return map[string]any{"outputs": orEmpty(r.Outputs), "result": r.Result}
}

// Context holds the values expressions can read. Nil maps read as empty
// objects. Property access is case-insensitive, as on GitHub. The zero
// value is a usable, empty context whose status is success. A Context is
// safe for concurrent use as long as nobody modifies its maps meanwhile.
type Context struct {
	// Github is the github context; gitea and forgejo are aliases of it.
	// See [GithubContext].
	Github map[string]any
	// Env is the env context: the environment of the current step.
	Env map[string]string
	// Vars is the vars context: configuration variables.
	Vars map[string]string
	// Secrets is the secrets context.
	Secrets map[string]string
	// Steps maps step ids to the results of finished steps.
	Steps map[string]StepResult
	// Needs maps the ids of the jobs this job needs to their results.
	// See [NeedsFromTask].
	Needs map[string]NeedResult
	// Runner is the runner context (os, arch, name, temp, tool_cache).
	Runner map[string]any
	// Matrix is the matrix context; see [Job.Matrix].
	Matrix map[string]any
	// Inputs is the inputs context.
	Inputs map[string]any
	// Strategy is the strategy context (fail-fast, job-index, job-total,
	// max-parallel).
	Strategy map[string]any
	// Jobs is the jobs context, which only the outputs of a reusable
	// workflow (on.workflow_call.outputs) read: its jobs' results and
	// outputs, by job id.
	Jobs map[string]NeedResult
	// Job holds the job context's keys besides status: services (each
	// service's id, network and ports) and container (id, network).
	Job map[string]any
	// Status is the job status so far; "" means success. It drives
	// success(), failure(), cancelled() and job.status.
	Status JobStatus
	// HashFiles computes hashFiles() for its arguments' patterns (see
	// package hashfiles); nil where no workspace exists yet (a job-level
	// if:), where hashFiles() is an error.
	HashFiles func(patterns []string) (string, error)
}

// MaxExprBytes is the longest expression Eval accepts.
const MaxExprBytes = 16 << 10

// MaxResultBytes bounds every string an expression builds (format, join,
// toJSON) and the text that ${{ }} expressions put into one field, so that
// a few hundred bytes of nested format() calls cannot expand to gigabytes.
// GitHub bounds expression results in the same spirit.
const MaxResultBytes = 1 << 20

// errTooLarge is the message for a result over MaxResultBytes.
func errTooLarge(p *parsed, what string, n int) error {
	return fmt.Errorf("%s in %s would build a string of %d bytes or more, over the %d-byte (1 MiB) limit on expression results; build less text in expressions (large data belongs in files)", what, show(p.src), n, MaxResultBytes)
}

// maxNesting bounds the nesting of (), [] and ! in an expression, so that
// no input can exhaust the stack.
const maxNesting = 100

type fnSpec struct {
	name     string
	min, max int // max < 0: unbounded
}

// functions lists the built-in functions in the order error messages show
// them.
var functions = [...]fnSpec{
	{"contains", 2, 2}, {"startsWith", 2, 2}, {"endsWith", 2, 2}, {"format", 1, -1},
	{"join", 1, 2}, {"toJSON", 1, 1}, {"fromJSON", 1, 1},
	{"success", 0, 0}, {"failure", 0, 0}, {"always", 0, 0}, {"cancelled", 0, 0},
	{"hashFiles", 1, -1},
}

// contexts lists the context names expressions may use.
var contexts = [...]string{"github", "gitea", "forgejo", "env", "vars", "secrets", "steps", "needs", "job", "runner", "matrix", "inputs", "strategy", "jobs"}

func lookupFunc(name string) (fnSpec, bool) {
	for _, f := range functions {
		if strings.EqualFold(f.name, name) {
			return f, true
		}
	}
	return fnSpec{}, false
}

func isStatusFunc(name string) bool {
	switch strings.ToLower(name) {
	case "success", "failure", "always", "cancelled":
		return true
	}
	return false
}

// parsed is a checked expression.
type parsed struct {
	src       string
	root      actionlint.ExprNode
	hasStatus bool
}

// show renders an expression for an error message.
func show(src string) string {
	src = strings.TrimSpace(src)
	if len(src) > 120 {
		src = src[:120] + "…"
	}
	return "${{ " + src + " }}"
}

// parseExpr parses and checks an expression (without ${{ }}): its syntax,
// and that every function and context exists.
func parseExpr(src string) (p *parsed, err error) {
	if strings.TrimSpace(src) == "" {
		return nil, fmt.Errorf("empty expression ${{ }}; write an expression between the braces")
	}
	if len(src) > MaxExprBytes {
		return nil, fmt.Errorf("expression %s is %d bytes, more than the %d allowed; shorten it", show(src), len(src), MaxExprBytes)
	}
	if d := nesting(src); d > maxNesting {
		return nil, fmt.Errorf("expression %s nests (), [] or ! %d deep, more than the %d allowed; simplify it", show(src), d, maxNesting)
	}
	defer func() {
		// The parser is a third-party library; never let it take the job down.
		if r := recover(); r != nil {
			p, err = nil, fmt.Errorf("invalid expression %s: the parser failed: %v", show(src), r)
		}
	}()
	lex := actionlint.NewExprLexer(src + "}}")
	root, perr := actionlint.NewExprParser().Parse(lex)
	if perr != nil {
		return nil, fmt.Errorf("invalid expression %s: column %d: %s", show(src), perr.Column, perr.Message)
	}
	if lex.Offset() != len(src)+2 {
		return nil, fmt.Errorf("invalid expression %s: unexpected }} at byte %d; an expression ends at the first }} outside a string", show(src), lex.Offset()-2)
	}
	p = &parsed{src: src, root: root}
	actionlint.VisitExprNode(root, func(n, _ actionlint.ExprNode, entering bool) {
		if !entering || err != nil {
			return
		}
		switch n := n.(type) {
		case *actionlint.VariableNode:
			err = checkContext(n.Name, src)
		case *actionlint.FuncCallNode:
			err = checkFunc(n, src)
			if isStatusFunc(n.Callee) {
				p.hasStatus = true
			}
		}
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}

func checkContext(name, src string) error {
	if name == "infinity" || name == "nan" { // the number literals Infinity and NaN
		return nil
	}
	for _, c := range contexts {
		if c == name {
			return nil
		}
	}
	msg := fmt.Sprintf("unknown context %q in %s", name, show(src))
	if s := suggest.Closest(name, contexts[:], strings.ToLower); s != "" {
		msg += fmt.Sprintf("; did you mean %q?", s)
	}
	return fmt.Errorf("%s known: %s", withSep(msg), strings.Join(contexts[:], ", "))
}

func checkFunc(n *actionlint.FuncCallNode, src string) error {
	f, ok := lookupFunc(n.Callee)
	if !ok {
		names := make([]string, len(functions))
		for i, f := range functions {
			names[i] = f.name
		}
		msg := fmt.Sprintf("unknown function %q in %s", n.Callee, show(src))
		if s := suggest.Closest(n.Callee, names, strings.ToLower); s != "" {
			msg += fmt.Sprintf("; did you mean %q?", s)
		}
		return fmt.Errorf("%s known: %s", withSep(msg), strings.Join(names, ", "))
	}
	if got := len(n.Args); got < f.min || (f.max >= 0 && got > f.max) {
		want := fmt.Sprintf("%d", f.min)
		switch {
		case f.max < 0:
			want = fmt.Sprintf("at least %d", f.min)
		case f.max != f.min:
			want = fmt.Sprintf("%d or %d", f.min, f.max)
		}
		return fmt.Errorf("%s takes %s argument(s), got %d in %s", f.name, want, got, show(src))
	}
	return nil
}

// nesting returns the deepest nesting of (, [ and ! outside string literals.
func nesting(src string) int {
	depth, bangs, deepest := 0, 0, 0
	inStr := false
	for i := 0; i < len(src); i++ {
		c := src[i]
		if inStr {
			if c == '\'' {
				inStr = false
			}
			continue
		}
		switch c {
		case '\'':
			inStr = true
		case '(', '[':
			depth++
		case ')', ']':
			depth--
			bangs = 0
		case '!':
			if i+1 < len(src) && src[i+1] == '=' {
				i++
				continue
			}
			bangs++
		case ' ', '\t', '\n', '\r':
		default:
			bangs = 0
		}
		deepest = max(deepest, depth+bangs)
	}
	return deepest
}

// exprEnd returns the index of the "}}" that ends the expression starting at
// s[0], skipping string literals, or -1.
func exprEnd(s string) int {
	inStr := false
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\'':
			inStr = !inStr
		case !inStr && s[i] == '}' && i+1 < len(s) && s[i+1] == '}':
			return i
		}
	}
	return -1
}

// Eval evaluates one expression, written without ${{ }}, and returns its
// value: nil, bool, float64, string, []any or map[string]any (values nested
// inside arrays and objects are returned as the context holds them). Syntax
// errors, unknown contexts and unknown functions are reported before
// anything is evaluated, even in branches that would not run.
func (c *Context) Eval(expr string) (any, error) {
	p, err := parseExpr(expr)
	if err != nil {
		return nil, err
	}
	v, err := c.eval(p, p.root)
	if err != nil {
		return nil, err
	}
	return export(v), nil
}

// Interpolate replaces every ${{ }} in s with the value of its expression,
// rendered as GitHub renders it: null as "", numbers without a trailing .0,
// booleans as true/false, and arrays and objects as JSON. Text outside ${{ }}
// is copied as is.
func (c *Context) Interpolate(s string) (string, error) {
	if !strings.Contains(s, "${{") {
		return s, nil
	}
	var b strings.Builder
	produced := 0 // bytes the expressions put in, bounded by MaxResultBytes
	for {
		i := strings.Index(s, "${{")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		b.WriteString(s[:i])
		rest := s[i+3:]
		end := exprEnd(rest)
		if end < 0 {
			return "", fmt.Errorf("unterminated %s: close the expression with }}", show(firstLine(rest)))
		}
		p := &parsed{src: rest[:end]}
		v, err := c.Eval(rest[:end])
		if err != nil {
			return "", err
		}
		if err := checkRender(p, v, MaxResultBytes-produced); err != nil {
			return "", err
		}
		out := render(v)
		produced += len(out)
		if produced > MaxResultBytes {
			return "", fmt.Errorf("the ${{ }} expressions of this field produce %d bytes or more, over the %d-byte (1 MiB) limit on expression results; build less text in expressions (large data belongs in files)", produced, MaxResultBytes)
		}
		b.WriteString(out)
		s = rest[end+2:]
	}
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// EvalIf evaluates an if: condition, written with or without ${{ }}. An
// empty condition means success(). A condition that calls none of success(),
// failure(), always() and cancelled() is evaluated as success() && (cond), so
// it is false once a step has failed. A condition that mixes ${{ }} with
// other text is interpolated and, as on GitHub, is true when the result is
// not empty.
func (c *Context) EvalIf(cond string) (bool, error) {
	cond = strings.TrimSpace(cond)
	if cond == "" {
		return c.success(), nil
	}
	if strings.Contains(cond, "${{") {
		inner, whole := strings.CutPrefix(cond, "${{")
		end := exprEnd(inner)
		whole = whole && end >= 0 && strings.TrimSpace(inner[end+2:]) == ""
		if !whole {
			s, err := c.Interpolate(cond)
			if err != nil {
				return false, err
			}
			return c.success() && s != "", nil
		}
		cond = inner[:end]
	}
	p, err := parseExpr(cond)
	if err != nil {
		return false, err
	}
	if !p.hasStatus && !c.success() {
		return false, nil
	}
	v, err := c.eval(p, p.root)
	if err != nil {
		return false, err
	}
	return truthy(v), nil
}

func (c *Context) success() bool {
	return c.Status == "" || c.Status == StatusSuccess
}

func (c *Context) status() JobStatus {
	if c.Status == "" {
		return StatusSuccess
	}
	return c.Status
}

// export converts an internal value to one of the documented result types.
func export(v any) any {
	switch x := v.(type) {
	case filtered:
		return []any(x)
	case map[string]string:
		out := make(map[string]any, len(x))
		for k, s := range x {
			out[k] = s
		}
		return out
	}
	return v
}

func orEmpty[V any](m map[string]V) map[string]V {
	if m == nil {
		return map[string]V{}
	}
	return m
}

func (c *Context) root(name string) any {
	switch name {
	case "github", "gitea", "forgejo":
		return orEmpty(c.Github)
	case "env":
		return orEmpty(c.Env)
	case "vars":
		return orEmpty(c.Vars)
	case "secrets":
		return orEmpty(c.Secrets)
	case "steps":
		m := make(map[string]any, len(c.Steps))
		for k, r := range c.Steps {
			m[k] = r
		}
		return m
	case "needs":
		m := make(map[string]any, len(c.Needs))
		for k, r := range c.Needs {
			m[k] = r
		}
		return m
	case "jobs":
		m := make(map[string]any, len(c.Jobs))
		for k, r := range c.Jobs {
			m[k] = r
		}
		return m
	case "job":
		m := make(map[string]any, len(c.Job)+1)
		for k, v := range c.Job {
			m[k] = v
		}
		m["status"] = string(c.status())
		return m
	case "runner":
		return orEmpty(c.Runner)
	case "matrix":
		return orEmpty(c.Matrix)
	case "inputs":
		return orEmpty(c.Inputs)
	case "strategy":
		return orEmpty(c.Strategy)
	case "infinity":
		return math.Inf(1)
	case "nan":
		return math.NaN()
	}
	return nil
}

// withSep ends a message with "?" (after a suggestion) or ";".
func withSep(msg string) string {
	if strings.HasSuffix(msg, "?") {
		return msg
	}
	return msg + ";"
}
