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
	again, second, after := build()
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
