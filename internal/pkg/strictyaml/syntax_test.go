package strictyaml

import (
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// TestSyntax checks the line of every kind of syntax error against the
// line that holds the mistake (or, for an unclosed bracket, the line that
// opened it).
func TestSyntax(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		doc  string
		line int
	}{
		{"a: 1\nb: 2\n- c\n", 3},            // parser: did not find expected key
		{"a: 1\nb:\n  - x\n y: 2\n", 4},     // parser: did not find expected key
		{"a: 1\nb: 2\nc: [1, 2\n", 3},       // parser: flow sequence opened on line 3
		{"a: 1\nb: 2\nc: {x: 1\nd: 1\n", 3}, // parser: flow mapping opened on line 3
		{"- a\nb: 1\n", 2},                  // parser: did not find expected '-'
		{"a: !x!y 1\n", 1},                  // parser: undefined tag handle, on line 1
		{"a: 1\nb: 2\nc: d: e\n", 3},        // scanner: mapping values not allowed
		{"a: 1\nb: 2\nc\n", 3},              // scanner: could not find expected ':'
		{"a: 1\n\nb: 2\n  c: 3\n", 4},       // scanner
	} {
		var n yaml.Node
		err := yaml.Unmarshal([]byte(tt.doc), &n)
		if err == nil {
			t.Fatalf("%q parsed, want a syntax error", tt.doc)
		}
		if line, msg := Syntax(err, []byte(tt.doc)); line != tt.line || msg == "" {
			t.Errorf("Syntax(%v) for %q = line %d %q, want line %d", err, tt.doc, line, msg, tt.line)
		}
	}
	var n yaml.Node
	if line, msg := Syntax(yaml.Unmarshal([]byte("a: *nope\n"), &n), []byte("a: *nope\n")); line != 0 || msg != "unknown anchor 'nope' referenced" {
		t.Errorf("Syntax(unknown anchor) = %d %q, want 0 and the message", line, msg)
	}
}

func FuzzSyntax(f *testing.F) {
	for _, s := range []string{"a: 1\n- b\n", "a: [1\n", "\ta: 1\n", "a: 'x\n", "a: !x!y 1\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		var n yaml.Node
		err := yaml.Unmarshal([]byte(doc), &n)
		if err == nil {
			return
		}
		lines := max(strings.Count(strings.TrimSuffix(doc, "\n"), "\n")+1, 1)
		if line, _ := Syntax(err, []byte(doc)); line < 0 || line > lines {
			t.Fatalf("Syntax(%v) = line %d, but %q has %d lines", err, line, doc, lines)
		}
	})
}
