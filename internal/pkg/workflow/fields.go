package workflow

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// EvalBool evaluates a boolean field such as continue-on-error: "" is
// false, "true" and "false" are themselves, and anything else is
// interpolated as ${{ }} text or, failing that, evaluated as an
// expression, and its truthiness returned. Unlike [Context.EvalIf] there is
// no implicit success().
func (c *Context) EvalBool(field string) (bool, error) {
	field = strings.TrimSpace(field)
	switch field {
	case "", "false":
		return false, nil
	case "true":
		return true, nil
	}
	v, err := c.evalField(field)
	if err != nil {
		return false, err
	}
	return truthy(v), nil
}

// EvalMinutes evaluates a timeout-minutes field, a number or an expression
// giving one, into a duration. "" gives 0, meaning no timeout of its own.
// A value that is not a positive number is an error.
func (c *Context) EvalMinutes(field string) (time.Duration, error) {
	field = strings.TrimSpace(field)
	if field == "" {
		return 0, nil
	}
	v, err := c.evalField(field)
	if err != nil {
		return 0, err
	}
	m := toNumber(v)
	if math.IsNaN(m) || m <= 0 || m > math.MaxInt64/float64(time.Minute) {
		return 0, fmt.Errorf("timeout-minutes %q gives %q, not a positive number of minutes; write e.g. timeout-minutes: 10", field, render(v))
	}
	return time.Duration(m * float64(time.Minute)), nil
}

// evalField evaluates a field value: a single ${{ }} keeps its type, text
// with ${{ }} is interpolated, and bare text is parsed as a number or
// evaluated as an expression.
func (c *Context) evalField(field string) (any, error) {
	if inner, ok := strings.CutPrefix(field, "${{"); ok {
		if end := exprEnd(inner); end >= 0 && strings.TrimSpace(inner[end+2:]) == "" {
			return c.Eval(inner[:end])
		}
	}
	if strings.Contains(field, "${{") {
		return c.Interpolate(field)
	}
	if f, err := strconv.ParseFloat(field, 64); err == nil {
		return f, nil
	}
	return c.Eval(field)
}

// InterpolateMap returns a copy of m with [Context.Interpolate] applied to
// every value, for env: and with: maps. Keys are handled in sorted order;
// an error names the key. A nil map gives a nil map.
func (c *Context) InterpolateMap(m map[string]string) (map[string]string, error) {
	if m == nil {
		return nil, nil
	}
	out := make(map[string]string, len(m))
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v, err := c.Interpolate(m[k])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		out[k] = v
	}
	return out, nil
}

// InputsContext returns the inputs context for a run, built from
// github.event.inputs, which the forge fills for workflow_dispatch and
// workflow_call. The forge sends every workflow_dispatch input as a string;
// as on GitHub, an input whose declared type (types, from
// [Workflow.InputTypes]) is boolean becomes true or false, and one declared
// number becomes a number, so that if: inputs.dry_run is false for
// "false". A value that does not read as its type stays a string; other
// types stay strings. github.event.inputs itself is not changed: it keeps
// the strings, as on GitHub. The result is a new map, or nil when there are
// no inputs.
func InputsContext(github map[string]any, types map[string]string) map[string]any {
	ev, _ := lookup(github, "event").(map[string]any)
	in, _ := lookup(ev, "inputs").(map[string]any)
	if in == nil {
		return nil
	}
	out := make(map[string]any, len(in))
	for k, v := range in {
		out[k] = typedInput(v, types[k])
	}
	return out
}

// typedInput converts a workflow_dispatch input's string value to its
// declared type.
func typedInput(v any, typ string) any {
	s, ok := v.(string)
	if !ok {
		return v
	}
	t := strings.TrimSpace(s)
	switch typ {
	case "boolean":
		switch {
		case strings.EqualFold(t, "true"):
			return true
		case strings.EqualFold(t, "false"), t == "":
			return false
		}
	case "number":
		if f, err := strconv.ParseFloat(t, 64); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
			return f
		}
	}
	return s
}
