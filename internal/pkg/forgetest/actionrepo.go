package forgetest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Commit is one commit of a repository made by [Forge.AddActionRepo]: its
// whole tree (path -> content) and the refs that point at it: lightweight
// tags, annotated tags and branches.
type Commit struct {
	Files         map[string]string
	Tags          []string
	AnnotatedTags []string
	Branches      []string
	// Submodules are gitlinks the commit records, each named in the
	// .gitmodules the commit gets.
	Submodules []Submodule
}

// Submodule is a submodule of a [Commit]: its path in the tree, its URL
// (as .gitmodules writes it: absolute, or relative such as ../lib.git)
// and the commit the tree records.
type Submodule struct {
	Path, URL, Commit string
}

// AddActionRepo creates (or replaces) the repository name ("owner/repo")
// with the commits given, in order, each on top of the one before, and
// returns their ids. Unlike [Forge.AddRepo] it does not become the
// repository of the jobs queued afterwards: it is a repository other than
// the job's, such as an action's. It is served like AddRepo's, over smart
// HTTP with git http-backend, to requests with a running task's token. A
// ref moved to another commit is a new call with the new history.
func (f *Forge) AddActionRepo(name string, commits ...Commit) ([]string, error) {
	owner, repo, ok := strings.Cut(name, "/")
	if !ok || owner == "" || repo == "" || strings.ContainsAny(repo, "/") || strings.HasPrefix(repo, ".") {
		return nil, fmt.Errorf("forgetest: AddActionRepo(%q): want owner/repo", name)
	}
	root, err := f.ensureGitRoot()
	if err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp("", "forgetest-action-")
	if err != nil {
		return nil, fmt.Errorf("forgetest: AddActionRepo: %w", err)
	}
	defer os.RemoveAll(work)
	if _, err := gitIn(work, "init", "-q", "-b", "main", "."); err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(commits))
	for n, c := range commits {
		id, err := commitTree(work, n, c)
		if err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	bare := filepath.Join(root, owner, repo+".git")
	if err := os.RemoveAll(bare); err != nil {
		return nil, fmt.Errorf("forgetest: AddActionRepo: %w", err)
	}
	// A bare clone keeps every branch and tag of work as its own.
	if _, err := gitIn(root, "clone", "-q", "--bare", work, bare); err != nil {
		return nil, err
	}
	return ids, nil
}

// ensureGitRoot makes the directory of the forge's bare repositories.
func (f *Forge) ensureGitRoot() (string, error) {
	if _, err := exec.LookPath("git"); err != nil {
		return "", fmt.Errorf("forgetest: serving repositories needs git on PATH: %w", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.gitRoot == "" {
		dir, err := os.MkdirTemp("", "forgetest-git-")
		if err != nil {
			return "", fmt.Errorf("forgetest: %w", err)
		}
		f.gitRoot = dir
	}
	return f.gitRoot, nil
}

// commitTree replaces work's tree with c.Files, commits it (the n-th
// commit) and points c's refs at it.
func commitTree(work string, n int, c Commit) (string, error) {
	ents, err := os.ReadDir(work)
	if err != nil {
		return "", fmt.Errorf("forgetest: %w", err)
	}
	for _, e := range ents {
		if e.Name() != ".git" {
			if err := os.RemoveAll(filepath.Join(work, e.Name())); err != nil {
				return "", fmt.Errorf("forgetest: %w", err)
			}
		}
	}
	for p, content := range c.Files {
		full := filepath.Join(work, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return "", fmt.Errorf("forgetest: %w", err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			return "", fmt.Errorf("forgetest: %w", err)
		}
	}
	steps := [][]string{{"add", "-A"}}
	if len(c.Submodules) > 0 {
		var gm strings.Builder
		for _, sm := range c.Submodules {
			fmt.Fprintf(&gm, "[submodule %q]\n\tpath = %s\n\turl = %s\n", sm.Path, sm.Path, sm.URL)
			steps = append(steps, []string{"update-index", "--add", "--cacheinfo", "160000," + sm.Commit + "," + sm.Path})
		}
		if err := os.WriteFile(filepath.Join(work, ".gitmodules"), []byte(gm.String()), 0o644); err != nil {
			return "", fmt.Errorf("forgetest: %w", err)
		}
		steps = append(steps, []string{"add", ".gitmodules"})
	}
	steps = append(steps, []string{"commit", "-q", "--allow-empty", "-m", fmt.Sprintf("commit %d", n)})
	for _, t := range c.Tags {
		steps = append(steps, []string{"tag", "-f", t})
	}
	for _, t := range c.AnnotatedTags {
		steps = append(steps, []string{"tag", "-f", "-a", "-m", "tag " + t, t})
	}
	for _, b := range c.Branches {
		steps = append(steps, []string{"branch", "-f", b})
	}
	for _, s := range steps {
		if _, err := gitIn(work, s...); err != nil {
			return "", err
		}
	}
	return gitIn(work, "rev-parse", "HEAD")
}

// gitIn runs git in dir as the forge's author and returns its trimmed
// output.
func gitIn(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=forgetest", "GIT_AUTHOR_EMAIL=forgetest@example.com",
		"GIT_COMMITTER_NAME=forgetest", "GIT_COMMITTER_EMAIL=forgetest@example.com",
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("forgetest: git %v: %w: %s", args, err, out)
	}
	return strings.TrimSpace(string(out)), nil
}
