package jobrun

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// gitLFSPath finds an executable git-lfs in the absolute directories of
// pathList (the daemon's PATH, which the checkout's git searches), or
// says how to get one.
func gitLFSPath(pathList string) (string, error) {
	for _, dir := range filepath.SplitList(pathList) {
		if !filepath.IsAbs(dir) {
			continue
		}
		p := filepath.Join(dir, "git-lfs")
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", errors.New("with.lfs: true needs git-lfs on the runner host, and there is none on the daemon's PATH; install it there (apt-get install git-lfs), or set lfs: false and run `git lfs pull` in a run: step where git-lfs is installed")
}

// withLFS is g for a checkout with lfs: true of the repository at url
// (the forge's <server>/<owner>/<repo>.git): git-lfs talks to the forge's
// own LFS server, <url>/info/lfs, whatever a .lfsconfig in the
// repository says (command-line config comes before it), so the token's
// header, which goes only to the forge's URLs, reaches no other host
// through an LFS endpoint.
func (g *hostGit) withLFS(url string) *hostGit {
	return g.withConfig([2]string{"lfs.url", url + "/info/lfs"})
}

// lfsInstall sets the repository up for Git LFS as actions/checkout does
// with git lfs install --local: the lfs filter in the repository's config
// and git-lfs's hooks in its hooks directory, where they stay for the
// job's own git (git push uploads the LFS objects through the pre-push
// hook). The daemon's git runs no hook whatever (core.hooksPath is
// /dev/null); only this command sees the repository's own hooks
// directory, to write the hooks there.
func (g *hostGit) lfsInstall() error {
	hooks := filepath.Join(g.gitDir, "hooks")
	if err := os.MkdirAll(hooks, 0o755); err != nil {
		return fmt.Errorf("set up Git LFS: %w", err)
	}
	if err := g.withConfig([2]string{"core.hooksPath", hooks}).run("lfs", "install", "--local"); err != nil {
		return fmt.Errorf("set up Git LFS: %w (is git-lfs working on the runner host? `git lfs version` tells)", err)
	}
	return nil
}

// lfsFetch downloads the Git LFS objects of the commit target names from
// the forge's LFS server, before the checkout (as actions/checkout does:
// one batch, in parallel, rather than one object per file as the filter
// would). A missing object fails here, named in git-lfs's output above.
func (g *hostGit) lfsFetch(target string) error {
	commit, err := g.output("rev-parse", "--verify", "--end-of-options", target+"^{commit}")
	if err != nil {
		return err
	}
	if err := g.run("lfs", "fetch", "origin", commit); err != nil {
		return fmt.Errorf("%w: the Git LFS objects of %s could not all be downloaded (git-lfs names each above; is every LFS object of the commit pushed to the forge, and the token allowed to read the repository?)", err, commit)
	}
	return nil
}

// dropLFSLogs removes the error logs git-lfs writes into the repository
// (lfs/logs): they hold git's environment, where the token's header is,
// and the repository moves into the job's workspace. git-lfs writes one
// for an error it survives (a download error it was told to skip); with
// lfs fetch first, none is known to reach a checkout that succeeds, so
// this is a second line of defence.
func (g *hostGit) dropLFSLogs() error {
	if err := os.RemoveAll(filepath.Join(g.gitDir, "lfs", "logs")); err != nil {
		return fmt.Errorf("remove git-lfs's logs from the repository: %w", err)
	}
	return nil
}

// withConfig is g with each key of kvs set to its value in git's
// command-line config (GIT_CONFIG_KEY_n/GIT_CONFIG_VALUE_n): a key g sets
// already gets the new value, another is added.
func (g *hostGit) withConfig(kvs ...[2]string) *hostGit {
	c := *g
	c.env = make([]string, 0, len(g.env)+2*len(kvs))
	count := 0
	index := map[string]int{} // key -> n
	for _, kv := range g.env {
		k, v, _ := strings.Cut(kv, "=")
		if k == "GIT_CONFIG_COUNT" {
			count, _ = strconv.Atoi(v)
			continue
		}
		if n, ok := strings.CutPrefix(k, "GIT_CONFIG_KEY_"); ok {
			if i, err := strconv.Atoi(n); err == nil {
				index[v] = i
			}
		}
		c.env = append(c.env, kv)
	}
	for _, kv := range kvs {
		n, ok := index[kv[0]]
		if !ok {
			n = count
			count++
			index[kv[0]] = n
			c.env = append(c.env, fmt.Sprintf("GIT_CONFIG_KEY_%d=%s", n, kv[0]), fmt.Sprintf("GIT_CONFIG_VALUE_%d=%s", n, kv[1]))
			continue
		}
		prefix := fmt.Sprintf("GIT_CONFIG_VALUE_%d=", n)
		for i, e := range c.env {
			if strings.HasPrefix(e, prefix) {
				c.env[i] = prefix + kv[1]
			}
		}
	}
	c.env = append(c.env, "GIT_CONFIG_COUNT="+strconv.Itoa(count))
	return &c
}
