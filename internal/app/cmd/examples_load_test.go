package cmd

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// exampleHost is the placeholder host of examples/load: each config points
// at https://<something>.example.com, which the test replaces with a real
// server on 127.0.0.1.
var exampleHost = regexp.MustCompile(`https://[a-z.]*example\.com`)

// TestLoadExamplesRunAgainstLoopback runs every config of examples/load as
// a newcomer would, `forgeload load FILE`, against a healthy server on
// 127.0.0.1 (the example's host replaced, nothing else): each passes its
// own thresholds, and the multi-host one is refused with the reason. The
// runs are cut short (-d 3s, at most 200 requests) and set validity: warn:
// on a busy machine a starved generator is rightly INVALID, which is not
// what this checks.
func TestLoadExamplesRunAgainstLoopback(t *testing.T) {
	parallel(t)
	src := filepath.Join(repoRoot(t), "examples", "load")
	dir := t.TempDir()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(filepath.Join(dir, "bodies"), os.DirFS(filepath.Join(src, "bodies"))); err != nil {
		t.Fatal(err)
	}
	var configs []string
	for _, e := range entries {
		if !e.IsDir() {
			configs = append(configs, e.Name())
		}
	}
	if len(configs) < 7 {
		t.Fatalf("examples/load has %d configs, want the 7 docs/load-config.md lists", len(configs))
	}
	for _, name := range configs {
		t.Run(name, func(t *testing.T) {
			parallelSub(t)
			srv, hits := loadTarget(t)
			b, err := os.ReadFile(filepath.Join(src, name))
			if err != nil {
				t.Fatal(err)
			}
			cfg := filepath.Join(dir, name)
			if err := os.WriteFile(cfg, []byte(exampleHost.ReplaceAllString(string(b), srv.URL)), 0o600); err != nil {
				t.Fatal(err)
			}
			code, stdout, stderr := runMain(t, "load", cfg, "-d", "3s", "--total", "200", "--validity", "warn", "-q", "--results-dir", "")
			if name == "distributed.yaml" {
				if code != ExitBadInput || !strings.Contains(stderr, "distributed.workers is 4") || hits.Load() != 0 {
					t.Errorf("exit %d, want 2 naming distributed.workers, nothing sent; stderr:\n%s", code, stderr)
				}
				return
			}
			if code != ExitOK {
				t.Errorf("exit %d, want 0 (its thresholds pass against a healthy loopback server)\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
			if hits.Load() == 0 {
				t.Errorf("the server saw no request\nstdout:\n%s", stdout)
			}
		})
	}
}
