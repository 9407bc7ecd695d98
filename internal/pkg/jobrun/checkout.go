package jobrun

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	runnerv1 "gitea.dev/actions-proto-go/runner/v1"

	"github.com/forgeload/forgeload/internal/pkg/workflow"
)

// checkoutInputs are the with: inputs the checkout honours.
var checkoutInputs = []string{"repository", "ref", "token", "path", "fetch-depth", "clean", "github-server-url"}

// checkoutFixed are the other inputs of actions/checkout: each is accepted
// only with a value that asks for what this checkout does anyway (any
// value when values is nil: the input has no effect here whatever its
// value), and refused otherwise, with what the checkout does instead.
var checkoutFixed = map[string]struct {
	values []string
	does   string
}{
	"persist-credentials":       {[]string{"false"}, "never writes the token into .git/config: a later step that pushes must pass a token itself"},
	"submodules":                {[]string{"false"}, "checks out no submodules: run `git submodule update --init --recursive` in a run: step"},
	"lfs":                       {[]string{"false"}, "fetches no Git LFS files: run `git lfs pull` in a run: step"},
	"fetch-tags":                {[]string{"false"}, "fetches no tags: run `git fetch --tags` in a run: step"},
	"show-progress":             {[]string{"false"}, "logs git's output without progress meters"},
	"sparse-checkout":           {[]string{""}, "checks out the whole tree: use `git sparse-checkout` in a run: step"},
	"filter":                    {[]string{""}, "fetches whole objects, with no partial-clone filter"},
	"ssh-key":                   {[]string{""}, "fetches over HTTP(S) with the token, never over SSH"},
	"ssh-known-hosts":           {[]string{""}, "fetches over HTTP(S) with the token, never over SSH"},
	"set-safe-directory":        {nil, ""}, // the workspace belongs to the runner's user, whom git trusts
	"sparse-checkout-cone-mode": {nil, ""}, // no effect without sparse-checkout
	"ssh-strict":                {nil, ""}, // no effect without ssh-key
	"ssh-user":                  {nil, ""}, // no effect without ssh-key
}

// checkoutStep is a uses: actions/checkout step with its with: inputs
// resolved and checked once, before anything is fetched.
type checkoutStep struct {
	repository, ref, token, path, server string
	depth                                int  // 0: the whole history
	clean                                bool // git clean the destination (clean: true, the default)
}

// newCheckoutStep resolves st's with: against ec. An input it would
// ignore is an error naming it and what is supported; an empty value (an
// expression that came out empty, say) leaves an input unset.
func newCheckoutStep(ec *workflow.Context, st workflow.Step) (*checkoutStep, error) {
	with, err := ec.InterpolateMap(st.With)
	if err != nil {
		return nil, fmt.Errorf("with.%w", err)
	}
	c := &checkoutStep{
		repository: with["repository"],
		ref:        with["ref"],
		token:      with["token"],
		path:       with["path"],
		server:     with["github-server-url"],
		depth:      1,
		clean:      true,
	}
	supported := strings.Join(checkoutInputs, ", ")
	for _, k := range sortedKeys(with) {
		v := with[k]
		if slices.Contains(checkoutInputs, k) || v == "" {
			continue
		}
		f, known := checkoutFixed[k]
		if !known {
			return nil, fmt.Errorf("with.%s is not an input of actions/checkout; supported: %s", k, supported)
		}
		if f.values != nil && !slices.Contains(f.values, strings.ToLower(v)) {
			return nil, fmt.Errorf("with.%s: %s is not supported: forgeload's built-in checkout %s; remove the input. Supported: %s", k, v, f.does, supported)
		}
	}
	if d := with["fetch-depth"]; d != "" {
		n, err := strconv.Atoi(d)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("with.fetch-depth %q is not a whole number >= 0 (0 fetches the whole history)", d)
		}
		c.depth = n
	}
	switch v := strings.ToLower(with["clean"]); v {
	case "", "true":
	case "false":
		c.clean = false
	default:
		return nil, fmt.Errorf("with.clean %q is not true or false", with["clean"])
	}
	if p := c.path; p != "" && (filepath.IsAbs(p) || !filepath.IsLocal(p)) {
		return nil, fmt.Errorf("with.path %q must be relative and stay inside the workspace", p)
	}
	return c, nil
}

// checkout runs uses: actions/checkout natively with git: it fetches the
// task's commit (or with: ref) from the forge with the task token and
// checks it out into the workspace (or with: path). with: fetch-depth sets
// the depth (default 1; 0 = full history). The token travels in an HTTP
// header set through git's environment, never in argv or the remote URL.
// A local run (forgeload exec) copies the local directory instead.
func (c *checkoutStep) checkout(ctx context.Context, j *stepJob) runnerv1.Result {
	fail := func(format string, args ...any) runnerv1.Result {
		j.Logf("::error::actions/checkout: "+format, args...)
		return runnerv1.Result_RESULT_FAILURE
	}
	dest, dir, err := j.checkoutDir(c.path)
	if err != nil {
		return fail("%v", err)
	}
	defer dir.Close()
	if j.deps.LocalRepo != "" && c.repository == "" {
		j.Logf("Copying the local directory %s into %s (local run: no forge to fetch from)", j.deps.LocalRepo, dest)
		if err := os.CopyFS(dest, os.DirFS(j.deps.LocalRepo)); err != nil {
			return fail("copy %s: %v", j.deps.LocalRepo, err)
		}
		return runnerv1.Result_RESULT_SUCCESS
	}
	if _, err := exec.LookPath("git"); err != nil {
		return fail("git is not installed on this runner host; install git (e.g. apt-get install git)")
	}
	repo := firstNonEmptyStr(c.repository, j.ctxString("repository"))
	server := strings.TrimSuffix(firstNonEmptyStr(c.server, j.ctxString("server_url")), "/")
	if repo == "" || server == "" {
		return fail("the task names no repository or server_url; set with.repository and with.github-server-url")
	}
	token := firstNonEmptyStr(c.token, j.task.GetSecrets()["GITHUB_TOKEN"], j.ctxString("token"))
	ref := c.ref
	sha := ""
	if ref == "" {
		sha = j.ctxString("sha")
		ref = j.ctxString("ref")
	}
	// A .git already there was written by the job (this task's directory
	// is new): its config, hooks or a gitdir: link would make the daemon's
	// git run the job's commands or write elsewhere. It is replaced.
	if err := j.td.RemoveAll(filepath.Join(dest, ".git")); err != nil {
		return fail("remove the .git an earlier step left in %s: %v", dest, err)
	}
	url := server + "/" + repo + ".git"
	j.Logf("Checking out %s at %s into %s", url, firstNonEmptyStr(sha, ref, "the default branch"), dest)

	// No hook or fsmonitor command of the repository runs: git runs as
	// the daemon, on the host.
	config := [][2]string{{"core.hooksPath", os.DevNull}, {"core.fsmonitor", "false"}}
	if token != "" {
		auth := base64.StdEncoding.EncodeToString([]byte("x-access-token:" + token))
		config = append(config, [2]string{"http.extraheader", "AUTHORIZATION: basic " + auth})
		j.rep.AddMask(auth)
	}
	env := append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_CONFIG_COUNT="+strconv.Itoa(len(config)))
	for n, kv := range config {
		env = append(env, fmt.Sprintf("GIT_CONFIG_KEY_%d=%s", n, kv[0]), fmt.Sprintf("GIT_CONFIG_VALUE_%d=%s", n, kv[1]))
	}
	cwd := dirPath(dir, dest)
	git := func(args ...string) error {
		cmd := exec.CommandContext(ctx, "git", args...)
		cmd.Dir = cwd
		cmd.Env = env
		var out bytes.Buffer
		cmd.Stdout = &out
		cmd.Stderr = &out
		err := cmd.Run()
		w := j.Writer()
		for _, l := range strings.Split(strings.TrimRight(out.String(), "\n"), "\n") {
			if l != "" {
				fmt.Fprintln(w, l)
			}
		}
		if err != nil {
			return fmt.Errorf("git %s: %w", args[0], err)
		}
		return nil
	}
	depthArgs := []string{}
	if c.depth > 0 {
		depthArgs = []string{"--depth=" + strconv.Itoa(c.depth)}
	}
	for _, a := range [][]string{{"init", "-q", "."}, {"remote", "add", "origin", url}} {
		if err := git(a...); err != nil {
			return fail("%v", err)
		}
	}
	want := firstNonEmptyStr(sha, ref)
	fetch := append([]string{"-c", "protocol.version=2", "fetch", "--no-tags", "--prune"}, depthArgs...)
	if want == "" {
		if err := git(append(fetch, "origin")...); err != nil {
			return fail("%v (is the repository reachable and the token allowed to read it?)", err)
		}
	} else if err := git(append(fetch, "origin", want)...); err != nil {
		if sha == "" || ref == "" {
			return fail("%v (is the repository reachable and the token allowed to read it?)", err)
		}
		// Some servers refuse a fetch by commit id; fetch the ref instead.
		if err := git(append(fetch, "origin", ref)...); err != nil {
			return fail("%v (is the repository reachable and the token allowed to read it?)", err)
		}
	}
	// A commit id checks out as itself; a ref as what the fetch brought.
	target := sha
	if target == "" {
		target = "FETCH_HEAD"
	}
	if err := git("checkout", "-q", "--force", "--detach", target); err != nil {
		return fail("%v", err)
	}
	if c.clean {
		if err := git("clean", "-ffdx", "-q"); err != nil {
			return fail("%v", err)
		}
	}
	return runnerv1.Result_RESULT_SUCCESS
}

// checkoutDir makes the checkout's destination, the workspace or path
// in it, inside the task directory, and opens it: it must be a real
// directory reached through no symlink, so that the job cannot point the
// daemon's git at a directory elsewhere on the host. It returns the
// destination's path and the open directory, which the caller closes.
func (j *job) checkoutDir(path string) (string, *os.File, error) {
	dest := j.ws
	if path != "" {
		dest = filepath.Join(j.ws, path)
	}
	what := "the workspace"
	if path != "" {
		what = fmt.Sprintf("with.path %q", path)
	}
	if err := j.td.MkdirAll(dest, 0o755); err != nil {
		return "", nil, fmt.Errorf("%s: %w; the checkout goes only into a real directory inside the workspace", what, err)
	}
	dir, real, err := j.td.OpenRealDir(dest)
	if err != nil {
		return "", nil, fmt.Errorf("%s: %w; the checkout goes only into a real directory inside the workspace", what, err)
	}
	return real, dir, nil
}

func firstNonEmptyStr(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}
