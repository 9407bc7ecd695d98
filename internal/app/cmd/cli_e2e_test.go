package cmd

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestE2ECLIBadInputExits2 runs the binary with the bad input a new user
// types: every flag error exits 2 with a message naming the flag, a
// non-number given to a numeric flag is an error (it was ignored), a flag
// taken as a file name is refused (it wrote a file named -q), and an
// output path that cannot be written is reported before anything is sent.
func TestE2ECLIBadInputExits2(t *testing.T) {
	parallel(t)
	srv, hits := loadTarget(t)
	n := newNode(t, "")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"load", "--bogus"}, "unknown flag: --bogus"},
		{[]string{"load", "--target", srv.URL, "--total", "1", "-c", "abc"}, `concurrency: "abc" is not a whole number`},
		{[]string{"load", "--target", srv.URL, "--total", "1", "-c", "50.5"}, `concurrency: "50.5" is not a whole number`},
		{[]string{"load", "--target", srv.URL, "--total", "1.5"}, `total: "1.5" is not a whole number`},
		{[]string{"load", "--target", srv.URL, "--total", "1", "--progress-interval", "soon"}, `"soon" for "--progress-interval"`},
		{[]string{"load", "--target", srv.URL, "--total", "1", "--markdown-output", "-q"}, `--markdown-output "-q": that is a flag`},
		{[]string{"load", "--target", srv.URL, "--total", "1", "-q", "--json-output", filepath.Join(n.dir, "no", "such", "dir.json")}, "--json-output: open"},
		{[]string{"load", "extra"}, `read load config extra`}, // a config given as the argument
		{[]string{"nope"}, `unknown command "nope"`},
		{[]string{"config", "nope"}, `unknown command "nope" for "forgeload config"`},
		{[]string{"daemon", "--bogus"}, "unknown flag: --bogus"},
		{[]string{"register", "--wait", "forever"}, `"forever" for "--wait"`},
	} {
		code, out := n.forgeload(tc.args...)
		if code != ExitBadInput || !strings.Contains(out, tc.want) {
			t.Errorf("forgeload %v: exit %d, want 2 and %q; output:\n%s", tc.args, code, tc.want, out)
		}
	}
	if _, err := os.Stat(filepath.Join(n.dir, "-q")); err == nil {
		t.Error("--markdown-output -q wrote a file named -q")
	}
	if got := hits.Load(); got != 0 {
		t.Errorf("the target saw %d requests, want none: bad input is refused before the run", got)
	}
}

// TestE2ECLIValidate checks `config validate FILE` (daemon config) and
// `load validate FILE` (load config): 0 and a line saying so for a good
// file, 2 and the key and line for a bad one. `config validate` printed
// help and exited 0.
func TestE2ECLIValidate(t *testing.T) {
	parallel(t)
	n := newNode(t, "")
	write := func(name, text string) string {
		p := filepath.Join(n.dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	goodLoad := write("good.yaml", "target: http://127.0.0.1:1/\nrate: 10\nduration: 1s\nthresholds:\n  - 'http_req_duration:p99 < 1s'\n")
	badLoad := write("bad.yaml", "target: http://127.0.0.1:1/\nratee: 10\n")
	badCfg := write("bad-config.yaml", "runner:\n  capacity: 1\nload:\n  max_rat: 5\n")
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"config", "validate", n.cfg}, ExitOK, "valid daemon config"},
		{[]string{"config", "validate"}, ExitOK, "valid daemon config"}, // the -c file
		{[]string{"config", "validate", badCfg}, ExitBadInput, "max_rat"},
		{[]string{"config", "validate", filepath.Join(n.dir, "missing.yaml")}, ExitBadInput, "missing.yaml"},
		{[]string{"load", "validate", goodLoad}, ExitOK, "valid load config"},
		{[]string{"load", "validate", badLoad}, ExitBadInput, "ratee"},
		{[]string{"load", "validate"}, ExitBadInput, "accepts 1 arg"},
	} {
		code, out := n.forgeload(tc.args...)
		if code != tc.code || !strings.Contains(out, tc.want) {
			t.Errorf("forgeload %v: exit %d, want %d and %q; output:\n%s", tc.args, code, tc.code, tc.want, out)
		}
	}
}

// TestE2ECLIVersion checks that `forgeload version`, `--version` and `-v`
// give the version, commit, build date, Go version and forge protocol.
func TestE2ECLIVersion(t *testing.T) {
	parallel(t)
	n := newNode(t, "")
	for _, args := range [][]string{{"version"}, {"--version"}, {"-v"}} {
		code, out := n.forgeload(args...)
		if code != ExitOK {
			t.Errorf("forgeload %v: exit %d; output:\n%s", args, code, out)
		}
		for _, want := range []string{"forgeload dev", "commit:", "built:", "go:       go1.", "protocol: runner.v1 (actions-proto-go "} {
			if !strings.Contains(out, want) {
				t.Errorf("forgeload %v lacks %q:\n%s", args, want, out)
			}
		}
	}
}

// TestInstallPathIsForgeload checks that `go install ./cmd/forgeload`
// installs a binary named forgeload (./cmd/runner installs "runner").
func TestInstallPathIsForgeload(t *testing.T) {
	parallel(t)
	out, err := exec.Command("go", "list", "-f", "{{.Name}} {{.Target}}", "github.com/forgeload/forgeload/cmd/forgeload").CombinedOutput()
	if err != nil {
		t.Fatalf("go list ./cmd/forgeload: %v\n%s", err, out)
	}
	name, target, _ := strings.Cut(strings.TrimSpace(string(out)), " ")
	if name != "main" || strings.TrimSuffix(filepath.Base(target), ".exe") != "forgeload" {
		t.Errorf("./cmd/forgeload is package %q installed as %q; want main installed as forgeload", name, target)
	}
}

// TestBuildsLeaveOutGRPCTrace checks that every build of forgeload the
// project documents or scripts (the Dockerfile, docs/install.md's commands,
// the bench scripts) has -tags grpcnotrace, and that a build with it links
// no golang.org/x/net/trace: that package's init registers /debug/requests
// pages rendered with html/template, which make the linker keep every
// exported method (docs/dependencies.md).
func TestBuildsLeaveOutGRPCTrace(t *testing.T) {
	parallel(t)
	builds := 0
	for _, f := range []string{"Dockerfile", "docs/install.md", "bench/run.sh", "bench/commits.sh", "bench/protocols.sh", "bench/cluster/run.sh"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "..", f))
		if err != nil {
			t.Fatal(err)
		}
		inCode := !strings.HasSuffix(f, ".md") // in a .md file, only the commands of ``` blocks
		found := 0
		for _, line := range strings.Split(strings.ReplaceAll(string(b), "\\\n", " "), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "```") && strings.HasSuffix(f, ".md") {
				inCode = !inCode
				continue
			}
			if !inCode || !strings.Contains(line, "go build") && !strings.Contains(line, "go install") {
				continue
			}
			for _, pkg := range []string{"./cmd/forgeload", "./cmd/runner", "./bench/cluster"} {
				for _, field := range strings.Fields(line) {
					if strings.TrimRight(field, `)"`) != pkg {
						continue
					}
					found++
					if !strings.Contains(line, "grpcnotrace") {
						t.Errorf("%s builds %s without -tags grpcnotrace: %s", f, pkg, strings.Join(strings.Fields(line), " "))
					}
				}
			}
		}
		if found == 0 {
			t.Errorf("%s: no build of forgeload found; update this test if it moved", f)
		}
		builds += found
	}
	out, err := exec.Command("go", "tool", "nm", binPath).CombinedOutput()
	if err != nil {
		t.Fatalf("go tool nm %s: %v\n%s", binPath, err, out)
	}
	if strings.Contains(string(out), " golang.org/x/net/trace.") {
		t.Errorf("the test binary, built with -tags %s, links golang.org/x/net/trace; something else imports it: go list -deps -tags %s ./cmd/forgeload", buildTags, buildTags)
	}
	t.Logf("%d documented builds checked", builds)
}
