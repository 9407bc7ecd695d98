package run

import (
	"fmt"
	"github.com/forgeload/forgeload/internal/pkg/jobrun"
	"os"
	"path/filepath"
	"strings"
	"testing"

	runnerv1 "gitea.dev/actions-proto-go/runner/v1"

	"github.com/forgeload/forgeload/internal/pkg/container"
	"github.com/forgeload/forgeload/internal/pkg/container/containertest"
)

// hostFiles is a directory outside every task directory, standing for the
// host: a file, a directory holding files named like a step's env files,
// and a path where nothing is.
type hostFiles struct {
	dir, file, envDir, absent string
}

const hostText = "the host's own content\n"

func newHostFiles(t *testing.T) hostFiles {
	t.Helper()
	d := t.TempDir()
	h := hostFiles{dir: d, file: filepath.Join(d, "victim"), envDir: filepath.Join(d, "etc"), absent: filepath.Join(d, "absent")}
	if err := os.Mkdir(h.envDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{h.file, filepath.Join(h.envDir, "env"), filepath.Join(h.envDir, "output"), filepath.Join(h.envDir, "path"), filepath.Join(h.envDir, "summary.md")} {
		if err := os.WriteFile(p, []byte(hostText), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

// untouched fails t when any host file changed or a new one appeared.
func (h hostFiles) untouched(t *testing.T, log string) {
	t.Helper()
	for _, p := range []string{h.file, filepath.Join(h.envDir, "env"), filepath.Join(h.envDir, "output"), filepath.Join(h.envDir, "path"), filepath.Join(h.envDir, "summary.md")} {
		b, err := os.ReadFile(p)
		if err != nil || string(b) != hostText {
			t.Fatalf("host file %s after the job: %q, %v; want it untouched. Log:\n%s", p, b, err, log)
		}
	}
	ents, err := os.ReadDir(h.dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 2 {
		t.Fatalf("the job made the daemon create files in %s on the host: %v. Log:\n%s", h.dir, ents, log)
	}
}

// A container: job mounts its task directory read-write. Symlinks it
// plants where the daemon writes the next step's script and env files
// (temp/step-N.sh, files/step-N) must not make the daemon write to the
// host: the next step fails, naming the path, and no host file changes.
func TestContainerJobCannotWriteThroughSymlinks(t *testing.T) {
	t.Parallel()
	img := containertest.Image(t)
	eng := containertest.Engine(t)
	cases := []struct {
		name  string
		plant func(h hostFiles) string // the first step's script
		want  string                   // in the second step's error
	}{
		{"script at a host file", func(h hostFiles) string {
			return fmt.Sprintf(`busybox ln -s %s "$RUNNER_TEMP/step-1.sh"`, h.file)
		}, "temp/step-1.sh"},
		{"script at a host path where nothing is", func(h hostFiles) string {
			return fmt.Sprintf(`busybox ln -s %s "$RUNNER_TEMP/step-1.sh"`, h.absent)
		}, "temp/step-1.sh"},
		{"script through a relative link", func(h hostFiles) string {
			return fmt.Sprintf(`busybox ln -s "$(echo "$RUNNER_TEMP" | busybox sed 's|^/||; s|[^/]*|..|g')%s" "$RUNNER_TEMP/step-1.sh"`, h.file)
		}, "temp/step-1.sh"},
		{"env files at a host directory", func(h hostFiles) string {
			return fmt.Sprintf(`busybox ln -s %s "$(busybox dirname "$(busybox dirname "$GITHUB_ENV")")/step-1"`, h.envDir)
		}, "files/step-1"},
		{"the temp directory at a host directory", func(h hostFiles) string {
			return fmt.Sprintf(`busybox rm -r "$RUNNER_TEMP" && busybox ln -s %s "$RUNNER_TEMP"`, h.dir)
		}, "temp/step-1.sh"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			host := newHostFiles(t)
			h := newHarness(t)
			v := h.run(fmt.Sprintf(`
on: push
jobs:
  a:
    runs-on: forgeload
    container:
      image: %s
    steps:
      - run: |
          %s
      - run: echo second step ran
`, img, c.plant(host)), Options{Config: jobrun.Config{Containers: eng, PullPolicy: container.PullNever}})
			log := logText(v)
			host.untouched(t, log)
			if v.Result != runnerv1.Result_RESULT_FAILURE || len(v.Steps) < 2 || v.Steps[1].Result != runnerv1.Result_RESULT_FAILURE {
				t.Fatalf("result = %v, want the second step and the job to fail; log:\n%s", v.Result, log)
			}
			wantContains(t, "second step's log", strings.Join(stepLog(t, v, 1), "\n"), c.want)
			if strings.Contains(log, "\nsecond step ran") {
				t.Fatalf("the second step ran:\n%s", log)
			}
		})
	}
}

// A step's env files are read back inside the task directory: a step
// that swaps its files directory for a symlink to a host directory does
// not make the daemon read the host's files as its outputs or env.
func TestEnvFilesReadInsideTaskDir(t *testing.T) {
	t.Parallel()
	host := newHostFiles(t)
	if err := os.WriteFile(filepath.Join(host.envDir, "output"), []byte("leak=from the host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t)
	v := h.run(fmt.Sprintf(`
on: push
jobs:
  a:
    runs-on: forgeload
    steps:
      - id: s
        run: |
          d=$(dirname "$GITHUB_OUTPUT")
          rm -r "$d" && ln -s %s "$d"
      - if: always()
        run: echo "leaked=${{ steps.s.outputs.leak }}"
`, host.envDir), Options{})
	log := logText(v)
	if strings.Contains(log, "leaked=from the host") {
		t.Fatalf("the daemon read a host file as the step's output:\n%s", log)
	}
	if len(v.Steps) < 1 || v.Steps[0].Result != runnerv1.Result_RESULT_FAILURE {
		t.Fatalf("the step that swapped its env files: %v, want failure; log:\n%s", v.Steps, log)
	}
	wantContains(t, "first step's log", strings.Join(stepLog(t, v, 0), "\n"), "files/step-0/env in the task directory")
}

// A runner of a registration makes its task directories in a directory of
// its own, and RemoveStaleTaskDirs removes those a killed daemon left
// there: none of another registration's, nothing a symlink in them points
// at, nothing that is not a task directory.
func TestRemoveStaleTaskDirs(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	host := newHostFiles(t)
	h := newHarness(t)
	r := h.runner(Options{Config: jobrun.Config{WorkDir: work, ProcessOwner: "registration-1"}})
	v := h.run(`
on: push
jobs:
  a:
    runs-on: forgeload
    steps:
      - run: echo "temp=$RUNNER_TEMP"
`, Options{Config: jobrun.Config{WorkDir: work, ProcessOwner: "registration-1"}})
	own := taskRoot(work, "registration-1")
	wantContains(t, "log", logText(v), "temp="+own+string(filepath.Separator)+"task-")

	other := taskRoot(work, "registration-2")
	mk := func(p, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	stale := filepath.Join(own, "task-7-123")
	mk(filepath.Join(stale, "workspace", "secret.txt"), "s3cret")
	mk(filepath.Join(stale, "files", "event.json"), "{}")
	for target, link := range map[string]string{
		host.envDir:  filepath.Join(stale, "workspace", "hostdir"),
		host.file:    filepath.Join(stale, "temp", "step-1.sh"),
		host.dir:     filepath.Join(own, "task-8-link"),
		"../../../x": filepath.Join(stale, "files", "up"),
	} {
		if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(stale, "files"), 0o500); err != nil {
		t.Fatal(err)
	}
	mk(filepath.Join(own, "notes"), "not a task directory")
	mk(filepath.Join(other, "task-9-456", "workspace", "x"), "another runner's")

	removed, err := r.RemoveStaleTaskDirs()
	if err != nil {
		t.Fatalf("RemoveStaleTaskDirs: %v", err)
	}
	want := []string{stale, filepath.Join(own, "task-8-link")}
	if strings.Join(removed, ",") != strings.Join(want, ",") {
		t.Errorf("removed %v, want %v", removed, want)
	}
	ents, _ := os.ReadDir(own)
	if len(ents) != 1 || ents[0].Name() != "notes" {
		t.Errorf("left in the runner's directory: %v, want only notes", ents)
	}
	if _, err := os.Stat(filepath.Join(other, "task-9-456", "workspace", "x")); err != nil {
		t.Errorf("another registration's task directory: %v, want it kept", err)
	}
	host.untouched(t, "")

	// A runner with no owner (forgeload exec) removes nothing.
	if removed, err := h.runner(Options{Config: jobrun.Config{WorkDir: other}}).RemoveStaleTaskDirs(); len(removed) != 0 || err != nil {
		t.Errorf("RemoveStaleTaskDirs without an owner = %v, %v; want nothing", removed, err)
	}
}

// A load step reads its config inside the workspace the daemon made, even
// when an earlier step replaced the workspace with a symlink to the host.
func TestLoadConfigReadInsideTaskDir(t *testing.T) {
	t.Parallel()
	host := t.TempDir()
	if err := os.WriteFile(filepath.Join(host, "api.yaml"), []byte("host_only_key: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t)
	v := h.run(fmt.Sprintf(`
on: push
jobs:
  a:
    runs-on: forgeload
    steps:
      - run: cd .. && mv workspace old && ln -s %s workspace
      - uses: forgeload/load@v1
        with:
          config: api.yaml
`, host), Options{})
	log := logText(v)
	if strings.Contains(log, "host_only_key") || v.Result != runnerv1.Result_RESULT_FAILURE {
		t.Fatalf("result %v; the load step read the host's file, or did not fail:\n%s", v.Result, log)
	}
	wantContains(t, "load step's log", strings.Join(stepLog(t, v, 1), "\n"), "open workspace in the task directory")
}
