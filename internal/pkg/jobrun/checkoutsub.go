package jobrun

import (
	"errors"
	"fmt"
	"io/fs"
	neturl "net/url"
	"os"
	"path/filepath"
	"strings"
)

// submoduleMode is with.submodules of actions/checkout.
type submoduleMode int

const (
	submodulesNone      submoduleMode = iota // false, the default
	submodulesTop                            // true: the repository's own submodules
	submodulesRecursive                      // recursive: theirs too
)

// branchOf is the branch the checkout puts HEAD on: the ref's branch when
// the ref is refs/heads/<name>, or with.ref's name when it is a branch of
// origin (asked with ls-remote); "" for a tag, a commit or a pull
// request's ref, which check out detached.
func (c *checkoutStep) branchOf(g *hostGit, sha, ref string) (string, error) {
	name, isBranch := strings.CutPrefix(ref, "refs/heads/")
	if !isBranch && c.ref != "" && sha == "" && !strings.HasPrefix(ref, "refs/") && !commitRe.MatchString(ref) {
		heads, err := g.output("ls-remote", "--heads", "origin", "refs/heads/"+ref)
		if err != nil {
			return "", fmt.Errorf("%w (is the repository reachable and the token allowed to read it?)", err)
		}
		name, isBranch = ref, heads != ""
	}
	if !isBranch {
		return "", nil
	}
	if strings.HasPrefix(name, "-") || g.run("check-ref-format", "refs/heads/"+name) != nil {
		return "", fmt.Errorf("ref %q is not a valid branch name", ref)
	}
	return name, nil
}

// checkoutBranch checks target out on the local branch name, tracking
// origin's branch of that name, as actions/checkout leaves a branch
// event's repository.
func (g *hostGit) checkoutBranch(name, target string) error {
	if err := g.run("checkout", "-q", "--force", "-B", name, target); err != nil {
		return err
	}
	return g.run("branch", "-q", "--set-upstream-to=refs/remotes/origin/"+name, name)
}

// updateSubmodules checks out the submodules the checked-out tree names
// (with.submodules: true, or recursive for theirs too), fetched like the
// repository: over http(s) only, with the token only for the forge's own
// URLs (see [hostGit]), at fetch-depth 1 unless the whole history was
// asked for. Each URL of .gitmodules is checked first; the nested ones of
// a recursive update are held to the same rules by git's config. While
// git works, the repository sits at the work tree's .git, so that the
// paths git writes between the submodules and their repositories (in
// .git/modules) are those of the destination, where both move.
func (c *checkoutStep) updateSubmodules(g *hostGit) error {
	if c.submodules == submodulesNone {
		return nil
	}
	gm := filepath.Join(g.workTree, ".gitmodules")
	if fi, err := os.Lstat(gm); errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintln(g.out, "The repository has no submodules (.gitmodules)")
		return nil
	} else if err != nil || !fi.Mode().IsRegular() {
		return fmt.Errorf(".gitmodules is not a regular file; the submodules cannot be read")
	}
	urls, err := g.output("config", "--file", gm, "--get-regexp", `^submodule\..*\.url$`)
	if err != nil {
		return fmt.Errorf("read .gitmodules: %w", err)
	}
	for _, l := range strings.Split(urls, "\n") {
		key, u, _ := strings.Cut(l, " ")
		if l != "" {
			if err := checkSubmoduleURL(u); err != nil {
				return fmt.Errorf(".gitmodules %s: %w", key, err)
			}
		}
	}
	inTree := filepath.Join(g.workTree, ".git")
	if err := os.Rename(g.gitDir, inTree); err != nil {
		return fmt.Errorf("prepare the submodules: %w", err)
	}
	defer func() { _ = os.Rename(inTree, g.gitDir) }()
	sub := g.withGitDir(inTree)
	args := []string{"-c", "protocol.version=2", "submodule", "update", "--init", "--force", "--checkout"}
	if c.submodules == submodulesRecursive {
		args = append(args, "--recursive")
	}
	if c.depth > 0 {
		args = append(args, "--depth=1")
	}
	if err := sub.run(args...); err != nil {
		return fmt.Errorf("%w (are the submodules reachable over http(s)? The token goes only to the forge's own URLs)", err)
	}
	return nil
}

// withGitDir is g with its repository at dir.
func (g *hostGit) withGitDir(dir string) *hostGit {
	c := *g
	c.gitDir = dir
	c.env = make([]string, 0, len(g.env))
	for _, kv := range g.env {
		if strings.HasPrefix(kv, "GIT_DIR=") {
			kv = "GIT_DIR=" + dir
		}
		c.env = append(c.env, kv)
	}
	return &c
}

// checkSubmoduleURL checks a submodule's URL as the checkout's own: a
// path relative to the repository's URL (../other.git), or an http:// or
// https:// URL; never a local path, file://, ssh or another transport.
func checkSubmoduleURL(raw string) error {
	if strings.HasPrefix(raw, "./") || strings.HasPrefix(raw, "../") {
		return nil
	}
	u, err := neturl.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not an http:// or https:// URL, nor one relative to the repository's (../name.git); the checkout fetches over HTTP(S) only: change the submodule's URL, or set submodules: false", raw)
	}
	return nil
}
