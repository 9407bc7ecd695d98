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

	"github.com/forgeload/forgeload/internal/pkg/suggest"
)

// decoder walks a yaml.Node tree into a Config, recording where each key was
// set and collecting errors with their lines.
type decoder struct {
	c      *Config
	src    string // config name for errors, or "inline"
	inline bool   // keys come from Override
	errs   errorList
	// visits counts nodes visited; see maxVisits.
	visits int
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
	d.errs.add(e)
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
	for k := range d.c.origin {
		if strings.HasPrefix(k, path+".") || strings.HasPrefix(k, path+"[") {
			delete(d.c.origin, k)
		}
	}
}

func joinPath(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}

func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 100; i++ {
		n = n.Alias
	}
	if n != nil && n.Kind == yaml.DocumentNode {
		if len(n.Content) == 0 {
			return nil
		}
		return deref(n.Content[0])
	}
	return n
}

// maxVisits bounds the nodes the decoder visits, so a "billion laughs"
// document of nested aliases cannot make it walk an exponential tree. Real
// configs visit a few thousand nodes.
const maxVisits = 200_000

// deref is deref that counts node visits against maxVisits; past the limit
// it reports one error and treats every node as null.
func (d *decoder) deref(n *yaml.Node) *yaml.Node {
	d.visits++
	if d.visits > maxVisits {
		if d.visits == maxVisits+1 {
			d.fail(n, "", "the config expands to more than %d YAML nodes (through aliases?): expand the aliases, or split the config", maxVisits)
		}
		return nil
	}
	return deref(n)
}

func isNull(n *yaml.Node) bool {
	return n == nil || n.Kind == 0 || n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return strconv.Quote(n.Value)
	}
	return "an unsupported YAML node"
}

// mapping decodes a mapping node with the known fields. It reports unknown
// and duplicate keys. where describes the level for errors.
func (d *decoder) mapping(n *yaml.Node, path string, fields []field) {
	n = d.deref(n)
	if isNull(n) {
		return
	}
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = f.name
	}
	if n.Kind != yaml.MappingNode {
		d.fail(n, path, "want a mapping with keys %s, got %s", strings.Join(names, ", "), kindName(n))
		return
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := d.deref(n.Content[i]), n.Content[i+1]
		if k == nil || k.Kind != yaml.ScalarNode {
			d.fail(n.Content[i], path, "a key must be a plain name, got %s", kindName(n.Content[i]))
			continue
		}
		f := lookupField(fields, k.Value)
		if f == nil {
			where := "at the top level"
			if path != "" {
				where = "in " + path
			}
			msg := fmt.Sprintf("unknown key %q %s", k.Value, where)
			if s := suggest.Closest(k.Value, names, normKey); s != "" {
				msg += fmt.Sprintf("; did you mean %q?", s)
			}
			d.fail(k, "", "%s; known keys: %s", msg, strings.Join(names, ", "))
			continue
		}
		p := joinPath(path, f.name)
		if line, dup := seen[f.name]; dup {
			d.fail(k, p, "set twice (first at line %d); keep one", line)
			continue
		}
		seen[f.name] = k.Line
		if d.inline {
			d.clearOrigin(p)
		}
		d.mark(k, p)
		f.set(v, p)
	}
}

// scalar returns the text of a scalar node; null is "". want describes the
// expected value for the error when n is a mapping or list.
func (d *decoder) scalar(n *yaml.Node, path, want string) (string, bool) {
	n = d.deref(n)
	if isNull(n) {
		return "", true
	}
	if n.Kind != yaml.ScalarNode {
		d.fail(n, path, "want %s, got %s", want, kindName(n))
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
	n = d.deref(n)
	if isNull(n) {
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
	n = d.deref(n)
	if isNull(n) {
		return
	}
	if n.Kind != yaml.MappingNode {
		d.fail(n, path, "want a mapping of names to values (e.g. Content-Type: application/json), got %s", kindName(n))
		return
	}
	if *dst == nil {
		*dst = map[string]string{}
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := d.deref(n.Content[i]), d.deref(n.Content[i+1])
		if k == nil || k.Kind != yaml.ScalarNode || strings.TrimSpace(k.Value) == "" {
			d.fail(n.Content[i], path, "a name must be a non-empty string")
			continue
		}
		key := strings.TrimSpace(k.Value)
		if canon {
			key = http.CanonicalHeaderKey(key)
		}
		if seen[key] {
			d.fail(k, path, "%q is set twice; keep one", key)
			continue
		}
		seen[key] = true
		if !isNull(v) && v.Kind != yaml.ScalarNode {
			// Never echo values: headers often carry tokens.
			d.fail(v, path+"."+key, "want a string value, got %s", kindName(v))
			continue
		}
		val := ""
		if !isNull(v) {
			val = v.Value
		}
		(*dst)[key] = val
	}
}

// stringList decodes a list of strings; a single string is a list of one.
func (d *decoder) stringList(n *yaml.Node, path string, dst *[]string) {
	n = d.deref(n)
	if isNull(n) {
		*dst = nil
		return
	}
	if n.Kind == yaml.ScalarNode {
		*dst = []string{n.Value}
		return
	}
	if n.Kind != yaml.SequenceNode {
		d.fail(n, path, "want a list of strings, got %s", kindName(n))
		return
	}
	out := make([]string, 0, len(n.Content))
	for i, item := range n.Content {
		if s, ok := d.scalar(item, fmt.Sprintf("%s[%d]", path, i), "a string"); ok {
			out = append(out, s)
		}
	}
	*dst = out
}

// list calls each for each item of a list node.
func (d *decoder) list(n *yaml.Node, path, want string, each func(item *yaml.Node, path string)) {
	n = d.deref(n)
	if isNull(n) {
		return
	}
	if n.Kind != yaml.SequenceNode {
		d.fail(n, path, "want a list of %s, got %s", want, kindName(n))
		return
	}
	for i, item := range n.Content {
		p := fmt.Sprintf("%s[%d]", path, i)
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
