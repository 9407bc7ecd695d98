package hashfiles

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/forgeload/forgeload/internal/pkg/testmain"
)

func TestMain(m *testing.M) { testmain.Run(m) }

// want is hashFiles' value computed independently: the SHA-256 of the
// concatenated SHA-256 digests of the contents, in the order given.
func want(contents ...string) string {
	all := sha256.New()
	for _, c := range contents {
		s := sha256.Sum256([]byte(c))
		all.Write(s[:])
	}
	return hex.EncodeToString(all.Sum(nil))
}

func write(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		p = filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func hashIn(t *testing.T, ws string, args ...string) string {
	t.Helper()
	root, err := os.OpenRoot(ws)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	pats, err := Compile(ws, args)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Hash(context.Background(), root, pats)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestHash: GitHub's semantics, checked against an independent computation.
func TestHash(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	write(t, ws, map[string]string{
		"go.sum":            "root-sum",
		"a/go.sum":          "a-sum",
		"a/b/c/go.sum":      "c-sum",
		"a/b/c/notes.txt":   "notes",
		".hidden/go.sum":    "hidden-sum",
		"vendor/x/go.sum":   "vendor-sum",
		"pkg/lock.json":     "lock",
		"pkg/sub/deep.json": "deep",
	})
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		// Lexical order of paths: .hidden/go.sum, a/b/c/go.sum, a/go.sum, go.sum, vendor/x/go.sum.
		{"doublestar", []string{"**/go.sum"}, want("hidden-sum", "c-sum", "a-sum", "root-sum", "vendor-sum")},
		{"one file", []string{"go.sum"}, want("root-sum")},
		{"star in one segment", []string{"*/go.sum"}, want("hidden-sum", "a-sum")},
		{"negation, last wins", []string{"**/go.sum\n!vendor/**", "!.hidden"}, want("c-sum", "a-sum", "root-sum")},
		{"directory means all below", []string{"pkg"}, want("lock", "deep")},
		{"several arguments, comments", []string{"# deps", "go.sum", "", "pkg/*.json"}, want("root-sum", "lock")},
		{"absolute inside", []string{filepath.Join(ws, "a", "go.sum")}, want("a-sum")},
		{"no match", []string{"**/*.lock"}, ""},
		{"outside the workspace", []string{"../**", "/etc/passwd"}, ""},
		{"class and ?", []string{"a/[ab]/?/go.su[m]"}, want("c-sum")},
	} {
		if got := hashIn(t, ws, tt.args...); got != tt.want {
			t.Errorf("%s: hashFiles(%q) = %q, want %q", tt.name, tt.args, got, tt.want)
		}
	}
}

// TestHashStaysInside: a symlink that leads out of the workspace is not
// hashed (nor is its target read), a symlink inside is; a FIFO the
// patterns match is skipped without blocking; a symlinked directory is not
// descended, so a cycle ends.
func TestHashStaysInside(t *testing.T) {
	t.Parallel()
	outside := t.TempDir()
	write(t, outside, map[string]string{"secret.txt": "runner-secret", "dir/go.sum": "outside-sum"})
	ws := t.TempDir()
	write(t, ws, map[string]string{"own.txt": "own"})
	for link, target := range map[string]string{
		"leak.txt":   filepath.Join(outside, "secret.txt"),
		"rel.txt":    "../" + filepath.Base(outside) + "/secret.txt",
		"leakdir":    filepath.Join(outside, "dir"),
		"inside.txt": "own.txt",
		"loop":       ".",
	} {
		if err := os.Symlink(target, filepath.Join(ws, link)); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(ws, "fifo.txt"), 0o644); err != nil {
		t.Fatal(err)
	}
	// inside.txt (-> own.txt) then own.txt.
	if got, w := hashIn(t, ws, "**"), want("own", "own"); got != w {
		t.Fatalf("hashFiles('**') = %s, want %s (only own.txt, through itself and the symlink inside)", got, w)
	}
	if got := hashIn(t, ws, "leak.txt", "rel.txt", "leakdir/**"); got != "" {
		t.Fatalf("hashFiles of symlinks leading out = %q, want \"\"", got)
	}
}

// TestHashBounded: a context that ends stops the walk with an error that
// says so.
func TestHashBounded(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	write(t, ws, map[string]string{"a.txt": "a"})
	root, err := os.OpenRoot(ws)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	pats, _ := Compile(ws, []string{"**"})
	if _, err := Hash(ctx, root, pats); err == nil || !strings.Contains(err.Error(), "gave up") {
		t.Fatalf("Hash on a done context: %v, want an error saying it gave up", err)
	}
}

func TestCompileBadPattern(t *testing.T) {
	t.Parallel()
	_, err := Compile("/ws", []string{"src/[a-"})
	if err == nil || !strings.Contains(err.Error(), `pattern "src/[a-"`) {
		t.Fatalf("Compile of a bad class: %v, want an error naming the pattern", err)
	}
}

// FuzzMatch: any pattern and path compile or fail cleanly, and matching
// never panics; a pattern never matches a path that climbs out.
func FuzzMatch(f *testing.F) {
	for _, s := range [][2]string{
		{"**/go.sum", "a/b/go.sum"}, {"!x/**", "x/y"}, {"[a-", "a"}, {"**/**/**/**/**/**/x", "a/a/a/a/a/a/a/a/a/a/a/a/a/a/b"},
		{"/abs/ws/a", "a"}, {"../x", "x"}, {"#c\n\n*", ".d"}, {"a/[^b]?/\\*", "a/cc/*"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pat, rel string) {
		if len(pat) > 512 || len(rel) > 512 {
			return
		}
		pats, err := Compile("/abs/ws", []string{pat})
		if err != nil {
			return
		}
		_ = Matches(pats, rel)
		if rel == ".." || strings.HasPrefix(rel, "../") {
			for _, p := range pats {
				if len(p.segs) > 0 && p.segs[0] == ".." {
					t.Fatalf("pattern %q kept a leading ..", pat)
				}
			}
		}
	})
}
