package jobrun

import (
	"slices"
	"strings"
	"testing"

	runnerv1 "gitea.dev/actions-proto-go/runner/v1"
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

// TestDockerActionRefused: a Docker action with no image, an empty
// docker://, or where there is no Docker Engine
// (to build its Dockerfile or to run its image), fails its step naming
// the file and field.
func TestDockerActionRefused(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ name, yml, want string }{
		{"no image", "runs:\n  using: docker\n  entrypoint: /x\n", "act/action.yml:2: runs.image: missing; a Docker action names its image (image: docker://name:tag) or its Dockerfile"},
		{"empty docker://", "runs:\n  using: docker\n  image: docker://\n", "act/action.yml: runs.image: docker:// names no image"},
		{"dockerfile, no engine", "runs:\n  using: docker\n  image: Dockerfile\n", "act/action.yml: runs.using: docker: Docker actions need a Docker Engine"},
		{"no engine", "runs:\n  using: docker\n  image: docker://alpine:3\n", "act/action.yml: runs.using: docker: Docker actions need a Docker Engine"},
	} {
		res, rep := runPayload(t, "on: push\njobs:\n  a:\n    runs-on: x\n    steps:\n"+writeFilesStep(map[string]string{"act/action.yml": tt.yml})+"      - uses: ./act\n")
		if rows := jobRows(rep, 2); res != runnerv1.Result_RESULT_FAILURE || !strings.Contains(rows, tt.want) {
			t.Errorf("%s: %v, want FAILURE with %q:\n%s", tt.name, res, tt.want, rows)
		}
	}
}
