package cmd

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/forgeload/forgeload/internal/pkg/forgetest"
)

// A daemon killed with -9 mid-job leaves the job's task directory (its
// workspace, and any secret a step wrote there); the next daemon of the
// registration removes it before it takes a job, without following a
// symlink the job left in it.
func TestE2EStaleTaskDirRemovedAtStart(t *testing.T) {
	parallel(t)
	f := forgetest.New(t, forgetest.WithRegistrationToken("reg-token"))
	n := newNode(t, "")
	registered(t, f, n, "e2e-stale-dirs")
	host := t.TempDir()
	victim := filepath.Join(host, "victim")
	if err := os.WriteFile(victim, []byte("host\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	d := n.startDaemon()
	id := f.QueueJob(forgetest.Job{RunsOn: []string{"forgeload"}, Payload: []byte(`on: push
jobs:
  a:
    runs-on: forgeload
    steps:
      - run: |
          echo "the secret" > secret.txt
          ln -s ` + host + ` host
          echo "task-temp=$RUNNER_TEMP"
          sleep 60
`)})
	line := regexp.MustCompile(`task-temp=(/\S+)`)
	var m []string
	waitForOr(t, "the step to start", 30*time.Second, func() bool {
		m = line.FindStringSubmatch(strings.Join(f.Task(id).Log, "\n"))
		return m != nil
	}, d.out.String)
	taskDir := filepath.Dir(m[1])
	d.signal(t, syscall.SIGKILL)
	d.wait(t, 30*time.Second)
	if _, err := os.Stat(filepath.Join(taskDir, "workspace", "secret.txt")); err != nil {
		t.Fatalf("kill -9 left no task directory behind (%v); the restart test would prove nothing", err)
	}

	d = n.startDaemon()
	waitForOr(t, "the stale task directory to be removed", 30*time.Second, func() bool {
		_, err := os.Lstat(taskDir)
		return os.IsNotExist(err) && strings.Contains(d.out.String(), "removed 1 task directories that an earlier run of this runner left")
	}, d.out.String)
	if b, err := os.ReadFile(victim); err != nil || string(b) != "host\n" {
		t.Fatalf("the host file behind the job's symlink: %q, %v; want it kept", b, err)
	}
}
