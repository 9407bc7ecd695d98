package cmd

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		t.Fatalf("repo root not found from the test's directory: %v", err)
	}
	return dir
}

// TestE2EQuickstart runs the README's first command: the quickstart
// workflow against the embedded demo target, through the real binary. Its
// p99 < 250ms gate measures the machine as much as the demo target (on a
// 2-core box at a load average of 20 the generator itself falls behind and
// p99 reaches 800 ms), so the test runs a copy of the example that differs
// in that gate, raised to 30s, in its duration, 3 s instead of 10, and in
// `validity: warn`: a generator starved for seconds on such a box makes
// the run INVALID, rightly, which is not what this test checks (the exact
// count still is: 600 requests, none dropped); everything else is the
// README's.
func TestE2EQuickstart(t *testing.T) {
	parallelLong(t, 4)
	root := repoRoot(t)
	// The run lasts 3 s, not 10: the exact count and the job's flow are
	// the same at 600 requests as at 2,000, and the suite is bound by CPU
	// and by its longest tests.
	wfText := editedExample(t, "quickstart.yml",
		[2]string{"http_req_duration:p99 < 250ms", "http_req_duration:p99 < 30s"},
		[2]string{"          duration: 10s\n", "          duration: 3s\n          validity: warn\n"})
	wf := filepath.Join(t.TempDir(), "quickstart.yml")
	if err := os.WriteFile(wf, []byte(wfText), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	results := t.TempDir()
	cmd := exec.CommandContext(ctx, binPath, "exec", "--demo", "--results-dir", results, wf)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("forgeload exec --demo examples/quickstart.yml: %v\n%s", err, out)
	}
	text := string(out)
	for _, want := range []string{
		"demo target listening on http://127.0.0.1:",
		"Load test summary",
		"Dropped / late arrivals   0 / ",
		"Thresholds: PASS",
		"thresholds passed: true",
		"job perf: success",
	} {
		if !strings.Contains(text, want) {
			t.Fatalf("output lacks %q:\n%s", want, text)
		}
	}
	if !regexp.MustCompile(`over 600 requests`).MatchString(text) {
		t.Fatalf("the quickstart did not send exactly 600 requests (200/s for 3s):\n%s", text)
	}
	// README: the first command prints where its HTML report is.
	report := regexp.MustCompile(`\[perf\] report: (\S+report\.html)`).FindStringSubmatch(text)
	if report == nil || !strings.HasPrefix(report[1], results) {
		t.Fatalf("the quickstart does not say where its report is, under %s:\n%s", results, text)
	}
	if b, err := os.ReadFile(report[1]); err != nil || !strings.Contains(string(b), "<html") {
		t.Errorf("report %s: %v", report[1], err)
	}
}

func TestE2EExecFailingJobAndBadInput(t *testing.T) {
	parallel(t)
	dir := t.TempDir()
	wf := filepath.Join(dir, "wf.yml")
	if err := os.WriteFile(wf, []byte("on: push\njobs:\n  a:\n    runs-on: x\n    steps:\n      - run: exit 4\n  b:\n    needs: a\n    runs-on: x\n    steps:\n      - run: echo never\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (int, string) {
		cmd := exec.Command(binPath, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+t.TempDir())
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		return code, string(out)
	}
	code, out := run("exec", wf)
	if code != ExitFailure || !strings.Contains(out, "■ job b: skipped") || strings.Contains(out, "never\n") {
		t.Fatalf("exec of a failing job: exit %d\n%s", code, out)
	}
	code, out = run("exec", "-j", "nope", wf)
	if code != ExitBadInput || !strings.Contains(out, "no such job; the workflows have: a, b") {
		t.Fatalf("exec -j nope: exit %d\n%s", code, out)
	}
}

// TestE2EExecExpandsMatrix runs a matrix workflow through the binary: one
// job per combination (exclude and include applied), each with its
// values in ${{ matrix }} and its suffix in its name, and a job that needs
// the matrix sees it fail when one of its jobs failed. Before, the job ran
// once and ${{ matrix.rate }} printed [10, 20].
func TestE2EExecExpandsMatrix(t *testing.T) {
	parallel(t)
	dir := t.TempDir()
	wf := filepath.Join(dir, "wf.yml")
	if err := os.WriteFile(wf, []byte(`on: push
jobs:
  perf:
    runs-on: forgeload
    strategy:
      matrix:
        rate: [10, 20]
        mode: [a, b]
        exclude:
          - {rate: 20, mode: b}
        include:
          - {rate: 30, mode: c}
    steps:
      - run: echo "rate=${{ matrix.rate }} mode=${{ matrix.mode }}"
      - run: test "${{ matrix.mode }}" != c
  report:
    needs: perf
    runs-on: forgeload
    steps:
      - run: echo never
`), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binPath, "exec", wf)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	text := string(out)
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != ExitFailure {
		t.Fatalf("exec: %v, want exit 1 (the (c, 30) job fails); output:\n%s", err, text)
	}
	for _, want := range []string{
		"[perf (a, 10)] rate=10 mode=a", "[perf (b, 10)] rate=10 mode=b", "[perf (a, 20)] rate=20 mode=a", "[perf (c, 30)] rate=30 mode=c",
		"■ job perf (a, 10): success", "■ job perf (c, 30): failure", "■ job report: skipped",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "mode=b\n") && strings.Contains(text, "rate=20 mode=b") {
		t.Errorf("the excluded combination ran:\n%s", text)
	}
	if n := strings.Count(text, "▶ job perf"); n != 4 {
		t.Errorf("%d perf jobs ran, want 4:\n%s", n, text)
	}
}

// TestSplitJobsNamesFileAndLine: a mistake in a local workflow file is
// reported at the file's own line, as "wf.yml:7: steps[0]: ...", which
// editors can jump to; before, it read "wf.yml: workflow line 7: ...".
func TestSplitJobsNamesFileAndLine(t *testing.T) {
	parallel(t)
	wf := filepath.Join(t.TempDir(), "wf.yml")
	if err := os.WriteFile(wf, []byte("on: push\njobs:\n  a:\n    runs-on: x\n    steps:\n      - run: a\n        shel: sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := splitJobs(wf)
	if want := wf + `:7: steps[0]: unknown key "shel"; did you mean "shell"?`; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("splitJobs(bad file) = %v, want an error starting %q", err, want)
	}
}

// TestE2EExecSecretSources: --secret NAME reads the environment variable
// NAME and --secret NAME=@FILE the file (one final newline dropped), with
// no warning and the values out of the process's arguments; NAME=VALUE
// still works and warns that ps shows it; a NAME not in the environment
// and an unreadable file are bad input that quote no value.
func TestE2EExecSecretSources(t *testing.T) {
	parallel(t)
	dir := t.TempDir()
	wf := filepath.Join(dir, "wf.yml")
	if err := os.WriteFile(wf, []byte(`on: push
jobs:
  a:
    runs-on: x
    steps:
      - run: |
          test "${{ secrets.FROM_ENV }}" = env-s3cret-value && echo from-env-ok
          test "${{ secrets.FROM_FILE }}" = file-s3cret-value && echo from-file-ok
          test "${{ secrets.INLINE }}" = inline-s3cret-value && echo inline-ok
          echo "shown: ${{ secrets.FROM_ENV }} ${{ secrets.FROM_FILE }}"
`), 0o644); err != nil {
		t.Fatal(err)
	}
	secretFile := filepath.Join(dir, "secret.txt")
	if err := os.WriteFile(secretFile, []byte("file-s3cret-value\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (int, string) {
		cmd := exec.Command(binPath, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+t.TempDir(), "FROM_ENV=env-s3cret-value")
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		return code, string(out)
	}
	code, out := run("exec", "--secret", "FROM_ENV", "--secret", "FROM_FILE=@"+secretFile, "--secret", "INLINE=inline-s3cret-value", wf)
	if code != 0 {
		t.Fatalf("exec with three secrets: exit %d\n%s", code, out)
	}
	for _, want := range []string{"from-env-ok", "from-file-ok", "inline-ok", "shown: *** ***",
		"warning: --secret INLINE=VALUE puts the value in the process list (ps)"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "s3cret") || strings.Count(out, "warning: --secret") != 1 {
		t.Errorf("output shows a secret, or warns about a secret not given on the command line:\n%s", out)
	}
	code, out = run("exec", "--secret", "NOT_SET_ANYWHERE", wf)
	if code != ExitBadInput || !strings.Contains(out, "--secret NOT_SET_ANYWHERE: the environment variable NOT_SET_ANYWHERE is not set") {
		t.Errorf("exec --secret of an unset variable: exit %d\n%s", code, out)
	}
	code, out = run("exec", "--secret", "A=@"+filepath.Join(dir, "missing"), wf)
	if code != ExitBadInput || !strings.Contains(out, "--secret A=@"+filepath.Join(dir, "missing")+": read the secret:") {
		t.Errorf("exec --secret of a missing file: exit %d\n%s", code, out)
	}
}

// TestE2EExecJobIfSeesNeeds: exec hands a job the needed jobs' results and
// lets the executor judge its if:, as the daemon does with a task's needs.
// After a failed gate, an if: failure() rollback and an if: always() notify
// run, a deploy with no if: (success()) is skipped, and so is a job that
// needs the skipped deploy. Before, exec skipped every job whose needs did
// not all succeed without looking at its if:, so rollback never ran.
func TestE2EExecJobIfSeesNeeds(t *testing.T) {
	parallel(t)
	dir := t.TempDir()
	wf := filepath.Join(dir, "wf.yml")
	if err := os.WriteFile(wf, []byte(`on: push
jobs:
  gate:
    runs-on: x
    steps:
      - run: exit 3
  rollback:
    needs: gate
    if: failure()
    runs-on: x
    steps:
      - run: echo "rollback-ran gate=${{ needs.gate.result }}"
  deploy:
    needs: gate
    runs-on: x
    steps:
      - run: echo deploy-ran
  smoke:
    needs: deploy
    runs-on: x
    steps:
      - run: echo smoke-ran
  notify:
    needs: [gate, deploy]
    if: always()
    runs-on: x
    steps:
      - run: echo "notify-ran gate=${{ needs.gate.result }} deploy=${{ needs.deploy.result }}"
`), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binPath, "exec", wf)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	text := string(out)
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != ExitFailure {
		t.Fatalf("exec: %v, want exit 1 (gate fails); output:\n%s", err, text)
	}
	for _, want := range []string{
		"■ job gate: failure",
		"[rollback] rollback-ran gate=failure", "■ job rollback: success",
		"[deploy] job skipped: if: success() (the default) is false", "■ job deploy: skipped",
		"■ job smoke: skipped",
		"[notify] notify-ran gate=failure deploy=skipped", "■ job notify: success",
		"1 of 5 jobs did not succeed",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	for _, never := range []string{"deploy-ran", "smoke-ran"} {
		if strings.Contains(text, never) {
			t.Errorf("a job whose if: is false ran (%q):\n%s", never, text)
		}
	}
}
