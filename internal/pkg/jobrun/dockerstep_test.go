package jobrun

import (
	"slices"
	"strings"
	"testing"
)

func TestSplitArgs(t *testing.T) {
	t.Parallel()
	for in, want := range map[string][]string{
		``:                     nil,
		`a b  c`:               {"a", "b", "c"},
		`-c "echo $X; exit 1"`: {"-c", "echo $X; exit 1"},
		`'a b' "c 'd'" e\ f`:   {"a b", "c 'd'", "e f"},
		`x"y z"w`:              {"xy zw"},
		`"" ''`:                {"", ""},
		"a\n\tb":               {"a", "b"},
		`"say \"hi\""`:         {`say "hi"`},
	} {
		got, err := splitArgs(in)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("splitArgs(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := splitArgs(`echo "open`); err == nil || !strings.Contains(err.Error(), `unclosed " quote`) {
		t.Errorf("unclosed quote: %v", err)
	}
}

// FuzzSplitArgs: any with.args splits or fails cleanly; words joined by
// spaces, each single-quoted, split back to the same words.
func FuzzSplitArgs(f *testing.F) {
	for _, s := range []string{`-c "a b"`, `'x' "y" z\ w`, `"\"`, `a\`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		words, err := splitArgs(s)
		if err != nil {
			return
		}
		var quoted []string
		for _, w := range words {
			if strings.Contains(w, "'") {
				return
			}
			quoted = append(quoted, "'"+w+"'")
		}
		again, err := splitArgs(strings.Join(quoted, " "))
		if err != nil || !slices.Equal(again, words) {
			t.Fatalf("%q: %q re-split to %q, %v", s, words, again, err)
		}
	})
}
