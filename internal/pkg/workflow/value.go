package workflow

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"strconv"
	"strings"

	"github.com/forgeload/forgeload/internal/pkg/number"
)

// Values inside the evaluator are nil, bool, float64, string, []any,
// map[string]any, map[string]string, or filtered (the result of a * filter).
// Anything else coming from a context is normalised by norm on the way in.

type kind int

const (
	kindNull kind = iota
	kindBool
	kindNumber
	kindString
	kindArray
	kindObject
)

// filtered is the array produced by a * filter. Property access on it maps
// over its elements instead of returning null.
type filtered []any

func kindOf(v any) kind {
	switch v.(type) {
	case nil:
		return kindNull
	case bool:
		return kindBool
	case float64:
		return kindNumber
	case string:
		return kindString
	case []any, filtered:
		return kindArray
	default:
		return kindObject
	}
}

// norm converts a value read from a context into one of the evaluator's
// types.
func norm(v any) any {
	switch x := v.(type) {
	case nil, bool, float64, string, []any, filtered, map[string]any, map[string]string:
		return v
	case int:
		return float64(x)
	case int8:
		return float64(x)
	case int16:
		return float64(x)
	case int32:
		return float64(x)
	case int64:
		return float64(x)
	case uint:
		return float64(x)
	case uint8:
		return float64(x)
	case uint16:
		return float64(x)
	case uint32:
		return float64(x)
	case uint64:
		return float64(x)
	case float32:
		return float64(x)
	case json.Number:
		f, err := x.Float64()
		if err != nil {
			return string(x)
		}
		return f
	case []string:
		out := make([]any, len(x))
		for i, s := range x {
			out[i] = s
		}
		return out
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[toString(norm(k))] = e
		}
		return out
	case StepResult:
		return x.object()
	case NeedResult:
		return x.object()
	default:
		// Unknown types (structs, pointers) are opaque to expressions.
		return nil
	}
}

func truthy(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case float64:
		return x != 0 && !math.IsNaN(x)
	case string:
		return x != ""
	default:
		return true
	}
}

// toNumber follows GitHub's coercion: null is 0, booleans are 0 or 1, a
// string is read as a JSON number ("" is 0) or NaN, arrays and objects are
// NaN.
func toNumber(v any) float64 {
	switch x := v.(type) {
	case nil:
		return 0
	case bool:
		if x {
			return 1
		}
		return 0
	case float64:
		return x
	case string:
		return parseNumber(x)
	default:
		return math.NaN()
	}
}

func parseNumber(s string) float64 {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0
	}
	if h, ok := strings.CutPrefix(s, "0x"); ok {
		if n, err := strconv.ParseUint(h, 16, 64); err == nil {
			return float64(n)
		}
		return math.NaN()
	}
	if !number.Valid(s) { // JSON's grammar, also with a leading + and a leading or trailing point
		switch s {
		case "Infinity", "+Infinity":
			return math.Inf(1)
		case "-Infinity":
			return math.Inf(-1)
		}
		return math.NaN()
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		// Out of range: ParseFloat returns ±Inf with the error.
		return f
	}
	return f
}

// formatNumber renders a number as GitHub does: integers without a decimal
// point, others with up to 15 significant digits.
func formatNumber(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case f == 0:
		return "0"
	case f == math.Trunc(f) && math.Abs(f) < 1e15:
		return strconv.FormatFloat(f, 'f', -1, 64)
	default:
		return strconv.FormatFloat(f, 'g', 15, 64)
	}
}

// toString converts a value as GitHub's functions do: null is "", arrays
// and objects are "Array" and "Object".
func toString(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case bool:
		return strconv.FormatBool(x)
	case float64:
		return formatNumber(x)
	case string:
		return x
	case []any, filtered:
		return "Array"
	default:
		return "Object"
	}
}

// render converts a value for interpolation into a string: like toString,
// but arrays and objects become JSON.
func render(v any) string {
	switch v.(type) {
	case []any, filtered, map[string]any, map[string]string:
		return toJSON(v)
	default:
		return toString(v)
	}
}

// toJSON renders v as indented JSON, as GitHub's toJSON does.
func toJSON(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(jsonable(v, 0)); err != nil {
		return "null"
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// jsonable replaces values encoding/json rejects (NaN, infinities, opaque
// types) and bounds the depth of what is encoded.
func jsonable(v any, depth int) any {
	if depth > maxJSONDepth {
		return nil
	}
	switch x := norm(v).(type) {
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return formatNumber(x)
		}
		return x
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = jsonable(e, depth+1)
		}
		return out
	case filtered:
		return jsonable([]any(x), depth)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = jsonable(e, depth+1)
		}
		return out
	default:
		return x
	}
}

const maxJSONDepth = 100

// lookup returns the property name of an object, matching case-insensitively
// as GitHub does. It returns nil for a missing key or a non-object.
func lookup(obj any, name string) any {
	switch m := obj.(type) {
	case map[string]any:
		if v, ok := m[name]; ok {
			return norm(v)
		}
		for k, v := range m {
			if strings.EqualFold(k, name) {
				return norm(v)
			}
		}
	case map[string]string:
		if v, ok := m[name]; ok {
			return v
		}
		for k, v := range m {
			if strings.EqualFold(k, name) {
				return v
			}
		}
	}
	return nil
}

// coerce converts the operands of a comparison to a common kind: null and
// booleans become numbers, and a string compared with a number becomes a
// number.
func coerce(l, r any) (any, any) {
	for range 3 {
		lk, rk := kindOf(l), kindOf(r)
		switch {
		case lk == rk:
			return l, r
		case lk == kindNull || lk == kindBool:
			l = toNumber(l)
		case rk == kindNull || rk == kindBool:
			r = toNumber(r)
		case lk == kindNumber && rk == kindString:
			r = toNumber(r)
		case lk == kindString && rk == kindNumber:
			l = toNumber(l)
		default:
			return l, r
		}
	}
	return l, r
}

func looseEqual(l, r any) bool {
	l, r = coerce(l, r)
	if kindOf(l) != kindOf(r) {
		return false
	}
	switch x := l.(type) {
	case nil:
		return true
	case bool:
		return x == r.(bool)
	case float64:
		return x == r.(float64)
	case string:
		return strings.EqualFold(x, r.(string))
	default:
		return sameInstance(l, r)
	}
}

func sameInstance(a, b any) bool {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	if va.Kind() != vb.Kind() {
		return false
	}
	switch va.Kind() {
	case reflect.Map:
		return va.UnsafePointer() == vb.UnsafePointer()
	case reflect.Slice:
		return va.Len() == vb.Len() && va.UnsafePointer() == vb.UnsafePointer()
	}
	return false
}

// compare orders l and r after coercion. ok is false when they cannot be
// ordered (different kinds, NaN, arrays or objects).
func compare(l, r any) (c int, ok bool) {
	l, r = coerce(l, r)
	if kindOf(l) != kindOf(r) {
		return 0, false
	}
	switch x := l.(type) {
	case nil:
		return 0, true
	case bool:
		y := r.(bool)
		switch {
		case x == y:
			return 0, true
		case y:
			return -1, true
		default:
			return 1, true
		}
	case float64:
		y := r.(float64)
		switch {
		case math.IsNaN(x) || math.IsNaN(y):
			return 0, false
		case x < y:
			return -1, true
		case x > y:
			return 1, true
		default:
			return 0, true
		}
	case string:
		return strings.Compare(strings.ToUpper(x), strings.ToUpper(r.(string))), true
	}
	return 0, false
}
