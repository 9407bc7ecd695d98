package cmd

// End-to-end tests of the promise that secrets never leave the runner
// unmasked: the real binary, the fake forge, what the forge stores.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	runnerv1 "gitea.dev/actions-proto-go/runner/v1"

	"github.com/forgeload/forgeload/internal/pkg/container/containertest"
	"github.com/forgeload/forgeload/internal/pkg/forgetest"
)

// TestE2EStepEnvHidesDaemonSecrets starts the daemon the way the container
// does (deploy/container/entrypoint.sh registers with the token in the
// environment, then execs the daemon) and runs a job that prints its own
// environment and the daemon's: neither holds the registration token or
// any other variable of the daemon outside the allow-list.
func TestE2EStepEnvHidesDaemonSecrets(t *testing.T) {
	parallel(t)
	const regToken = "reg-t0ken-from-the-env"
	const hostSecret = "h0st-only-s3cret-value"
	f := forgetest.New(t, forgetest.WithRegistrationToken(regToken))
	n := newNode(t, "")
	id := f.QueueJob(forgetest.Job{
		RunsOn: []string{"forgeload"},
		Payload: []byte("on: push\njobs:\n  a:\n    runs-on: forgeload\n    steps:\n" +
			"      - run: env\n" +
			"      - run: tr '\\0' '\\n' < /proc/$PPID/environ\n"),
	})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(repoRoot(t), "deploy", "container", "entrypoint.sh"))
	cmd.Env = []string{
		"PATH=" + filepath.Dir(binPath) + string(os.PathListSeparator) + os.Getenv("PATH"),
		"HOME=" + n.dir,
		"FORGELOAD_DATA_DIR=" + n.dir,
		"FORGELOAD_CONFIG=" + n.cfg,
		"FORGELOAD_INSTANCE=" + f.URL(),
		"FORGELOAD_REGISTRATION_TOKEN=" + regToken,
		"FORGELOAD_ONCE=true",
		"HOST_API_SECRET=" + hostSecret,
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("entrypoint: %v\n%s", err, out)
	}
	v := f.Task(id)
	log := strings.Join(v.Log, "\n")
	if v.Result != runnerv1.Result_RESULT_SUCCESS {
		t.Fatalf("job result %v\n%s\n%s", v.Result, log, out)
	}
	// The two steps did print: the step's own env and the daemon's.
	wantIn(t, "step log", log, "GITHUB_ACTIONS=true")
	wantIn(t, "step log", log, "FORGELOAD_INSTANCE="+f.URL())
	if strings.Contains(log, regToken) {
		t.Fatalf("a run: step read the registration token:\n%s", log)
	}
	if env := strings.Join(stepRows(t, v, 0), "\n"); strings.Contains(env, hostSecret) {
		t.Fatalf("the daemon's HOST_API_SECRET reached a run: step's environment:\n%s", env)
	}
}

// stepRows is the rows of step i, by its log_index and log_length.
func stepRows(t *testing.T, v forgetest.TaskView, i int) []string {
	t.Helper()
	if i >= len(v.Steps) {
		t.Fatalf("step %d: the forge has %d steps", i, len(v.Steps))
	}
	s := v.Steps[i]
	if end := s.LogIndex + s.LogLength; s.LogIndex >= 0 && end <= int64(len(v.Log)) {
		return v.Log[s.LogIndex:end]
	}
	t.Fatalf("step %d: rows %d+%d outside the %d-row log", i, s.LogIndex, s.LogLength, len(v.Log))
	return nil
}

// TestE2ESecretsNeverLeaveUnmasked runs one job through the daemon whose
// steps try each way a secret used to leave unmasked: written to the job
// summary with the task and runtime tokens; in lines far longer than a row
// (every forced cut falls inside a secret or a two-byte character); split
// by stderr output between two halves written to stdout; and quoted with
// %q in an error message.
func TestE2ESecretsNeverLeaveUnmasked(t *testing.T) {
	parallel(t)
	const secret = "sup3r-s3cret-v4lue"
	const quoted = `k3y"with\quote`
	f := forgetest.New(t, forgetest.WithRegistrationToken("reg-token"))
	n := newNode(t, "")
	registered(t, f, n, "e2e-secrets")
	d := n.startDaemon()
	const copies = 30000 // 600,000 bytes on one line
	id := f.QueueJob(forgetest.Job{
		RunsOn:  []string{"forgeload"},
		Secrets: map[string]string{"API_KEY": secret, "QUOTED": quoted},
		Payload: []byte(`on: push
jobs:
  a:
    runs-on: forgeload
    env:
      K: ${{ secrets.API_KEY }}
    steps:
      - run: |
          echo "key $K token $GITHUB_TOKEN runtime $ACTIONS_RUNTIME_TOKEN" >> "$GITHUB_STEP_SUMMARY"
      - run: |
          yes "${K}é" | head -n ` + fmt.Sprint(copies) + ` | tr -d '\n'; echo
      - run: |
          printf 'out %s' "${K:0:9}"
          printf 'err line\n' >&2
          sleep 0.2
          printf '%s\n' "${K:9}"
      - shell: ${{ secrets.QUOTED }}
        run: echo never
        continue-on-error: true
`),
	})
	v := waitDone(t, f, id, d)
	log := strings.Join(v.Log, "\n")
	if v.Result != runnerv1.Result_RESULT_SUCCESS {
		t.Fatalf("job result %v; last rows:\n%s", v.Result, strings.Join(v.Log[max(len(v.Log)-8, 0):], "\n"))
	}
	for _, leak := range []string{secret, v.Token, v.RuntimeToken, "sup3r-s3c", "ret-v4lue", `k3y\"with`} {
		if strings.Contains(log, leak) {
			t.Fatalf("the log reveals %q", leak)
		}
	}
	// 1: the summary is masked like the log.
	sum := f.Summaries()[id]
	wantIn(t, "job summary", sum, "key *** token *** runtime ***")
	for _, leak := range []string{secret, v.Token, v.RuntimeToken} {
		if strings.Contains(sum, leak) {
			t.Fatalf("the job summary reveals %q:\n%s", leak, sum)
		}
	}
	// 2: the long line's rows join to the masked line: no secret in two
	// halves, no character in two U+FFFD.
	rows := stepRows(t, v, 1)
	if len(rows) < 3 {
		t.Fatalf("a 600,000-byte line became %d rows, want it cut", len(rows))
	}
	if got, want := strings.Join(rows[1:], ""), strings.Repeat("***é", copies); got != want {
		i := 0
		for i < min(len(got), len(want)) && got[i] == want[i] {
			i++
		}
		t.Fatalf("long line rows differ from the masked line at byte %d: %.60q", i, got[max(i-20, 0):])
	}
	// 4: stderr between the halves does not split the stdout line.
	out := strings.Join(stepRows(t, v, 2), "\n")
	wantIn(t, "step 3", out, "out ***")
	wantIn(t, "step 3", out, "err line")
	// 3: the %q form in the error is masked.
	wantIn(t, "step 4", strings.Join(stepRows(t, v, 3), "\n"), `shell "***" is not one of`)
}

func wantIn(t *testing.T, what, got, want string) {
	t.Helper()
	if !strings.Contains(got, want) {
		t.Fatalf("%s lacks %q:\n%s", what, want, got)
	}
}

// TestE2EJobContainerStreams: in a job container too, stderr output
// between two halves of a secret written to stdout does not split it.
func TestE2EJobContainerStreams(t *testing.T) {
	parallel(t)
	img := containertest.Image(t)
	n := newDockerNode(t, "e2e-ctrstreams", "")
	d := n.startDaemon()
	id := n.f.QueueJob(forgetest.Job{
		RunsOn:  []string{"forgeload"},
		Secrets: map[string]string{"API_KEY": "sup3r-s3cret-v4lue"},
		Payload: []byte(`on: push
jobs:
  a:
    runs-on: forgeload
    container:
      image: ` + img + `
    env:
      K: ${{ secrets.API_KEY }}
    steps:
      - run: |
          printf 'out %s' "$(echo "$K" | cut -c1-9)"
          printf 'err line\n' >&2
          sleep 0.2
          printf '%s\n' "$(echo "$K" | cut -c10-)"
`),
	})
	v := waitDone(t, n.f, id, d)
	log := strings.Join(v.Log, "\n")
	if v.Result != runnerv1.Result_RESULT_SUCCESS {
		t.Fatalf("container job: %v\n%s", v.Result, log)
	}
	for _, leak := range []string{"sup3r-s3c", "ret-v4lue"} {
		if strings.Contains(log, leak) {
			t.Fatalf("the log reveals %q:\n%s", leak, log)
		}
	}
	wantIn(t, "log", log, "out ***")
	wantIn(t, "log", log, "err line")
}
