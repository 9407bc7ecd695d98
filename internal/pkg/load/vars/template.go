package vars

import "strings"

// Lookup resolves a placeholder name to its value.
type Lookup interface {
	Lookup(name string) (string, bool)
}

// Template is a string with placeholders, parsed once. The zero value is
// the empty string. A Template is immutable and safe for concurrent use.
type Template struct {
	raw   string
	parts []part
}

// part is a literal (name == "") or a placeholder.
type part struct {
	lit        string
	name       string
	def        string
	hasDefault bool
}

// Has reports whether s contains a placeholder.
func Has(s string) bool { return !Parse(s).Static() }

// Parse splits s into literals and placeholders. A placeholder is {{name}}
// or {{name|default}}; the name is trimmed of spaces and may not be empty or
// contain a brace or a bar. Anything else, such as an unclosed {{, is
// literal text. Parse never fails.
func Parse(s string) *Template {
	t := &Template{raw: s}
	rest := s
	lit := 0 // start of the pending literal in s
	pos := 0
	for {
		i := strings.Index(rest, "{{")
		if i < 0 {
			break
		}
		j := strings.Index(rest[i+2:], "}}")
		if j < 0 {
			break
		}
		inner := rest[i+2 : i+2+j]
		name, def, hasDef := strings.Cut(inner, "|")
		name = strings.TrimSpace(name)
		if name == "" || strings.ContainsAny(name, "{}") || strings.Contains(def, "{{") {
			// not a placeholder: skip one brace and go on
			pos += i + 1
			rest = s[pos:]
			continue
		}
		start := pos + i
		if start > lit {
			t.parts = append(t.parts, part{lit: s[lit:start]})
		}
		t.parts = append(t.parts, part{name: name, def: def, hasDefault: hasDef, lit: s[start : start+4+j]})
		pos = start + 4 + j
		lit = pos
		rest = s[pos:]
	}
	if lit < len(s) {
		t.parts = append(t.parts, part{lit: s[lit:]})
	}
	return t
}

// Static reports whether t has no placeholder.
func (t *Template) Static() bool {
	for _, p := range t.parts {
		if p.name != "" {
			return false
		}
	}
	return true
}

// Raw returns the text t was parsed from.
func (t *Template) Raw() string { return t.raw }

// Names returns the placeholder names in order of appearance.
func (t *Template) Names() []string {
	var out []string
	for _, p := range t.parts {
		if p.name != "" {
			out = append(out, p.name)
		}
	}
	return out
}

// Append appends t rendered with l (which may be nil) to dst.
func (t *Template) Append(dst []byte, l Lookup) []byte {
	for i := range t.parts {
		p := &t.parts[i]
		if p.name == "" {
			dst = append(dst, p.lit...)
			continue
		}
		if l != nil {
			if v, ok := l.Lookup(p.name); ok {
				dst = append(dst, v...)
				continue
			}
		}
		if p.hasDefault {
			dst = append(dst, p.def...)
		} else {
			dst = append(dst, p.lit...)
		}
	}
	return dst
}

// Render returns t rendered with l (which may be nil).
func (t *Template) Render(l Lookup) string {
	if t.Static() {
		return t.raw
	}
	return string(t.Append(make([]byte, 0, len(t.raw)+32), l))
}
