package jobrun

import (
	"context"
	"fmt"
	neturl "net/url"
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
var checkoutInputs = []string{"repository", "ref", "token", "path", "fetch-depth", "clean", "github-server-url", "submodules", "fetch-tags", "lfs"}

// checkoutFixed are the other inputs of actions/checkout: each is accepted
// only with a value that asks for what this checkout does anyway (any
// value when values is nil: the input has no effect here whatever its
// value), and refused otherwise, with what the checkout does instead.
var checkoutFixed = map[string]struct {
	values []string
	does   string
}{
	"persist-credentials":       {[]string{"false"}, "never writes the token into .git/config: a later step that pushes must pass a token itself"},
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
	submodules                           submoduleMode
	fetchTags                            bool // fetch-tags: true
	lfs                                  bool // lfs: true
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
	if err := c.setOptions(with); err != nil {
		return nil, err
	}
	if c.lfs {
		if _, err := gitLFSPath(os.Getenv("PATH")); err != nil {
			return nil, err
		}
	}
	if c.server != "" {
		if err := checkForgeURL(c.server, true); err != nil {
			return nil, err
		}
	}
	if p := c.path; p != "" && (filepath.IsAbs(p) || !filepath.IsLocal(p)) {
		return nil, fmt.Errorf("with.path %q must be relative and stay inside the workspace", p)
	}
	return c, nil
}

// setOptions reads the boolean-like inputs clean, fetch-tags, lfs and
// submodules.
func (c *checkoutStep) setOptions(with map[string]string) error {
	for _, b := range []struct {
		key string
		v   *bool
	}{{"clean", &c.clean}, {"fetch-tags", &c.fetchTags}, {"lfs", &c.lfs}} {
		switch v := strings.ToLower(with[b.key]); v {
		case "":
		case "true", "false":
			*b.v = v == "true"
		default:
			return fmt.Errorf("with.%s %q is not true or false", b.key, with[b.key])
		}
	}
	switch v := strings.ToLower(with["submodules"]); v {
	case "", "false":
	case "true":
		c.submodules = submodulesTop
	case "recursive":
		c.submodules = submodulesRecursive
	default:
		return fmt.Errorf("with.submodules %q is not true, false or recursive", with["submodules"])
	}
	return nil
}

// checkout runs uses: actions/checkout natively with git: it fetches the
// task's commit (or with: ref) from the forge with the task token and
// checks it out into the workspace (or with: path). with: fetch-depth sets
// the depth (default 1; 0 = full history). The token travels in an HTTP
// header set through git's environment, never in argv or the remote URL.
// git runs on the host with its repository in a private directory out of
// the job's reach, and the repository becomes the destination's .git only
// when git is done (see [hostGit]). With lfs: true, git-lfs downloads the
// commit's Git LFS objects from the forge's LFS server before the files
// are checked out (see [hostGit.lfsFetch]).
// A local run (forgeload exec) copies the local directory instead.
func (c *checkoutStep) checkout(ctx context.Context, j *stepJob) runnerv1.Result {
	fail := func(format string, args ...any) runnerv1.Result {
		j.Logf("::error::actions/checkout: "+format, args...)
		return runnerv1.Result_RESULT_FAILURE
	}
	dest, err := j.checkoutDir(c.path)
	if err != nil {
		return fail("%v", err)
	}
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
	url := server + "/" + repo + ".git"
	if err := checkForgeURL(server, c.server != ""); err != nil {
		return fail("%v", err)
	}
	j.Logf("Checking out %s at %s into %s", url, firstNonEmptyStr(sha, ref, "the default branch"), dest)
	g, err := j.newHostGit(ctx, server, token, j.Writer())
	if err != nil {
		return fail("%v", err)
	}
	defer g.close()
	if c.lfs {
		g = g.withLFS(url)
	}
	if err := c.fetchAndCheckout(g, url, sha, ref); err != nil {
		return fail("%v", err)
	}
	if c.lfs {
		if err := g.dropLFSLogs(); err != nil {
			return fail("%v", err)
		}
	}
	if err := g.moveInto(j.td, dest, c.clean); err != nil {
		return fail("%v", err)
	}
	return runnerv1.Result_RESULT_SUCCESS
}

// fetchAndCheckout makes the repository, fetches sha (or ref, or the
// default branch) from url and checks it out, in g's private directory:
// on a branch of the ref's name when the ref is a branch (as
// actions/checkout does), else on a detached HEAD; then the submodules.
func (c *checkoutStep) fetchAndCheckout(g *hostGit, url, sha, ref string) error {
	// core.worktree, which init records, is dropped: the repository moves
	// into the destination afterwards, where git finds it by its place.
	// The move changes the files' ctime, which git is told not to trust,
	// so that the tree reads as clean without a refresh of the index.
	for _, a := range [][]string{{"init", "-q"}, {"config", "--unset", "core.worktree"}, {"config", "core.trustctime", "false"}, {"remote", "add", "origin", url}} {
		if err := g.run(a...); err != nil {
			return err
		}
	}
	if c.lfs {
		if err := g.lfsInstall(); err != nil {
			return err
		}
	}
	branch, err := c.branchOf(g, sha, ref)
	if err != nil {
		return err
	}
	if err := c.fetch(g, sha, ref, branch); err != nil {
		return err
	}
	// A commit id checks out as itself; a ref as what the fetch brought.
	target := sha
	if target == "" {
		target = "FETCH_HEAD"
	}
	if c.lfs {
		if err := g.lfsFetch(target); err != nil {
			return err
		}
	}
	if branch == "" {
		err = g.run("checkout", "-q", "--force", "--detach", target)
	} else {
		err = g.checkoutBranch(branch, target)
	}
	if err != nil {
		return err
	}
	return c.updateSubmodules(g)
}

// fetch fetches sha (else ref, else the default branch) from origin, into
// refs/remotes/origin/<branch> when branch is set, with every tag when
// fetch-tags is true.
func (c *checkoutStep) fetch(g *hostGit, sha, ref, branch string) error {
	const reach = "is the repository reachable and the token allowed to read it?"
	fetch := []string{"-c", "protocol.version=2", "fetch", "--no-tags", "--prune"}
	if c.fetchTags {
		fetch[3] = "--tags"
	}
	if c.depth > 0 {
		fetch = append(fetch, "--depth="+strconv.Itoa(c.depth))
	}
	spec := func(src string) string {
		if branch == "" {
			return src
		}
		return "+" + src + ":refs/remotes/origin/" + branch
	}
	want := firstNonEmptyStr(sha, ref)
	if want == "" {
		if err := g.run(append(fetch, "origin")...); err != nil {
			return fmt.Errorf("%w (%s)", err, reach)
		}
		return nil
	}
	if err := g.run(append(fetch, "origin", spec(want))...); err != nil {
		if sha == "" || ref == "" {
			return fmt.Errorf("%w (%s)", err, reach)
		}
		// Some servers refuse a fetch by commit id; fetch the ref instead.
		if err := g.run(append(fetch, "origin", spec(ref))...); err != nil {
			return fmt.Errorf("%w (%s)", err, reach)
		}
	}
	return nil
}

// checkForgeURL checks that the forge's URL server is an http or https
// URL: the checkout fetches over HTTP(S) only (fromWith: the URL came from
// with.github-server-url).
func checkForgeURL(server string, fromWith bool) error {
	what := "the task's server_url"
	if fromWith {
		what = "with.github-server-url"
	}
	u, err := neturl.Parse(server)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%s %q is not an http:// or https:// URL; the checkout fetches from the forge over HTTP(S) only", what, server)
	}
	return nil
}

// checkoutDir makes the checkout's destination, the workspace or path
// in it, inside the task directory, and checks that it is a real
// directory reached through no symlink, so that a link the job planted
// fails the step before anything is fetched, naming the path (the files
// move in through the task directory's root, which checks again). It
// returns the destination's path.
func (j *job) checkoutDir(path string) (string, error) {
	dest := j.ws
	if path != "" {
		dest = filepath.Join(j.ws, path)
	}
	what := "the workspace"
	if path != "" {
		what = fmt.Sprintf("with.path %q", path)
	}
	if err := j.td.MkdirAll(dest, 0o755); err != nil {
		return "", fmt.Errorf("%s: %w; the checkout goes only into a real directory inside the workspace", what, err)
	}
	dir, real, err := j.td.OpenRealDir(dest)
	if err != nil {
		return "", fmt.Errorf("%s: %w; the checkout goes only into a real directory inside the workspace", what, err)
	}
	_ = dir.Close()
	return real, nil
}

func firstNonEmptyStr(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}
