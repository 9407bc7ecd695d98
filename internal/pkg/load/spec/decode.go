package spec

import (
	"fmt"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/forgeload/forgeload/internal/pkg/strictyaml"
)

// decoder walks a yaml.Node tree into a Config, recording where each key was
// set and collecting errors with their lines.
type decoder struct {
	c      *Config
	src    string // config name for errors, or "inline"
	inline bool   // keys come from Override
	errs   strictyaml.List
}

// field is one key known at a mapping level.
type field struct {
	name string // canonical snake_case name, shown in errors
	// set decodes the value node into the config. path is the full key path.
	set func(n *yaml.Node, path string)
	// structured fields take a YAML value (mapping or list) when given
	// inline; the others take the inline string as is.
	structured bool
}

// normKey folds case, '_' and '-', so that Crankfire's spellings body_file,
// bodyFile and body-file are one key.
func normKey(k string) string {
	var b strings.Builder
	for _, r := range strings.TrimSpace(k) {
		if r == '_' || r == '-' {
			continue
		}
		b.WriteString(strings.ToLower(string(r)))
	}
	return b.String()
}

func lookupField(fields []field, key string) *field {
	nk := normKey(key)
	for i := range fields {
		if normKey(fields[i].name) == nk {
			return &fields[i]
		}
	}
	return nil
}

func (d *decoder) fail(n *yaml.Node, path, format string, args ...any) {
	e := &Error{Source: d.src, Key: path, Msg: fmt.Sprintf(format, args...)}
	if n != nil && !d.inline {
		e.Line = n.Line
	}
	d.errs.Add(e)
}

// shared records an error of the strict-YAML layer.
func (d *decoder) shared(e *strictyaml.Error) {
	n := &yaml.Node{Line: e.Line}
	d.fail(n, e.Path, "%s", e.Msg)
}

// want records the kind error "want <want>, got <what n is>".
func (d *decoder) want(n *yaml.Node, path, want string) {
	d.shared(strictyaml.Want(n, path, want))
}

func (d *decoder) mark(n *yaml.Node, path string) {
	if d.c.origin == nil {
		d.c.origin = map[string]origin{}
	}
	o := origin{inline: d.inline}
	if n != nil && !d.inline {
		o.line = n.Line
	}
	d.c.origin[path] = o
}

// clearOrigin forgets where the keys under path were set, before path is
// set again by an override.
func (d *decoder) clearOrigin(path string) {
	dot, idx := path+".", path+"["
	for k := range d.c.origin {
		if strings.HasPrefix(k, dot) || strings.HasPrefix(k, idx) {
			delete(d.c.origin, k)
		}
	}
}

// maxNodes bounds the nodes of a config with its aliases expanded, so a
// "billion laughs" document of nested aliases cannot make the decoder walk
// an exponential tree. Real configs have a few thousand.
const maxNodes = 200_000

// checkSize refuses a node tree that expands to more than maxNodes.
func checkSize(n *yaml.Node) error {
	if strictyaml.Expanded(n, maxNodes) <= maxNodes {
		return nil
	}
	if hasAlias(n) {
		return fmt.Errorf("the config expands to more than %d YAML nodes through its aliases: expand the aliases that repeat large parts, or split the config", maxNodes)
	}
	return fmt.Errorf("the config has more than %d YAML nodes: split the test into several configs", maxNodes)
}

// hasAlias reports whether the tree under n, as written, holds an alias.
func hasAlias(n *yaml.Node) bool {
	if n.Kind == yaml.AliasNode {
		return true
	}
	for _, c := range n.Content {
		if hasAlias(c) {
			return true
		}
	}
	return false
}

// mapping decodes a mapping node with the known fields. It reports unknown
// and duplicate keys.
func (d *decoder) mapping(n *yaml.Node, path string, fields []field) {
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = f.name
	}
	strictyaml.Block(n, path, "", strictyaml.Keys{Names: names, Fold: normKey}, d.shared, func(kv strictyaml.Pair, p string) {
		if _, before := d.c.origin[p]; before && d.inline {
			// Only a key set before can have keys under it: scanning
			// for them at every key made an inline config of n
			// endpoints cost n² (10,000 took half a minute).
			d.clearOrigin(p)
		}
		d.mark(kv.Key, p)
		lookupField(fields, kv.Name).set(kv.Value, p)
	})
}

// scalar returns the text of a scalar node; null is "". want describes the
// expected value for the error when n is a mapping or list.
func (d *decoder) scalar(n *yaml.Node, path, want string) (string, bool) {
	n = strictyaml.Resolve(n)
	if strictyaml.IsNull(n) {
		return "", true
	}
	if n.Kind != yaml.ScalarNode {
		d.want(n, path, want)
		return "", false
	}
	return n.Value, true
}

func (d *decoder) str(n *yaml.Node, path string, dst *string) {
	if s, ok := d.scalar(n, path, "a string"); ok {
		*dst = strings.TrimSpace(s)
	}
}

// rawStr keeps surrounding space, for bodies and messages.
func (d *decoder) rawStr(n *yaml.Node, path string, dst *string) {
	if s, ok := d.scalar(n, path, "a string"); ok {
		*dst = s
	}
}

// secretStr never echoes the value in errors.
func (d *decoder) secretStr(n *yaml.Node, path string, dst *string) {
	n = strictyaml.Resolve(n)
	if strictyaml.IsNull(n) {
		return
	}
	if n.Kind != yaml.ScalarNode {
		d.fail(n, path, "want a string (the value is secret and not shown)")
		return
	}
	*dst = strings.TrimSpace(n.Value)
}

func cleanNumber(s string) string {
	return strings.ReplaceAll(strings.TrimSpace(s), "_", "")
}

func (d *decoder) integer(n *yaml.Node, path, want string, dst *int64) bool {
	s, ok := d.scalar(n, path, want)
	if !ok {
		return false
	}
	t := cleanNumber(s)
	if t == "" {
		*dst = 0
		return true
	}
	if v, err := strconv.ParseInt(t, 10, 64); err == nil {
		*dst = v
		return true
	}
	if f, err := strconv.ParseFloat(t, 64); err == nil && f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		*dst = int64(f)
		return true
	}
	d.fail(n, path, "%q is not %s", s, want)
	return false
}

func (d *decoder) intField(n *yaml.Node, path, want string, dst *int) {
	var v int64
	if !d.integer(n, path, want, &v) {
		return
	}
	if v > math.MaxInt32 || v < math.MinInt32 {
		d.fail(n, path, "%d is out of range for %s", v, want)
		return
	}
	*dst = int(v)
}

func (d *decoder) float(n *yaml.Node, path, want string, dst *float64) {
	s, ok := d.scalar(n, path, want)
	if !ok {
		return
	}
	t := cleanNumber(s)
	if t == "" {
		*dst = 0
		return
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		d.fail(n, path, "%q is not %s", s, want)
		return
	}
	*dst = v
}

const wantDuration = "a duration (want e.g. 30s, 5m, 1m30s, or a number of seconds)"

// parseDuration accepts Go duration syntax or a plain number of seconds.
func parseDuration(s string) (time.Duration, bool) {
	t := cleanNumber(s)
	if t == "" {
		return 0, true
	}
	if f, err := strconv.ParseFloat(t, 64); err == nil {
		ns := f * float64(time.Second)
		if math.IsNaN(ns) || ns >= math.MaxInt64 || ns <= math.MinInt64 {
			return 0, false
		}
		return time.Duration(ns), true
	}
	d, err := time.ParseDuration(t)
	if err != nil {
		return 0, false
	}
	return d, true
}

func (d *decoder) duration(n *yaml.Node, path string, dst *time.Duration) {
	s, ok := d.scalar(n, path, wantDuration)
	if !ok {
		return
	}
	v, ok := parseDuration(s)
	if !ok {
		d.fail(n, path, "%q is not %s", s, wantDuration)
		return
	}
	*dst = v
}

func (d *decoder) boolean(n *yaml.Node, path string, dst *bool) {
	s, ok := d.scalar(n, path, "true or false")
	if !ok {
		return
	}
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "false", "no", "off", "0":
		*dst = false
	case "true", "yes", "on", "1":
		*dst = true
	default:
		d.fail(n, path, "%q is not true or false", s)
	}
}

// stringMap decodes a mapping of names to scalar values, merging into *dst.
// canon canonicalises keys as HTTP headers.
func (d *decoder) stringMap(n *yaml.Node, path string, canon bool, dst *map[string]string) {
	keys := strictyaml.Keys{Fold: strings.TrimSpace}
	if canon {
		keys.Fold = func(k string) string { return http.CanonicalHeaderKey(strings.TrimSpace(k)) }
	}
	if m := strictyaml.Resolve(n); m != nil && m.Kind == yaml.MappingNode && *dst == nil {
		*dst = map[string]string{}
	}
	strictyaml.Block(n, path, "a mapping of names to values (e.g. Content-Type: application/json)", keys, d.shared, func(kv strictyaml.Pair, p string) {
		val := ""
		switch {
		case kv.Name == "":
			d.fail(kv.Key, path, "a name must be a non-empty string")
			return
		case kv.Value.Kind != yaml.ScalarNode:
			// Never echo values: headers often carry tokens.
			d.want(kv.Value, p, "a string value")
			return
		case !strictyaml.IsNull(kv.Value):
			val = kv.Value.Value
		}
		(*dst)[kv.Name] = val
	})
}

// stringList decodes a list of strings; a single string is a list of one.
func (d *decoder) stringList(n *yaml.Node, path string, dst *[]string) {
	n = strictyaml.Resolve(n)
	if strictyaml.IsNull(n) {
		*dst = nil
		return
	}
	if n.Kind == yaml.ScalarNode {
		*dst = []string{n.Value}
		return
	}
	if n.Kind != yaml.SequenceNode {
		d.want(n, path, "a list of strings")
		return
	}
	out := make([]string, 0, len(n.Content))
	for i, item := range n.Content {
		if s, ok := d.scalar(item, strictyaml.Index(path, i), "a string"); ok {
			out = append(out, s)
		}
	}
	*dst = out
}

// list calls each for each item of a list node.
func (d *decoder) list(n *yaml.Node, path, want string, each func(item *yaml.Node, path string)) {
	n = strictyaml.Resolve(n)
	if strictyaml.IsNull(n) {
		return
	}
	if n.Kind != yaml.SequenceNode {
		d.want(n, path, "a list of "+want)
		return
	}
	for i, item := range n.Content {
		p := strictyaml.Index(path, i)
		d.mark(item, p)
		each(item, p)
	}
}

// sortedKeys returns the keys of m in order, for deterministic errors.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
