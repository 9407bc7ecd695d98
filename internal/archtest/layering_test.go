package archtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

const module = "github.com/forgeload/forgeload"

// pkgInfo is the part of `go list -json` the rules read.
type pkgInfo struct {
	ImportPath                string
	Dir                       string
	Imports, Deps             []string
	TestGoFiles, XTestGoFiles []string
}

// modulePackages is every package of the module, from one `go list` run
// from the module root that all the rules share.
var modulePackages = sync.OnceValues(func() ([]pkgInfo, error) {
	cmd := exec.Command("go", "list", "-json=ImportPath,Dir,Imports,Deps,TestGoFiles,XTestGoFiles", "./...")
	cmd.Dir = "../.."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list ./...: %v\n%s", err, stderr.String())
	}
	var pkgs []pkgInfo
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p pkgInfo
		if err := dec.Decode(&p); err != nil {
			return nil, fmt.Errorf("decode go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs, nil
})

// listPackages returns the module's packages under dir ("internal/pkg",
// "cmd"; "" for all), failing the test if there are none.
func listPackages(t *testing.T, dir string) []pkgInfo {
	t.Helper()
	all, err := modulePackages()
	if err != nil {
		t.Fatal(err)
	}
	var pkgs []pkgInfo
	for _, p := range all {
		if dir == "" || p.ImportPath == module+"/"+dir || strings.HasPrefix(p.ImportPath, module+"/"+dir+"/") {
			pkgs = append(pkgs, p)
		}
	}
	if len(pkgs) == 0 {
		t.Fatalf("go list found no package under %q", dir)
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
	for _, p := range listPackages(t, "internal/pkg") {
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
	for _, p := range listPackages(t, "internal/pkg/load") {
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
		module + "/internal/pkg/testbin",
		module + "/internal/pkg/container/containertest",
		module + "/internal/pkg/load/loadtarget",
		"testing",
		"net/http/httptest",
	}
	for _, p := range listPackages(t, "cmd") {
		if d, bad := forbidden(p.Deps, fakes); bad {
			t.Errorf("%s links %s: test fakes and the testing package must stay out of the binary", p.ImportPath, d)
		}
	}
}

func TestBenchDoesNotImportApp(t *testing.T) {
	for _, p := range listPackages(t, "bench") {
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
	withTests := 0
	for _, p := range listPackages(t, "") {
		files := append(slices.Clone(p.TestGoFiles), p.XTestGoFiles...)
		if len(files) == 0 || p.ImportPath == module+"/internal/pkg/testmain" {
			continue
		}
		withTests++
		found := false
		for _, f := range files {
			src, err := os.ReadFile(filepath.Join(p.Dir, f))
			if err != nil {
				t.Fatal(err)
			}
			found = found || bytes.Contains(src, []byte("testmain.Run(m)")) || bytes.Contains(src, []byte("testmain.RunParallel(m, ")) || bytes.Contains(src, []byte("testmain.NoRaceExitSleep()"))
		}
		if !found {
			t.Errorf("%s: no test file calls testmain: add testmain_test.go with func TestMain(m *testing.M) { testmain.Run(m) }, or call testmain.NoRaceExitSleep() first in its own TestMain", p.ImportPath)
		}
	}
	if withTests < 10 {
		t.Fatalf("go list found %d packages with tests, want the module's dozens", withTests)
	}
}

// TestExecutorOwnsItsReporter: the step executor (internal/pkg/jobrun)
// reports through its own Reporter interface, never the forge reporter's
// type, so that it runs a job for any sink (internal/app/run gives it the
// forge's report).
func TestExecutorOwnsItsReporter(t *testing.T) {
	for _, p := range listPackages(t, "internal/pkg/jobrun") {
		if d, bad := forbidden(p.Imports, []string{module + "/internal/pkg/report"}); bad {
			t.Errorf("%s imports %s: the executor logs through its own jobrun.Reporter; assert the forge reporter implements it in internal/app/run", p.ImportPath, d)
		}
	}
}
