package forgetest

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// AddRepo creates the repository name ("owner/repo") on the forge with one
// commit on main holding files (path -> content), and returns the commit
// id. The forge serves it over smart HTTP at URL()/owner/repo.git with git
// http-backend, as Gitea does, and only to requests that carry a task token
// of a task that is not done yet (basic auth with any user name and the
// token as the password, which is how actions/checkout authenticates).
// Jobs queued afterwards get repository and sha pointing at it unless their
// Context says otherwise. It needs git on PATH.
func (f *Forge) AddRepo(name string, files map[string]string) (string, error) {
	owner, repo, ok := strings.Cut(name, "/")
	if !ok || owner == "" || repo == "" || strings.ContainsAny(repo, "/.") {
		return "", fmt.Errorf("forgetest: AddRepo(%q): want owner/repo", name)
	}
	if _, err := exec.LookPath("git"); err != nil {
		return "", fmt.Errorf("forgetest: AddRepo needs git on PATH: %w", err)
	}
	f.mu.Lock()
	if f.gitRoot == "" {
		dir, err := os.MkdirTemp("", "forgetest-git-")
		if err != nil {
			f.mu.Unlock()
			return "", fmt.Errorf("forgetest: AddRepo: %w", err)
		}
		f.gitRoot = dir
	}
	root := f.gitRoot
	f.mu.Unlock()

	work, err := os.MkdirTemp("", "forgetest-work-")
	if err != nil {
		return "", fmt.Errorf("forgetest: AddRepo: %w", err)
	}
	defer os.RemoveAll(work)
	git := func(dir string, args ...string) (string, error) {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=forgetest", "GIT_AUTHOR_EMAIL=forgetest@example.com",
			"GIT_COMMITTER_NAME=forgetest", "GIT_COMMITTER_EMAIL=forgetest@example.com")
		out, err := cmd.CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("forgetest: git %v: %w: %s", args, err, out)
		}
		return strings.TrimSpace(string(out)), nil
	}
	if _, err := git(work, "init", "-q", "-b", "main", "."); err != nil {
		return "", err
	}
	for p, content := range files {
		full := filepath.Join(work, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return "", fmt.Errorf("forgetest: AddRepo: %w", err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			return "", fmt.Errorf("forgetest: AddRepo: %w", err)
		}
	}
	if _, err := git(work, "add", "-A"); err != nil {
		return "", err
	}
	if _, err := git(work, "commit", "-q", "--allow-empty", "-m", "forgetest"); err != nil {
		return "", err
	}
	sha, err := git(work, "rev-parse", "HEAD")
	if err != nil {
		return "", err
	}
	bare := filepath.Join(root, owner, repo+".git")
	if err := os.RemoveAll(bare); err != nil {
		return "", fmt.Errorf("forgetest: AddRepo: %w", err)
	}
	if _, err := git(root, "clone", "-q", "--bare", work, bare); err != nil {
		return "", err
	}
	if _, err := git(bare, "config", "uploadpack.allowReachableSHA1InWant", "true"); err != nil {
		return "", err
	}
	f.mu.Lock()
	f.repo, f.repoSHA = name, sha
	f.mu.Unlock()
	return sha, nil
}

// GitAuths returns the task tokens that authenticated git requests, in
// order (one per request).
func (f *Forge) GitAuths() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.gitAuths)
}

// serveGit answers smart-HTTP git requests for repositories made with
// AddRepo.
func (f *Forge) serveGit(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	root := f.gitRoot
	var token string
	if u, p, ok := basicAuth(r); ok && u != "" {
		token = p
	}
	valid := false
	for _, t := range f.tasks {
		if token != "" && t.token == token && !t.status.isDone() {
			valid = true
		}
	}
	if valid {
		f.gitAuths = append(f.gitAuths, token)
	}
	f.mu.Unlock()
	r = withGitSuffix(r)
	if root == "" || !strings.Contains(r.URL.Path, ".git/") {
		http.NotFound(w, r)
		return
	}
	if !valid {
		w.Header().Set("WWW-Authenticate", `Basic realm="forgetest"`)
		http.Error(w, "authentication required: send a running task's token", http.StatusUnauthorized)
		return
	}
	out, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		http.Error(w, "git is not installed", http.StatusInternalServerError)
		return
	}
	h := &cgi.Handler{
		Path: filepath.Join(strings.TrimSpace(string(out)), "git-http-backend"),
		Env:  []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1"},
	}
	h.ServeHTTP(w, r)
}

// withGitSuffix is r with its path /owner/repo/info/refs (or
// /git-upload-pack, /git-receive-pack) made /owner/repo.git/...: Gitea
// serves a repository's git at both URLs, and actions/checkout fetches
// from the one without .git.
func withGitSuffix(r *http.Request) *http.Request {
	parts := strings.SplitN(strings.TrimPrefix(r.URL.Path, "/"), "/", 3)
	if len(parts) < 3 || parts[0] == "" || parts[1] == "" || strings.HasSuffix(parts[1], ".git") {
		return r
	}
	switch rest := parts[2]; {
	case rest == "info/refs", rest == "git-upload-pack", rest == "git-receive-pack":
	default:
		return r
	}
	r = r.Clone(r.Context())
	r.URL.Path = "/" + parts[0] + "/" + parts[1] + ".git/" + parts[2]
	r.URL.RawPath = ""
	return r
}

func basicAuth(r *http.Request) (user, pass string, ok bool) {
	a := r.Header.Get("Authorization")
	scheme, rest, found := strings.Cut(a, " ")
	if !found || !strings.EqualFold(scheme, "basic") {
		return "", "", false
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(rest))
	if err != nil {
		return "", "", false
	}
	return strings.Cut(string(raw), ":")
}
