package testbin

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forgeload/forgeload/internal/pkg/testmain"
)

func TestMain(m *testing.M) { testmain.Run(m) }

// TestBuildReusesAnUpToDateBinary: a second build of unchanged sources
// leaves the binary's file as it was (go build skipped the link: a new link
// would have moved a new file into place; an up-to-date one only gets its
// modification time refreshed), and the binary runs.
func TestBuildReusesAnUpToDateBinary(t *testing.T) {
	const pkg = "github.com/forgeload/forgeload/internal/pkg/container/containertest/sut"
	build := func() (string, os.FileInfo, []byte) {
		t.Helper()
		bin, err := Build(pkg, []string{"CGO_ENABLED=0"})
		if err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(bin)
		if err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(bin)
		if err != nil {
			t.Fatal(err)
		}
		return bin, fi, data
	}
	bin, first, before := build()
	runs := goBuilds.Load()
	again, second, after := build()
	if n := goBuilds.Load() - runs; n != 0 {
		t.Errorf("the second build of unchanged sources ran go %d times, want none", n)
	}
	if again != bin || !os.SameFile(first, second) || !bytes.Equal(before, after) {
		t.Errorf("second build of unchanged sources: %s replaced %s (same file %v, same content %v), want it reused", again, bin, os.SameFile(first, second), bytes.Equal(before, after))
	}
	if filepath.Base(bin) != "sut" {
		t.Errorf("binary named %s, want the package's name sut", filepath.Base(bin))
	}
	out, err := exec.Command(bin, "fail").CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 || !strings.Contains(string(out), "failing on purpose") {
		t.Errorf("sut fail: %v, %q; want exit 3 and its message", err, out)
	}
	for _, other := range []struct{ env, flags []string }{{nil, nil}, {[]string{"CGO_ENABLED=0"}, []string{"-trimpath"}}} {
		if p, err := path(pkg, other.env, other.flags); err != nil || p == bin {
			t.Errorf("the build with env %v and flags %v goes to %s (%v), the same as %s's", other.env, other.flags, p, err, bin)
		}
	}
}

// TestBuildSaysWhatFailed: a package that does not build is an error that
// names it and carries the compiler's output.
func TestBuildSaysWhatFailed(t *testing.T) {
	_, err := Build("github.com/forgeload/forgeload/internal/pkg/no-such-package", nil)
	if err == nil || !strings.Contains(err.Error(), "no-such-package") {
		t.Fatalf("build of a missing package: %v, want an error naming it", err)
	}
}

// TestBuildRebuildsWhatChanged: a change to any file of the module, or to
// the build environment, reaches the binary; nothing else runs go.
func TestBuildRebuildsWhatChanged(t *testing.T) {
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	if os.Getenv("GOCACHE") == "" {
		// The default build cache lives under the user cache directory,
		// which moves below; keep go's where it is.
		t.Setenv("GOCACHE", filepath.Join(cache, "go-build"))
	}
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	mod := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(mod, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/tb\n\ngo 1.24\n")
	write("main.go", "package main\n\nfunc main() { println(\"one\") }\n")
	t.Chdir(mod)
	run := func(env []string, want string, wantGo int64) {
		t.Helper()
		before := goBuilds.Load()
		bin, err := Build("example.com/tb", env)
		if err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(bin).CombinedOutput()
		if got := strings.TrimSpace(string(out)); err != nil || got != want {
			t.Fatalf("the binary printed %q (%v), want %q", got, err, want)
		}
		if n := goBuilds.Load() - before; n != wantGo {
			t.Fatalf("Build ran go %d times, want %d", n, wantGo)
		}
	}
	run(nil, "one", 1)
	run(nil, "one", 0)
	write("main.go", "package main\n\nimport _ \"example.com/tb/sub\"\n\nfunc main() { println(\"two\") }\n")
	if err := os.Mkdir(filepath.Join(mod, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	write("sub/x.go", "package sub\n\nfunc init() { println(\"sub\") }\n")
	run(nil, "sub\ntwo", 1)
	// Each of these changes one file that go reads and nothing else: a
	// file in a directory below the root, then a new file beside main.go.
	write("sub/x.go", "package sub\n\nfunc init() { println(\"sub2\") }\n")
	run(nil, "sub2\ntwo", 1)
	write("extra.go", "package main\n\nfunc init() { println(\"extra\") }\n")
	run(nil, "sub2\nextra\ntwo", 1)
	run(nil, "sub2\nextra\ntwo", 0)
	// The environment: GOFLAGS changes what go builds.
	t.Setenv("GOFLAGS", "-tags=never")
	run(nil, "sub2\nextra\ntwo", 1)
}
