package strictyaml

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/forgeload/forgeload/internal/pkg/suggest"
)

// Error is one problem at a place in a YAML document.
type Error struct {
	// File names the document, e.g. "config.yaml"; "" when it has none.
	File string
	// Line is the 1-based line, or 0 when not known; Column likewise.
	Line, Column int
	// Path is the key path, e.g. "runner.capacity" or "steps[2].with", or
	// "" when the problem is with the whole document.
	Path string
	// Msg says what is wrong and what is expected.
	Msg string
}

// Error formats e as "file:line: path: msg" (see [Location]), leaving out
// the parts that are not known.
func (e *Error) Error() string {
	s := Location(e.File, e.Line, e.Column)
	if s != "" {
		s += ": "
	}
	if e.Path != "" {
		s += e.Path + ": "
	}
	return s + e.Msg
}

// Location formats a place as "file:line:column", leaving out the parts
// that are 0 or empty; a line without a file is "line N".
func Location(file string, line, column int) string {
	if line <= 0 {
		return file
	}
	s := file + ":" + strconv.Itoa(line)
	if file == "" {
		s = "line " + strconv.Itoa(line)
	}
	if column > 0 {
		s += ":" + strconv.Itoa(column)
	}
	return s
}

// Errorf returns an Error at node n (nil for no line) and key path.
func Errorf(n *yaml.Node, path, format string, args ...any) *Error {
	e := &Error{Path: path, Msg: fmt.Sprintf(format, args...)}
	if n != nil {
		e.Line = n.Line
	}
	return e
}

// Want returns the kind error for node n at path: "want <want>, got
// <what n is>", e.g. "want a list of strings, got a mapping".
func Want(n *yaml.Node, path, want string) *Error {
	return Errorf(n, path, "want %s, got %s", want, Describe(n))
}

// Parse parses the first YAML document of data and returns its root node,
// or nil when data holds no document (only blanks or comments). more is the
// line of a second document that parses, or 0: callers that take one
// document refuse it. A syntax error is an [*Error] with the line of the
// mistake and the message "invalid YAML: ...".
func Parse(data []byte) (root *yaml.Node, more int, err *Error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if e := dec.Decode(&doc); e != nil {
		if errors.Is(e, io.EOF) {
			return nil, 0, nil
		}
		line, msg := Syntax(e, data)
		return nil, 0, &Error{Line: line, Msg: "invalid YAML: " + msg}
	}
	var next yaml.Node
	if dec.Decode(&next) == nil {
		more = next.Line
	}
	if len(doc.Content) == 0 {
		return nil, more, nil
	}
	return doc.Content[0], more, nil
}

// IsNull reports whether n is absent or null: nil, an empty node, or a
// scalar tagged !!null (null, ~, or nothing after the colon).
func IsNull(n *yaml.Node) bool {
	return n == nil || n.Kind == 0 || n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// Describe names what node n is, for "got ..." in errors: "a mapping",
// "a list", "null", "an alias", "nothing", or a scalar's text quoted (see
// [Quote]).
func Describe(n *yaml.Node) string {
	switch {
	case n == nil || n.Kind == 0 || n.Kind == yaml.DocumentNode:
		return "nothing"
	case n.Kind == yaml.MappingNode:
		return "a mapping"
	case n.Kind == yaml.SequenceNode:
		return "a list"
	case n.Kind == yaml.AliasNode:
		return "an alias"
	case IsNull(n):
		return "null"
	}
	return Quote(n.Value)
}

// maxQuoted bounds the text Quote shows.
const maxQuoted = 64

// Quote quotes text from a document for an error. Text that is long or
// holds line breaks or control characters is described by its size, not
// shown: it is a file's content (a script, a key file), not a mistyped
// value.
func Quote(s string) string {
	plain := len(s) <= maxQuoted
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			plain = false
		}
	}
	if plain {
		return strconv.Quote(s)
	}
	return fmt.Sprintf("(%d bytes of text)", len(s))
}

// Resolve follows an alias to the node it names (at most 100 links).
func Resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && n.Alias != nil && i < 100; i++ {
		n = n.Alias
	}
	return n
}

// Expanded returns the number of nodes under n with aliases expanded,
// stopping soon after it passes limit. An alias cycle counts as more than
// limit. Parsers check it before walking a document, so a few bytes of
// nested aliases ("billion laughs") cannot make them walk an exponential
// tree.
func Expanded(n *yaml.Node, limit int) int {
	return expanded(n, limit, map[*yaml.Node]int{})
}

func expanded(n *yaml.Node, limit int, memo map[*yaml.Node]int) int {
	if n.Kind == yaml.AliasNode {
		if n.Alias == nil {
			return 1
		}
		n = n.Alias
	}
	// Only an anchored node can be reached twice, so only those are
	// remembered.
	if n.Anchor != "" {
		if c, ok := memo[n]; ok {
			return c
		}
		memo[n] = limit + 1 // reached again while counting n: a cycle
	}
	total := 1
	for _, c := range n.Content {
		if total += expanded(c, limit, memo); total > limit {
			break
		}
	}
	if n.Anchor != "" {
		memo[n] = total
	}
	return total
}

// Join appends key to a key path: Join("runner", "capacity") is
// "runner.capacity", Join("", "rate") is "rate".
func Join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// Index appends a list index to a key path: Index("steps", 2) is
// "steps[2]".
func Index(path string, i int) string {
	return path + "[" + strconv.Itoa(i) + "]"
}

// Keys says which keys a mapping takes.
type Keys struct {
	// Names are the keys allowed. Nil allows any plain key, for mappings of
	// names to values such as env: or headers:.
	Names []string
	// Fold maps a key to the form keys are compared in, to match and to
	// find duplicates; nil compares keys as written. Suggestions compare
	// folded keys, or lower-cased ones when Fold is nil.
	Fold func(string) string
}

// Pair is one key of a mapping and its value.
type Pair struct {
	// Key is the key node as written.
	Key *yaml.Node
	// Name is the name in Keys.Names that Key matched; for a mapping of
	// any names, Key's text (folded, when Keys.Fold is set).
	Name string
	// Value is the value node, an alias followed.
	Value *yaml.Node
}

// Block walks the node n at path as a block of keys, in document order.
// A null n is an empty block. A node of another kind than a mapping is the
// kind error [Want], naming want or, when want is "", the keys ("want a
// mapping of keys (a, b), got a list"). Each key must be a plain scalar
// (not a merge key <<), be set once and, when keys.Names is set, be one of
// them: a key that breaks a rule is passed to fail, with its line, and
// left out; every other pair is passed to each with its key path.
func Block(n *yaml.Node, path, want string, keys Keys, fail func(*Error), each func(p Pair, path string)) {
	n = Resolve(n)
	if IsNull(n) {
		return
	}
	if n.Kind != yaml.MappingNode {
		if want == "" {
			want = "a mapping of keys (" + strings.Join(sorted(keys.Names), ", ") + ")"
		}
		fail(Want(n, path, want))
		return
	}
	fold := keys.Fold
	if fold == nil {
		fold = func(s string) string { return s }
	}
	var known map[string]string
	if keys.Names != nil {
		known = make(map[string]string, len(keys.Names))
		for _, name := range keys.Names {
			known[fold(name)] = name
		}
	}
	seen := make(map[string]int, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := Resolve(n.Content[i])
		switch {
		case k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge":
			fail(Errorf(k, path, "merge keys (<<) are not supported; write the keys out"))
			continue
		case k.Kind != yaml.ScalarNode || IsNull(k):
			fail(Errorf(k, path, "a key must be a plain name, got %s", Describe(k)))
			continue
		}
		name := fold(k.Value)
		if known != nil {
			var ok bool
			if name, ok = known[name]; !ok {
				fail(Unknown(k, path, keys))
				continue
			}
		}
		if line, dup := seen[name]; dup {
			fail(Errorf(k, Join(path, name), "set twice (first on line %d); keep one", line))
			continue
		}
		seen[name] = k.Line
		each(Pair{Key: k, Name: name, Value: Resolve(n.Content[i+1])}, Join(path, name))
	}
}

// Mapping is [Block] for a caller that takes the pairs and the errors as
// lists.
func Mapping(n *yaml.Node, path string, keys Keys) ([]Pair, []*Error) {
	var pairs []Pair
	var errs []*Error
	Block(n, path, "", keys, func(e *Error) { errs = append(errs, e) }, func(p Pair, _ string) { pairs = append(pairs, p) })
	return pairs, errs
}

func sorted(names []string) []string {
	names = append([]string(nil), names...)
	sort.Strings(names)
	return names
}

// Unknown returns the error for key k, which is not one of keys.Names, in
// the mapping at path: `unknown key "capacty"; did you mean "capacity"?
// known keys: ...` with the known keys sorted.
func Unknown(k *yaml.Node, path string, keys Keys) *Error {
	norm := keys.Fold
	if norm == nil {
		norm = strings.ToLower
	}
	msg := "unknown key " + Quote(k.Value) + ";"
	if s := suggest.Closest(k.Value, keys.Names, norm); s != "" {
		msg += fmt.Sprintf(" did you mean %q?", s)
	}
	return Errorf(k, path, "%s known keys: %s", msg, strings.Join(sorted(keys.Names), ", "))
}

// List collects errors up to a limit, so that one broken file does not
// produce a wall of text.
type List struct {
	errs    []error
	dropped int
}

// maxErrors is how many errors a List keeps.
const maxErrors = 20

// Add adds err, or counts it once the list is full.
func (l *List) Add(err error) {
	if len(l.errs) >= maxErrors {
		l.dropped++
		return
	}
	l.errs = append(l.errs, err)
}

// Err returns nil, the single error as is (so callers can type-assert it),
// or the errors joined, followed by "and N more problems" when some were
// dropped.
func (l *List) Err() error {
	switch {
	case len(l.errs) == 0:
		return nil
	case len(l.errs) == 1 && l.dropped == 0:
		return l.errs[0]
	}
	errs := l.errs
	if l.dropped > 0 {
		errs = append(errs[:len(errs):len(errs)], fmt.Errorf("and %d more problems", l.dropped))
	}
	return errors.Join(errs...)
}
