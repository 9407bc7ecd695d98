package run

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	runnerv1 "gitea.dev/actions-proto-go/runner/v1"

	"github.com/forgeload/forgeload/internal/pkg/workflow"
)

// checkout runs uses: actions/checkout natively with git: it fetches the
// task's commit (or with: ref) from the forge with the task token and
// checks it out into the workspace (or with: path). with: fetch-depth sets
// the depth (default 1; 0 = full history). The token travels in an HTTP
// header set through git's environment, never in argv or the remote URL.
func (j *job) checkout(ctx context.Context, ec *workflow.Context, st workflow.Step, i int) runnerv1.Result {
	fail := func(format string, args ...any) runnerv1.Result {
		j.rep.Logf(i, "::error::actions/checkout: "+format, args...)
		return runnerv1.Result_RESULT_FAILURE
	}
	with := map[string]string{}
	for k, v := range st.With {
		iv, err := ec.Interpolate(v)
		if err != nil {
			return fail("with.%s: %v", k, err)
		}
		with[k] = iv
	}
	for k := range with {
		switch k {
		case "repository", "ref", "token", "path", "fetch-depth", "clean", "submodules", "lfs", "persist-credentials", "ssh-key", "show-progress", "fetch-tags", "sparse-checkout", "set-safe-directory", "github-server-url", "filter", "sparse-checkout-cone-mode", "ssh-known-hosts", "ssh-strict", "ssh-user":
		default:
			return fail("with.%s is not an input of actions/checkout; supported: repository, ref, token, path, fetch-depth, clean", k)
		}
	}
	if j.r.o.LocalRepo != "" && with["repository"] == "" {
		dest := j.ws
		if p := with["path"]; p != "" {
			if filepath.IsAbs(p) || strings.HasPrefix(filepath.Clean(p), "..") {
				return fail("with.path %q must be relative and stay inside the workspace", p)
			}
			dest = filepath.Join(j.ws, p)
		}
		j.rep.Logf(i, "Copying the local directory %s into %s (local run: no forge to fetch from)", j.r.o.LocalRepo, dest)
		if err := os.CopyFS(dest, os.DirFS(j.r.o.LocalRepo)); err != nil {
			return fail("copy %s: %v", j.r.o.LocalRepo, err)
		}
		return runnerv1.Result_RESULT_SUCCESS
	}
	if _, err := exec.LookPath("git"); err != nil {
		return fail("git is not installed on this runner host; install git (e.g. apt-get install git)")
	}
	repo := firstNonEmptyStr(with["repository"], j.ctxString("repository"))
	server := strings.TrimSuffix(firstNonEmptyStr(with["github-server-url"], j.ctxString("server_url")), "/")
	if repo == "" || server == "" {
		return fail("the task names no repository or server_url; set with.repository and with.github-server-url")
	}
	token := firstNonEmptyStr(with["token"], j.task.GetSecrets()["GITHUB_TOKEN"], j.ctxString("token"))
	ref := with["ref"]
	sha := ""
	if ref == "" {
		sha = j.ctxString("sha")
		ref = j.ctxString("ref")
	}
	depth := 1
	if d := with["fetch-depth"]; d != "" {
		n, err := strconv.Atoi(d)
		if err != nil || n < 0 {
			return fail("with.fetch-depth %q is not a whole number >= 0 (0 fetches the whole history)", d)
		}
		depth = n
	}
	dest := j.ws
	if p := with["path"]; p != "" {
		if filepath.IsAbs(p) || strings.HasPrefix(filepath.Clean(p), "..") {
			return fail("with.path %q must be relative and stay inside the workspace", p)
		}
		dest = filepath.Join(j.ws, p)
	}
	if err := os.MkdirAll(dest, 0o755); err != nil {
		return fail("create %s: %v", dest, err)
	}
	url := server + "/" + repo + ".git"
	j.rep.Logf(i, "Checking out %s at %s into %s", url, firstNonEmptyStr(sha, ref, "the default branch"), dest)

	env := append(os.Environ(), "GIT_TERMINAL_PROMPT=0")
	if token != "" {
		auth := base64.StdEncoding.EncodeToString([]byte("x-access-token:" + token))
		env = append(env,
			"GIT_CONFIG_COUNT=1",
			"GIT_CONFIG_KEY_0=http.extraheader",
			"GIT_CONFIG_VALUE_0=AUTHORIZATION: basic "+auth,
		)
		j.rep.AddMask(auth)
	}
	git := func(args ...string) error {
		cmd := exec.CommandContext(ctx, "git", args...)
		cmd.Dir = dest
		cmd.Env = env
		var out bytes.Buffer
		cmd.Stdout = &out
		cmd.Stderr = &out
		err := cmd.Run()
		w := j.rep.Writer(i)
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
	if depth > 0 {
		depthArgs = []string{"--depth=" + strconv.Itoa(depth)}
	}
	steps := [][]string{
		{"init", "-q", "."},
		{"remote", "add", "origin", url},
	}
	if with["clean"] != "false" {
		if _, err := os.Stat(filepath.Join(dest, ".git")); err == nil {
			steps = [][]string{{"remote", "set-url", "origin", url}}
		}
	}
	for _, a := range steps {
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
	if with["clean"] != "false" {
		if err := git("clean", "-ffdx", "-q"); err != nil {
			return fail("%v", err)
		}
	}
	return runnerv1.Result_RESULT_SUCCESS
}

func firstNonEmptyStr(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}
