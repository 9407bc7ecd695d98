package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	runnerv1 "gitea.dev/actions-proto-go/runner/v1"

	"github.com/forgeload/forgeload/internal/pkg/forgetest"
)

// TestE2ECommentToken: on a fork's pull request the forge refuses the
// job's read-only token for the comment (403). Without a comment token
// the step warns, naming runner.comment_token_file; with one, the
// comparison is posted with it (by its user), and the token is in no log
// row. A token file other users may read stops the daemon at start.
func TestE2ECommentToken(t *testing.T) {
	parallel(t)
	tg := newTarget(t)
	f := forgetest.New(t, forgetest.WithRegistrationToken("reg-token"))
	f.SeedRun(forgetest.Run{ID: 1, Jobs: []forgetest.RunJob{{ID: "perf",
		// A 2 s baseline p99: the job must pass its threshold against a
		// target on 127.0.0.1 even when a busy box delays it by hundreds
		// of ms; the comparison's posting, not its verdict, is under test.
		Artifacts: map[string][]byte{"forgeload-perf-api": resultZip(t, 2*time.Second)}}}})
	bot := f.UserToken("perf-bot")
	file := filepath.Join(t.TempDir(), "comment-token")
	if err := os.WriteFile(file, []byte(bot+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	payload := "on: pull_request\njobs:\n  perf:\n    runs-on: forgeload\n    steps:\n      - id: api\n        uses: forgeload/load@v1\n        with:\n          target: " + tg.URL + "/\n          total: 10\n          baseline: main\n          thresholds: http_req_duration:p99 < baseline * 1.10\n"
	fork := func(d *daemon, run string) (runnerv1.Result, string) {
		id := f.QueueJob(forgetest.Job{RunsOn: []string{"forgeload"}, Payload: []byte(payload), ReadOnlyToken: true, Context: map[string]any{
			"run_id": run, "ref": "refs/pull/7/head", "event_name": "pull_request",
			"event": map[string]any{"number": 7, "pull_request": map[string]any{"number": 7}},
		}})
		v := waitDone(t, f, id, d)
		return v.Result, strings.Join(v.Log, "\n")
	}

	n := newNode(t, "")
	registered(t, f, n, "e2e-comment-token")
	d := n.startDaemon()
	res, log := fork(d, "10")
	if res != runnerv1.Result_RESULT_SUCCESS || !strings.Contains(log, "::warning::forgeload/load: the comparison was not posted on pull request #7") || !strings.Contains(log, "the forge refused the token: 403") || !strings.Contains(log, "runner.comment_token_file") {
		t.Fatalf("fork's pull request without a comment token: %v, want success and a warning naming runner.comment_token_file:\n%s", res, log)
	}
	if cs := f.Comments("forgeload/demo", 7); len(cs) != 0 {
		t.Fatalf("the read-only token posted %+v", cs)
	}
	d.signal(t, syscall.SIGTERM)
	d.wait(t, 30*time.Second)

	n2 := newNode(t, "  comment_token_file: "+file+"\n")
	registered(t, f, n2, "e2e-comment-token-2")
	d2 := n2.startDaemon()
	for i, run := range []string{"11", "12"} {
		res, log = fork(d2, run)
		want := []string{"posted as comment 1 on pull request #7 with the runner's comment token", "updated in comment 1 on pull request #7 with the runner's comment token"}[i]
		if res != runnerv1.Result_RESULT_SUCCESS || !strings.Contains(log, "posting it with the runner's comment token (runner.comment_token)") || !strings.Contains(log, want) {
			t.Fatalf("run %s with a comment token: %v, want success and %q:\n%s", run, res, want, log)
		}
		if strings.Contains(log, bot) {
			t.Fatalf("the comment token is in the job log:\n%s", log)
		}
	}
	if cs := f.Comments("forgeload/demo", 7); len(cs) != 1 || cs[0].Author != "perf-bot" || cs[0].Edits != 1 || !strings.Contains(cs[0].Body, "| p99 |") {
		t.Fatalf("comments = %+v, want one by perf-bot, edited once", cs)
	}
	d2.signal(t, syscall.SIGTERM)
	d2.wait(t, 30*time.Second)

	if err := os.Chmod(file, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out := n2.forgeload("daemon")
	if code != ExitBadInput || !strings.Contains(out, "runner.comment_token_file "+file+": has mode 0644, so other users may read the token: chmod 600 "+file) || strings.Contains(out, bot) {
		t.Errorf("daemon with a 0644 token file: exit %d, want %d naming the key and chmod 600:\n%s", code, ExitBadInput, out)
	}
}
