package jobrun

import (
	"bytes"
	"context"
	"fmt"
	"io"
	neturl "net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/forgeload/forgeload/internal/pkg/workflow"
)

// remoteRef is a uses: owner/repo[/path]@ref, with the forge it comes
// from.
type remoteRef struct {
	uses              string
	base              string // scheme://host[:port] of the forge, no trailing slash
	host              string // host[:port], for the cache
	owner, repo, path string // path: the action's directory in the repository, or ""
	ref               string
}

var (
	remoteNameRe = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]*$`)
	remoteRefRe  = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_./+-]*$`)
	commitRe     = regexp.MustCompile(`^[0-9a-f]{40}$`)
)

// isRemoteAction reports whether uses names an action in a repository:
// owner/repo[/path]@ref or https://host/owner/repo[/path]@ref.
func isRemoteAction(uses string) bool {
	if isLocalAction(uses) || strings.HasPrefix(uses, "docker://") {
		return false
	}
	action, ref := workflow.UsesRef(uses)
	return ref != "" && strings.Contains(action, "/")
}

// parseRemoteUses parses uses against the default actions URL the task
// carries (Gitea's DEFAULT_ACTIONS_URL). Every part is checked, so that
// none can reach git as an option or leave the repository's path.
func parseRemoteUses(uses, defaultURL string) (remoteRef, error) {
	action, ref := workflow.UsesRef(uses)
	r := remoteRef{uses: uses, ref: ref}
	base := strings.TrimRight(defaultURL, "/")
	if strings.HasPrefix(action, "https://") || strings.HasPrefix(action, "http://") {
		u, err := neturl.Parse(action)
		if err != nil || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
			return r, fmt.Errorf("%q is not a URL of the form https://host/owner/repo@ref", action)
		}
		base, action = u.Scheme+"://"+u.Host, strings.TrimPrefix(u.Path, "/")
	} else if base == "" {
		return r, fmt.Errorf("the task carries no default actions URL (Gitea's DEFAULT_ACTIONS_URL; a local run has none), so %s has no forge to come from; write the action's full URL: uses: https://host/%s", action, uses)
	}
	u, err := neturl.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
		return r, fmt.Errorf("the default actions URL %q is not an http:// or https:// URL of a host; the admin sets it in Gitea (DEFAULT_ACTIONS_URL)", base)
	}
	r.base, r.host = base, u.Host
	parts := strings.Split(action, "/")
	if len(parts) < 2 {
		return r, fmt.Errorf("%q names no repository; write owner/repo@ref", action)
	}
	for _, p := range parts {
		if !remoteNameRe.MatchString(p) || p == ".." {
			return r, fmt.Errorf("%q: %q is not a valid owner, repository or directory name (letters, digits, _ . -)", action, p)
		}
	}
	r.owner, r.repo, r.path = parts[0], strings.TrimSuffix(parts[1], ".git"), path.Join(parts[2:]...)
	if !remoteRefRe.MatchString(ref) || strings.Contains(ref, "..") || len(ref) > 255 {
		return r, fmt.Errorf("@%s is not a valid ref; write a tag, branch or commit id: owner/repo@v1", ref)
	}
	return r, nil
}

func (r remoteRef) cloneURL() string { return r.base + "/" + r.owner + "/" + r.repo + ".git" }

// name is owner/repo[/path] as the log shows it, on its forge.
func (r remoteRef) name() string {
	return strings.TrimSuffix(r.base+"/"+r.owner+"/"+r.repo+"/"+r.path, "/")
}

// fetchedAction is a remote action copied into the task directory.
type fetchedAction struct {
	ref    remoteRef
	commit string
	root   string // the repository's files in the task directory
}

// fetchAction resolves the remote action uses names to a commit, fetches
// it with git (through the action cache) and copies it into the task
// directory, once per job. The task token goes only to the forge the
// task came from.
func (j *job) fetchAction(ctx context.Context, uses string, out io.Writer) (*fetchedAction, error) {
	if f, ok := j.actions[uses]; ok {
		return f, nil
	}
	r, err := parseRemoteUses(uses, j.ctxString("default_actions_url"))
	if err != nil {
		return nil, err
	}
	f, err := j.fetchRepo(ctx, r, "Action", out)
	if err != nil {
		return nil, err
	}
	if j.actions == nil {
		j.actions = map[string]*fetchedAction{}
	}
	j.actions[uses] = f
	return f, nil
}

// fetchRepo resolves r's ref to a commit and puts the repository's files
// at that commit into the task directory, through the action cache; what
// ("Action", "Workflow") starts the line that names the commit. The task
// token goes only to the forge the task came from.
func (j *job) fetchRepo(ctx context.Context, r remoteRef, what string, out io.Writer) (*fetchedAction, error) {
	token := ""
	if sameHost(r.base, j.ctxString("server_url")) || sameHost(r.base, j.deps.Instance) {
		token = j.ctxString("token")
	}
	g, err := j.newHostGit(ctx, r.base, token, out)
	if err != nil {
		return nil, err
	}
	defer g.close()
	if err := g.run("init", "-q"); err != nil {
		return nil, err
	}
	if err := g.run("remote", "add", "origin", r.cloneURL()); err != nil {
		return nil, err
	}
	commit, fetchRef, err := g.resolveRef(r.ref)
	if err != nil {
		return nil, fmt.Errorf("resolve %s@%s: %w", r.name(), r.ref, err)
	}
	key := path.Join(cacheHost(r.host), r.owner, r.repo, commit)
	fmt.Fprintf(out, "%s %s@%s is commit %s\n", what, r.name(), r.ref, commit)
	f := &fetchedAction{ref: r, commit: commit, root: filepath.Join(j.dir, "actions", filepath.FromSlash(key))}
	if err := j.placeAction(g, key, fetchRef, commit, f.root, out); err != nil {
		return nil, fmt.Errorf("fetch %s@%s: %w", r.name(), r.ref, err)
	}
	return f, nil
}

// placeAction puts the action's files at commit into root, in the task
// directory: from the cache, or fetched (fetchRef), verified against the
// commit the ref resolved to, and cached.
func (j *job) placeAction(g *hostGit, key, fetchRef, commit, root string, out io.Writer) error {
	if j.isDir(root) {
		return nil // used before in this job
	}
	cache := j.deps.ActionCache
	stage, err := os.MkdirTemp(j.deps.TaskRoot, fmt.Sprintf("%s%d-action-", TaskDirPrefix, j.task.GetId()))
	if err != nil {
		return fmt.Errorf("stage the action in %s: %w", j.deps.TaskRoot, err)
	}
	defer os.RemoveAll(stage)
	hit, err := cache.copyOut(key, stage)
	if err != nil {
		return err
	}
	if hit {
		fmt.Fprintf(out, "Using the cached copy of commit %s\n", commit)
	} else {
		if err := g.run("-c", "protocol.version=2", "fetch", "--no-tags", "--depth=1", "origin", fetchRef); err != nil {
			return fmt.Errorf("%w (is the repository reachable, and readable with the task's token?)", err)
		}
		got, err := g.output("rev-parse", "--verify", "FETCH_HEAD^{commit}")
		if err != nil {
			return err
		}
		if got != commit {
			return fmt.Errorf("the fetch brought commit %s, not %s that the ref named a moment before (the ref moved?); re-run the job", got, commit)
		}
		if err := g.run("checkout", "-q", "--force", "--detach", commit); err != nil {
			return err
		}
		if err := cache.add(key, g.workTree); err != nil {
			return err
		}
		if _, err := cache.copyOut(key, stage); err != nil {
			return err
		}
	}
	if err := j.td.MkdirAll(root, 0o755); err != nil {
		return err
	}
	return j.td.MoveTreeIn(stage, root)
}

// resolveRef resolves ref on origin to a commit, and the ref to fetch it
// by: a commit id is itself; else a tag (peeled, when annotated), else a
// branch of that name.
func (g *hostGit) resolveRef(ref string) (commit, fetchRef string, err error) {
	if commitRe.MatchString(ref) {
		// A commit id needs no lookup, but the cache must not hand a
		// repository's files to a job that cannot read it: ask the forge.
		if _, err := g.output("ls-remote", "origin", "HEAD"); err != nil {
			return "", "", fmt.Errorf("%w (is the repository reachable, and readable with the task's token?)", err)
		}
		return ref, ref, nil
	}
	tag, branch := "refs/tags/"+ref, "refs/heads/"+ref
	lines, err := g.output("ls-remote", "origin", tag, tag+"^{}", branch)
	if err != nil {
		return "", "", fmt.Errorf("%w (is the repository reachable, and readable with the task's token?)", err)
	}
	found := map[string]string{}
	for _, l := range strings.Split(lines, "\n") {
		id, name, ok := strings.Cut(strings.TrimSpace(l), "\t")
		if ok && commitRe.MatchString(id) {
			found[name] = id
		}
	}
	switch {
	case found[tag+"^{}"] != "":
		return found[tag+"^{}"], tag, nil
	case found[tag] != "":
		return found[tag], tag, nil
	case found[branch] != "":
		return found[branch], branch, nil
	}
	return "", "", fmt.Errorf("the repository has no tag or branch %q; write an existing tag, branch or a full commit id", ref)
}

// output runs git with args and returns its trimmed standard output; its
// standard error goes to the log.
func (g *hostGit) output(args ...string) (string, error) {
	cmd := g.command(args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	for _, l := range strings.Split(strings.TrimRight(stderr.String(), "\n"), "\n") {
		if l != "" {
			fmt.Fprintln(g.out, l)
		}
	}
	if err != nil {
		return "", fmt.Errorf("git %s: %w", gitSubcommand(args), err)
	}
	return strings.TrimSpace(stdout.String()), nil
}

// sameHost reports whether the URLs a and b have the same scheme and
// host.
func sameHost(a, b string) bool {
	ua, err1 := neturl.Parse(a)
	ub, err2 := neturl.Parse(b)
	return err1 == nil && err2 == nil && ua.Host != "" && strings.EqualFold(ua.Host, ub.Host) && ua.Scheme == ub.Scheme
}

// cacheHost is host[:port] as a directory name.
func cacheHost(host string) string { return strings.ReplaceAll(host, ":", "_") }
