package workflow

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/rhysd/actionlint"
)

// eval evaluates a checked expression tree. Recursion depth is bounded by
// the expression size limits enforced in parseExpr.
func (c *Context) eval(p *parsed, n actionlint.ExprNode) (any, error) {
	switch n := n.(type) {
	case *actionlint.NullNode:
		return nil, nil
	case *actionlint.BoolNode:
		return n.Value, nil
	case *actionlint.IntNode:
		return float64(n.Value), nil
	case *actionlint.FloatNode:
		return n.Value, nil
	case *actionlint.StringNode:
		return n.Value, nil
	case *actionlint.VariableNode:
		return c.root(n.Name), nil
	case *actionlint.ObjectDerefNode:
		return c.deref(p, n.Receiver, n.Property)
	case actionlint.ObjectDerefNode:
		return c.deref(p, n.Receiver, n.Property)
	case *actionlint.ArrayDerefNode:
		return c.star(p, n.Receiver)
	case actionlint.ArrayDerefNode:
		return c.star(p, n.Receiver)
	case *actionlint.IndexAccessNode:
		recv, err := c.eval(p, n.Operand)
		if err != nil {
			return nil, err
		}
		idx, err := c.eval(p, n.Index)
		if err != nil {
			return nil, err
		}
		return index(recv, idx), nil
	case *actionlint.NotOpNode:
		v, err := c.eval(p, n.Operand)
		if err != nil {
			return nil, err
		}
		return !truthy(v), nil
	case *actionlint.CompareOpNode:
		l, err := c.eval(p, n.Left)
		if err != nil {
			return nil, err
		}
		r, err := c.eval(p, n.Right)
		if err != nil {
			return nil, err
		}
		return compareOp(n.Kind, l, r), nil
	case *actionlint.LogicalOpNode:
		l, err := c.eval(p, n.Left)
		if err != nil {
			return nil, err
		}
		if truthy(l) == (n.Kind == actionlint.LogicalOpNodeKindOr) {
			return l, nil // short circuit: a falsy left of && or a truthy left of ||
		}
		return c.eval(p, n.Right)
	case *actionlint.FuncCallNode:
		args := make([]any, len(n.Args))
		for i, a := range n.Args {
			v, err := c.eval(p, a)
			if err != nil {
				return nil, err
			}
			args[i] = v
		}
		return c.call(p, n.Callee, args)
	}
	return nil, fmt.Errorf("cannot evaluate %s: unsupported syntax %T", show(p.src), n)
}

func compareOp(k actionlint.CompareOpNodeKind, l, r any) bool {
	switch k {
	case actionlint.CompareOpNodeKindEq:
		return looseEqual(l, r)
	case actionlint.CompareOpNodeKindNotEq:
		return !looseEqual(l, r)
	}
	c, ok := compare(l, r)
	if !ok {
		return false
	}
	switch k {
	case actionlint.CompareOpNodeKindLess:
		return c < 0
	case actionlint.CompareOpNodeKindLessEq:
		return c <= 0
	case actionlint.CompareOpNodeKindGreater:
		return c > 0
	case actionlint.CompareOpNodeKindGreaterEq:
		return c >= 0
	}
	return false
}

func (c *Context) deref(p *parsed, recvNode actionlint.ExprNode, prop string) (any, error) {
	recv, err := c.eval(p, recvNode)
	if err != nil {
		return nil, err
	}
	return property(recv, prop), nil
}

// property is a.b: a key of an object (case-insensitive), or, on the result
// of a * filter, that key of every element that has it.
func property(recv any, prop string) any {
	if f, ok := recv.(filtered); ok {
		out := filtered{}
		for _, e := range f {
			if kindOf(e) != kindObject {
				continue
			}
			if v := lookup(e, prop); v != nil {
				out = append(out, v)
			}
		}
		return out
	}
	return lookup(recv, prop)
}

func (c *Context) star(p *parsed, recvNode actionlint.ExprNode) (any, error) {
	recv, err := c.eval(p, recvNode)
	if err != nil {
		return nil, err
	}
	switch x := recv.(type) {
	case filtered:
		out := filtered{}
		for _, e := range x {
			out = append(out, elements(e)...)
		}
		return out, nil
	default:
		return filtered(elements(x)), nil
	}
}

// elements returns the elements of an array or the values of an object
// (ordered by key), or nothing.
func elements(v any) []any {
	switch x := v.(type) {
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = norm(e)
		}
		return out
	case filtered:
		return append([]any(nil), x...)
	case map[string]any:
		keys := sortedKeys(x)
		out := make([]any, len(keys))
		for i, k := range keys {
			out[i] = norm(x[k])
		}
		return out
	case map[string]string:
		keys := sortedKeys(x)
		out := make([]any, len(keys))
		for i, k := range keys {
			out[i] = x[k]
		}
		return out
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// index is a[i]: an array element by number, or an object key by string.
func index(recv, idx any) any {
	switch x := recv.(type) {
	case filtered:
		if kindOf(idx) == kindString {
			return property(x, idx.(string))
		}
		out := filtered{}
		for _, e := range x {
			if v := index(e, idx); v != nil && kindOf(e) == kindArray {
				out = append(out, v)
			}
		}
		return out
	case []any:
		f := toNumber(idx)
		if kindOf(idx) == kindString && strings.TrimSpace(idx.(string)) == "" {
			return nil
		}
		if math.IsNaN(f) || f != math.Trunc(f) || f < 0 || f >= float64(len(x)) {
			return nil
		}
		return norm(x[int(f)])
	case map[string]any, map[string]string:
		if k := kindOf(idx); k == kindArray || k == kindObject {
			return nil
		}
		return lookup(x, toString(idx))
	}
	return nil
}

func (c *Context) call(p *parsed, name string, args []any) (any, error) {
	f, _ := lookupFunc(name) // checked in parseExpr
	switch f.name {
	case "contains":
		if kindOf(args[0]) == kindArray {
			for _, e := range elements(args[0]) {
				if looseEqual(e, args[1]) {
					return true, nil
				}
			}
			return false, nil
		}
		return strings.Contains(strings.ToUpper(toString(args[0])), strings.ToUpper(toString(args[1]))), nil
	case "startsWith":
		return strings.HasPrefix(strings.ToUpper(toString(args[0])), strings.ToUpper(toString(args[1]))), nil
	case "endsWith":
		return strings.HasSuffix(strings.ToUpper(toString(args[0])), strings.ToUpper(toString(args[1]))), nil
	case "format":
		return format(p, toString(args[0]), args[1:])
	case "join":
		sep := ","
		if len(args) == 2 {
			sep = toString(args[1])
		}
		switch kindOf(args[0]) {
		case kindArray:
			els := elements(args[0])
			parts := make([]string, len(els))
			n := 0
			for i, e := range els {
				parts[i] = toString(e)
				if n += len(parts[i]) + len(sep); n > MaxResultBytes+len(sep) {
					return nil, errTooLarge(p, "join", n)
				}
			}
			return strings.Join(parts, sep), nil
		case kindObject:
			return "", nil
		default:
			return toString(args[0]), nil
		}
	case "toJSON":
		if err := checkRender(p, args[0], MaxResultBytes); err != nil {
			return nil, err
		}
		return toJSON(args[0]), nil
	case "fromJSON":
		s := strings.TrimSpace(toString(args[0]))
		if s == "" {
			return nil, fmt.Errorf("fromJSON in %s: the argument is empty, not JSON", show(p.src))
		}
		var v any
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			// The argument may be a secret: give a position, never its text.
			var se *json.SyntaxError
			if errors.As(err, &se) {
				return nil, fmt.Errorf("fromJSON in %s: the argument is not valid JSON (syntax error at byte %d of %d)", show(p.src), se.Offset, len(s))
			}
			return nil, fmt.Errorf("fromJSON in %s: the argument is not valid JSON", show(p.src))
		}
		return norm(v), nil
	case "success", "failure", "cancelled", "always":
		return c.statusFunc(f.name), nil
	case "hashFiles":
		return c.hashFiles(p, args)
	}
	return nil, fmt.Errorf("function %s in %s is not implemented", name, show(p.src))
}

// statusFunc implements the status functions.
func (c *Context) statusFunc(name string) bool {
	switch name {
	case "success":
		return c.success()
	case "failure":
		return c.Status == StatusFailure
	case "cancelled":
		return c.Status == StatusCancelled
	}
	return true // always
}

// hashFiles implements hashFiles() through c.HashFiles.
func (c *Context) hashFiles(p *parsed, args []any) (any, error) {
	if c.HashFiles == nil {
		return nil, fmt.Errorf("hashFiles in %s: there are no files to hash here; hashFiles() works in a step's fields (with:, env:, run:, if:) and in job outputs, once the job has a workspace", show(p.src))
	}
	pats := make([]string, len(args))
	for i, a := range args {
		pats[i] = toString(a)
	}
	return c.HashFiles(pats)
}

// format implements format(): {N} is replaced by argument N, {{ and }} are
// literal braces.
func format(p *parsed, f string, args []any) (string, error) {
	var b strings.Builder
	for i := 0; i < len(f); i++ {
		ch := f[i]
		switch {
		case ch == '{' && i+1 < len(f) && f[i+1] == '{':
			b.WriteByte('{')
			i++
		case ch == '}' && i+1 < len(f) && f[i+1] == '}':
			b.WriteByte('}')
			i++
		case ch == '{':
			end := strings.IndexByte(f[i:], '}')
			if end < 0 {
				return "", fmt.Errorf("format in %s: unclosed { at position %d; write {N} for argument N, or {{ for a literal brace", show(p.src), i)
			}
			n, err := strconv.Atoi(f[i+1 : i+end])
			if err != nil || n < 0 || f[i+1] == '+' || f[i+1] == '-' {
				// The format string may come from a secret: give positions, not text.
				return "", fmt.Errorf("format in %s: the { at position %d does not start a {N} placeholder; write {N} for argument N, or {{ for a literal brace", show(p.src), i)
			}
			if n >= len(args) {
				return "", fmt.Errorf("format in %s: {%d} refers to argument %d, but only %d argument(s) follow the format string", show(p.src), n, n, len(args))
			}
			arg := toString(args[n])
			if b.Len()+len(arg) > MaxResultBytes {
				return "", errTooLarge(p, "format", b.Len()+len(arg))
			}
			b.WriteString(arg)
			i += end
		case ch == '}':
			return "", fmt.Errorf("format in %s: lone } at position %d; write }} for a literal brace", show(p.src), i)
		default:
			b.WriteByte(ch)
		}
	}
	if b.Len() > MaxResultBytes {
		return "", errTooLarge(p, "format", b.Len())
	}
	return b.String(), nil
}

// checkRender fails when rendering v (as toJSON or into ${{ }} text) would
// take more than budget bytes. It measures before anything is built, so an
// object parsed from a large JSON string cannot expand through indentation.
func checkRender(p *parsed, v any, budget int) error {
	var n int
	switch x := v.(type) {
	case string:
		n = len(x)
	case []any, filtered, map[string]any, map[string]string:
		n = jsonSize(x, 0, budget+1)
	default:
		return nil
	}
	if n > budget {
		return errTooLarge(p, "the result", n)
	}
	return nil
}

// jsonSize estimates the length of v as indented JSON at depth, as toJSON
// writes it, counting escapes; it stops counting once past limit.
func jsonSize(v any, depth, limit int) int {
	if depth > maxJSONDepth {
		return 4
	}
	indent := 2*depth + 3 // newline, the indentation, a comma
	switch x := norm(v).(type) {
	case string:
		n := 2
		for i := 0; i < len(x); i++ {
			switch c := x[i]; {
			case c < 0x20:
				n += 6
			case c == '"' || c == '\\':
				n += 2
			default:
				n++
			}
		}
		return n
	case []any:
		n := 2
		for _, e := range x {
			if n += indent + 2 + jsonSize(e, depth+1, limit-n); n > limit {
				return n
			}
		}
		return n
	case filtered:
		return jsonSize([]any(x), depth, limit)
	case map[string]any:
		n := 2
		for k, e := range x {
			if n += indent + 2 + jsonSize(k, 0, limit) + 2 + jsonSize(e, depth+1, limit-n); n > limit {
				return n
			}
		}
		return n
	case map[string]string:
		n := 2
		for k, e := range x {
			if n += indent + 4 + jsonSize(k, 0, limit) + jsonSize(e, 0, limit); n > limit {
				return n
			}
		}
		return n
	default:
		return 24 // numbers, booleans, null
	}
}
