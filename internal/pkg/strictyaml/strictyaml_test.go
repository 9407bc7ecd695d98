package strictyaml

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

func mustParse(t *testing.T, doc string) *yaml.Node {
	t.Helper()
	n, _, err := Parse([]byte(doc))
	if err != nil {
		t.Fatalf("Parse(%q): %v", doc, err)
	}
	return n
}

func TestMapping(t *testing.T) {
	t.Parallel()
	lower := strings.ToLower
	for _, tt := range []struct {
		doc   string
		keys  Keys
		names string   // the pairs' names, joined with ","
		errs  []string // the errors, in order
	}{
		{"b: 1\na: 2\n", Keys{Names: []string{"b", "a"}}, "b,a", nil},
		{"cpacity: 1\n", Keys{Names: []string{"capacity", "labels"}}, "",
			[]string{`line 1: p: unknown key "cpacity"; did you mean "capacity"? known keys: capacity, labels`}},
		{"zzz: 1\n", Keys{Names: []string{"b", "a"}}, "", []string{`line 1: p: unknown key "zzz"; known keys: a, b`}},
		{"a: 1\na: 2\n", Keys{Names: []string{"a"}}, "a", []string{"line 2: p.a: set twice (first on line 1); keep one"}},
		{"A: 1\na: 2\n", Keys{Names: []string{"a"}, Fold: lower}, "a", []string{"line 2: p.a: set twice (first on line 1); keep one"}},
		{"X-Y: 1\n", Keys{Fold: lower}, "x-y", nil},
		{"? [a]\n: 1\n~: 2\n", Keys{}, "", []string{"line 1: p: a key must be a plain name, got a list", "line 3: p: a key must be a plain name, got null"}},
		{"base: &b {x: 1}\nother:\n  <<: *b\n", Keys{}, "base,other", nil},
		{"k: &v 1\nj: *v\n", Keys{}, "k,j", nil},
		{strings.Repeat("x", 70) + ": 1\n", Keys{Names: []string{"a"}}, "", []string{"line 1: p: unknown key (70 bytes of text); known keys: a"}},
	} {
		n := mustParse(t, tt.doc)
		pairs, errs := Mapping(n, "p", tt.keys)
		var names []string
		for _, p := range pairs {
			names = append(names, p.Name)
			if p.Value.Kind == yaml.AliasNode {
				t.Errorf("%q: pair %s value is an alias, want it followed", tt.doc, p.Name)
			}
		}
		if got := strings.Join(names, ","); got != tt.names {
			t.Errorf("%q: names %q, want %q", tt.doc, got, tt.names)
		}
		var got []string
		for _, e := range errs {
			got = append(got, e.Error())
		}
		if fmt.Sprint(got) != fmt.Sprint(tt.errs) {
			t.Errorf("%q: errors\n  %q\nwant\n  %q", tt.doc, got, tt.errs)
		}
	}
	other := mustParse(t, "other:\n  <<: {x: 1}\n").Content[1]
	if _, errs := Mapping(other, "other", Keys{}); len(errs) != 1 || errs[0].Error() != "line 2: other: merge keys (<<) are not supported; write the keys out" {
		t.Errorf("merge key: %v", errs)
	}
}

func TestDescribeAndWant(t *testing.T) {
	t.Parallel()
	for doc, want := range map[string]string{
		"{a: 1}":         "a mapping",
		"[1]":            "a list",
		"~":              "null",
		"null":           "null",
		"abc":            `"abc"`,
		"'two\n\nlines'": "(9 bytes of text)",
	} {
		if got := Describe(mustParse(t, doc)); got != want {
			t.Errorf("Describe(%q) = %s, want %s", doc, got, want)
		}
	}
	if got := Describe(nil); got != "nothing" {
		t.Errorf("Describe(nil) = %s", got)
	}
	e := Want(mustParse(t, "\n[a]\n"), "x.y", "a string")
	e.File = "f.yaml"
	if e.Error() != "f.yaml:2: x.y: want a string, got a list" {
		t.Errorf("Want = %q", e)
	}
}

func TestIsNull(t *testing.T) {
	t.Parallel()
	for doc, want := range map[string]bool{"~": true, "null": true, "a: ": false, "''": false, "0": false} {
		if got := IsNull(mustParse(t, doc)); got != want {
			t.Errorf("IsNull(%q) = %v, want %v", doc, got, want)
		}
	}
	if v := mustParse(t, "a:\n").Content[1]; !IsNull(v) {
		t.Errorf("IsNull(empty value) = false")
	}
	if !IsNull(nil) || !IsNull(&yaml.Node{}) {
		t.Errorf("IsNull(nil or zero node) = false")
	}
}

func TestParse(t *testing.T) {
	t.Parallel()
	for _, doc := range []string{"", "# only a comment\n", "\n\n"} {
		if n, more, err := Parse([]byte(doc)); n != nil || more != 0 || err != nil {
			t.Errorf("Parse(%q) = %v, %d, %v; want nothing", doc, n, more, err)
		}
	}
	if _, more, err := Parse([]byte("a: 1\n---\nb: 2\n")); err != nil || more != 2 {
		t.Errorf("Parse(two documents) more = %d, %v; want line 2", more, err)
	}
	_, _, err := Parse([]byte("a: 1\nb: 2\n- c\n"))
	if err == nil || err.Error() != "line 3: invalid YAML: did not find expected key" {
		t.Errorf("Parse(syntax error) = %v", err)
	}
}

func TestExpanded(t *testing.T) {
	t.Parallel()
	laughs := "a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
	if n := Expanded(mustParse(t, laughs), 5000); n <= 5000 {
		t.Errorf("Expanded(laughs) = %d, want more than the limit", n)
	}
	if n := Expanded(mustParse(t, "a: [1, 2]\n"), 100); n != 5 {
		t.Errorf("Expanded = %d, want 5", n)
	}
	if n := Expanded(mustParse(t, "x: &x {y: *x}\n"), 100); n <= 100 {
		t.Errorf("Expanded(cycle) = %d, want more than the limit", n)
	}
}

func TestList(t *testing.T) {
	t.Parallel()
	var l List
	if l.Err() != nil {
		t.Fatal("empty List has an error")
	}
	one := &Error{Msg: "one"}
	l.Add(one)
	if l.Err() != one {
		t.Errorf("List of one = %v, want the error itself", l.Err())
	}
	for i := range 30 {
		l.Add(fmt.Errorf("e%d", i))
	}
	err := l.Err()
	var e *Error
	if !errors.As(err, &e) || !strings.HasSuffix(err.Error(), "and 11 more problems") {
		t.Errorf("List of 31 = %v, want 20 errors and 11 more problems", err)
	}
}

func TestLocation(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		file      string
		line, col int
		want      string
	}{{"f", 2, 3, "f:2:3"}, {"f", 2, 0, "f:2"}, {"f", 0, 0, "f"}, {"", 4, 0, "line 4"}, {"", 0, 0, ""}} {
		if got := Location(tt.file, tt.line, tt.col); got != tt.want {
			t.Errorf("Location(%q, %d, %d) = %q, want %q", tt.file, tt.line, tt.col, got, tt.want)
		}
	}
}

// FuzzMapping checks that no document makes the strict layer panic, that
// every pair it returns is a known key, and that every error it reports
// has a line and a message.
func FuzzMapping(f *testing.F) {
	for _, s := range []string{"a: 1\nb: 2\n", "a: 1\na: 2\n", "<<: {a: 1}\n", "? [a]\n: 1\n", "x: &x {y: *x}\n*x : 1\n", "~: 1\nB: 2\n"} {
		f.Add(s)
	}
	names := []string{"a", "b", "run-name"}
	f.Fuzz(func(t *testing.T, doc string) {
		n, _, perr := Parse([]byte(doc))
		if perr != nil {
			if perr.Msg == "" || perr.Line < 0 {
				t.Fatalf("Parse error %+v", perr)
			}
			return
		}
		if n == nil || n.Kind != yaml.MappingNode || Expanded(n, 10_000) > 10_000 {
			return
		}
		_ = Describe(n)
		for _, keys := range []Keys{{Names: names}, {Names: names, Fold: strings.ToLower}, {}} {
			pairs, errs := Mapping(n, "p", keys)
			for _, p := range pairs {
				if keys.Names != nil && !slices.Contains(names, p.Name) {
					t.Fatalf("pair %q is not a known key", p.Name)
				}
				if p.Value == nil || p.Value.Kind == yaml.AliasNode && p.Value.Alias != nil {
					t.Fatalf("pair %q value %v not followed", p.Name, p.Value)
				}
			}
			for _, e := range errs {
				if e.Line <= 0 || e.Msg == "" {
					t.Fatalf("error without a line or message: %+v", e)
				}
			}
		}
	})
}
