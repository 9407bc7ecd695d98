package cmd

import (
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forgeload/forgeload/internal/pkg/container/containertest"
)

// execWorkflow runs `forgeload exec` on the workflow text in a new
// directory (files are written there first, by relative path) and returns
// its exit code and output. args come before the workflow's path.
func execWorkflow(t *testing.T, workflow string, files map[string]string, args ...string) (int, string) {
	t.Helper()
	dir := t.TempDir()
	for p, body := range files {
		p = filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	wf := filepath.Join(dir, "wf.yml")
	if err := os.WriteFile(wf, []byte(workflow), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binPath, append(append([]string{"exec"}, args...), wf)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("exec: %v", err)
	}
	return code, string(out)
}

// TestE2EExecChecksStepsFirst: forgeload exec reports a step it cannot run
// before any step runs, as the daemon does. Before, the first step ran.
func TestE2EExecChecksStepsFirst(t *testing.T) {
	parallel(t)
	code, out := execWorkflow(t, `on: push
jobs:
  build:
    runs-on: x
    steps:
      - run: echo first-step-ran
      - uses: actions/setup-go@v5
`, nil)
	if code != ExitFailure || strings.Contains(out, "first-step-ran") {
		t.Fatalf("exit %d; output:\n%s", code, out)
	}
	for _, want := range []string{
		`step 2 "Run actions/setup-go@v5" uses "actions/setup-go@v5": the task carries no default actions URL (Gitea's DEFAULT_ACTIONS_URL; a local run has none)`,
		"check that actions/setup-go exists on the forge with the ref v5",
		"install Go on the runner host",
		"so none of its steps ran",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestE2EExecLocalCompositeAction: forgeload exec runs a local composite
// action of the repository it runs in, after actions/checkout copied it
// into the workspace. Before, the job was refused.
func TestE2EExecLocalCompositeAction(t *testing.T) {
	parallel(t)
	code, out := execWorkflow(t, `on: push
jobs:
  build:
    runs-on: x
    steps:
      - uses: actions/checkout@v4
      - id: greet
        uses: ./.gitea/actions/greet
        with:
          who: world
      - run: echo "got ${{ steps.greet.outputs.message }}"
`, map[string]string{".gitea/actions/greet/action.yml": `name: greet
inputs:
  who:
    required: true
  greeting:
    default: hello
outputs:
  message:
    value: ${{ steps.say.outputs.message }}
runs:
  using: composite
  steps:
    - id: say
      shell: bash
      run: |
        echo "${{ inputs.greeting }}, ${{ inputs.who }}"
        echo "message=greeted ${{ inputs.who }}" >> "$GITHUB_OUTPUT"
`})
	if code != 0 {
		t.Fatalf("exit %d; output:\n%s", code, out)
	}
	for _, want := range []string{"hello, world", "got greeted world", "■ job build: success"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// serveGitRepo serves a bare repository owner/repo, made from files and
// tagged tag, over smart HTTP with git http-backend on 127.0.0.1, with no
// authentication (a public repository), and returns the server's URL.
func serveGitRepo(t *testing.T, name, tag string, files map[string]string) string {
	t.Helper()
	work, root := t.TempDir(), t.TempDir()
	git := func(dir string, args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_GLOBAL="+os.DevNull)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	git(work, "init", "-q", "-b", "main", ".")
	for p, body := range files {
		if err := os.MkdirAll(filepath.Join(work, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(work, p), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git(work, "add", "-A")
	git(work, "commit", "-q", "-m", "action")
	git(work, "tag", tag)
	git(root, "clone", "-q", "--bare", work, filepath.Join(root, name+".git"))
	out, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(&cgi.Handler{
		Path: filepath.Join(strings.TrimSpace(string(out)), "git-http-backend"),
		Env:  []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1"},
	})
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestE2EExecRemoteActionByURL: forgeload exec, which has no forge and so
// no default actions URL, runs a composite action named by its full URL,
// fetched with git from a public repository.
func TestE2EExecRemoteActionByURL(t *testing.T) {
	parallel(t)
	url := serveGitRepo(t, "acts/greet", "v1", map[string]string{"action.yml": `inputs:
  who: {}
runs:
  using: composite
  steps:
    - shell: sh
      run: echo "remote greets ${{ inputs.who }}"
`})
	code, out := execWorkflow(t, `on: push
jobs:
  build:
    runs-on: x
    steps:
      - uses: `+url+`/acts/greet@v1
        with:
          who: exec
`, nil)
	if code != 0 || !strings.Contains(out, "remote greets exec") {
		t.Fatalf("exit %d; output:\n%s", code, out)
	}
}

// TestE2EExecJavaScriptAndDockerActions: forgeload exec runs a local
// JavaScript action (with the runner.node of the config it is given: main,
// its output, and its post when the job ends) and a docker:// step on the
// local Docker Engine, as the daemon does, so a workflow that uses them
// can be tried without a forge.
func TestE2EExecJavaScriptAndDockerActions(t *testing.T) {
	parallel(t)
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("no node on PATH")
	}
	img := containertest.Image(t)
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte("runner:\n  node: "+node+"\ncontainer:\n  pull_policy: never\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out := execWorkflow(t, `on: push
jobs:
  build:
    runs-on: x
    steps:
      - uses: actions/checkout@v4
      - id: js
        uses: ./.gitea/actions/js
        with:
          who: exec
      - run: echo "js said ${{ steps.js.outputs.said }}"
      - uses: docker://`+img+`
        with:
          entrypoint: /bin/sh
          args: -c "echo from-the-image-$((6*7))"
`, map[string]string{
		".gitea/actions/js/action.yml": "inputs:\n  who: {}\noutputs:\n  said: {}\nruns:\n  using: node20\n  main: main.js\n  post: post.js\n",
		".gitea/actions/js/main.js":    "require('fs').appendFileSync(process.env.GITHUB_OUTPUT, 'said=hi-' + process.env.INPUT_WHO + '\\n');\nconsole.log('main for ' + process.env.INPUT_WHO);\n",
		".gitea/actions/js/post.js":    "console.log('post ran');\n",
	}, "-c", cfg)
	if code != 0 {
		t.Fatalf("exit %d; output:\n%s", code, out)
	}
	for _, want := range []string{"main for exec", "js said hi-exec", "from-the-image-42", "post ran", "■ job build: success"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Index(out, "post ran") < strings.Index(out, "from-the-image-42") {
		t.Errorf("the post ran before the job's last step:\n%s", out)
	}
}
