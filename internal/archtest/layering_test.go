package archtest

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const module = "github.com/forgeload/forgeload"

// pkgInfo is the part of `go list -json` the rules read.
type pkgInfo struct {
	ImportPath string
	Imports    []string
	Deps       []string
}

// listPackages runs `go list -json` on patterns from the module root.
func listPackages(t *testing.T, patterns ...string) []pkgInfo {
	t.Helper()
	args := append([]string{"list", "-json=ImportPath,Imports,Deps"}, patterns...)
	cmd := exec.Command("go", args...)
	cmd.Dir = "../.."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s: %v\n%s", strings.Join(patterns, " "), err, stderr.String())
	}
	var pkgs []pkgInfo
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p pkgInfo
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("decode go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) == 0 {
		t.Fatalf("go list %s matched no package", strings.Join(patterns, " "))
	}
	return pkgs
}

// forbidden reports the first dependency of p (direct or not) that starts with
// one of the prefixes.
func forbidden(deps []string, prefixes []string) (string, bool) {
	for _, d := range deps {
		for _, pre := range prefixes {
			if d == pre || strings.HasPrefix(d, pre+"/") {
				return d, true
			}
		}
	}
	return "", false
}

func TestPkgDoesNotImportApp(t *testing.T) {
	for _, p := range listPackages(t, "./internal/pkg/...") {
		if d, bad := forbidden(p.Imports, []string{module + "/internal/app", module + "/cmd"}); bad {
			t.Errorf("%s imports %s: internal/pkg must not import internal/app or cmd (move the shared code down into internal/pkg)", p.ImportPath, d)
		}
	}
}

func TestEngineImportsNoInfrastructure(t *testing.T) {
	infra := []string{
		module + "/internal/pkg/client",
		module + "/internal/pkg/report",
		module + "/internal/pkg/forgetest",
		module + "/internal/pkg/cluster",
		module + "/internal/pkg/metrics",
		module + "/internal/pkg/container",
		"connectrpc.com/connect",
		"gitea.dev/actions-proto-go",
		"code.gitea.io/actions-proto-go",
		"github.com/redis/go-redis",
		"github.com/prometheus",
		"github.com/docker",
		"github.com/moby",
	}
	for _, p := range listPackages(t, "./internal/pkg/load/...") {
		if d, bad := forbidden(p.Deps, infra); bad {
			t.Errorf("%s depends on %s: the engine (internal/pkg/load/...) must not reach forge, Redis, Docker or Prometheus code; define a small interface on the engine side instead", p.ImportPath, d)
		}
	}
}

func TestBinaryLinksNoTestFake(t *testing.T) {
	fakes := []string{
		module + "/internal/pkg/forgetest",
		module + "/internal/pkg/redistest",
		module + "/internal/pkg/dnstest",
		module + "/internal/pkg/testmain",
		"testing",
		"net/http/httptest",
	}
	for _, p := range listPackages(t, "./cmd/...") {
		if d, bad := forbidden(p.Deps, fakes); bad {
			t.Errorf("%s links %s: test fakes and the testing package must stay out of the binary", p.ImportPath, d)
		}
	}
}

func TestBenchDoesNotImportApp(t *testing.T) {
	for _, p := range listPackages(t, "./bench/...") {
		if d, bad := forbidden(p.Imports, []string{module + "/internal/app", module + "/cmd"}); bad {
			t.Errorf("%s imports %s: bench/ measures the packages of internal/pkg, not the application layer (use or move the code into internal/pkg, e.g. loadrun)", p.ImportPath, d)
		}
	}
}

// TestEveryTestBinaryDropsRaceExitSleep: each package's tests start with
// testmain, so that none of them sleeps the race runtime's second at exit
// (see internal/pkg/testmain). A package added without it costs every run
// of the suite a second.
func TestEveryTestBinaryDropsRaceExitSleep(t *testing.T) {
	cmd := exec.Command("go", "list", "-f", "{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}}\t{{.Dir}}\t{{join .TestGoFiles \",\"}},{{join .XTestGoFiles \",\"}}{{end}}", "./...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) < 10 {
		t.Fatalf("go list found %d packages with tests, want the module's dozens:\n%s", len(lines), out)
	}
	for _, line := range lines {
		path, rest, _ := strings.Cut(line, "\t")
		dir, files, _ := strings.Cut(rest, "\t")
		found := false
		for _, f := range strings.Split(files, ",") {
			if f == "" {
				continue
			}
			src, err := os.ReadFile(filepath.Join(dir, f))
			if err != nil {
				t.Fatal(err)
			}
			found = found || bytes.Contains(src, []byte("testmain.Run(m)")) || bytes.Contains(src, []byte("testmain.NoRaceExitSleep()"))
		}
		if !found && path != module+"/internal/pkg/testmain" {
			t.Errorf("%s: no test file calls testmain: add testmain_test.go with func TestMain(m *testing.M) { testmain.Run(m) }, or call testmain.NoRaceExitSleep() first in its own TestMain", path)
		}
	}
}
