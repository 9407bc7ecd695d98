package jobrun

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/forgeload/forgeload/internal/pkg/jobfile"
)

// hostGit runs the checkout's git commands on the host, as the daemon.
//
// git works only in a private directory (0700) beside the task directory,
// in the runner's own directory of task directories, which no job
// container or service mounts: the repository directory (GIT_DIR) and the
// work tree both. So no process the job left running (in its container,
// or in a service that mounts part of the workspace) can change the
// config, attributes, hooks or anything else git reads while it runs, nor
// swap a directory of the workspace for a symlink to make git write or
// clean somewhere else on the host: git resolves its work tree by path.
// Only when git is done do the files and the repository move into the
// destination, through the task directory's root (see [hostGit.moveInto]).
//
// git reads no system or global config and no system attributes, HOME is
// an empty private directory, and the daemon's GIT_* variables are
// dropped but GIT_SSL_* (a forge's CA). The command-line config turns
// hooks and fsmonitor off and allows only the forge's protocol (http or
// https): no ext::, file:// or ssh transport, whatever a URL says. No
// filter, hook, credential helper or other command runs that the
// repository's content could name: the one filter that runs is git-lfs's,
// which a checkout with lfs: true configures itself (see
// [hostGit.lfsInstall]).
type hostGit struct {
	ctx      context.Context
	priv     string // the private directory: git/, wt/ and home/
	gitDir   string // the repository
	workTree string // the work tree
	env      []string
	out      io.Writer
}

// newHostGit makes the private directory of a checkout that fetches from
// the forge at base (an http:// or https:// URL), with token (masked in
// the log) when there is one: the token goes only to URLs under base, so
// a submodule on another host is fetched without it. Besides the forge's
// scheme, git may speak https (a submodule's). git's output goes to out.
// The caller calls close.
func (j *job) newHostGit(ctx context.Context, base, token string, out io.Writer) (*hostGit, error) {
	scheme, _, _ := strings.Cut(base, "://")
	priv, err := os.MkdirTemp(j.deps.TaskRoot, fmt.Sprintf("%s%d-git-", TaskDirPrefix, j.task.GetId()))
	if err != nil {
		return nil, fmt.Errorf("create the checkout's private git directory in %s: %w (set a writable work dir)", j.deps.TaskRoot, err)
	}
	g := &hostGit{ctx: ctx, priv: priv, gitDir: filepath.Join(priv, "git"), workTree: filepath.Join(priv, "wt"), out: out}
	home := filepath.Join(priv, "home")
	for _, d := range []string{home, g.workTree} {
		if err := os.Mkdir(d, 0o700); err != nil {
			g.close()
			return nil, fmt.Errorf("create the checkout's private git directory in %s: %w", j.deps.TaskRoot, err)
		}
	}
	config := [][2]string{
		{"core.hooksPath", os.DevNull},
		{"core.fsmonitor", "false"},
		{"protocol.allow", "never"},
		{"protocol." + scheme + ".allow", "always"},
		{"protocol.https.allow", "always"},
		{"fetch.recurseSubmodules", "false"},
		{"submodule.recurse", "false"},
		// No gc or maintenance left running on the repository after git
		// returns, while it moves into the workspace.
		{"gc.auto", "0"},
		{"maintenance.auto", "false"},
	}
	if token != "" {
		auth := base64.StdEncoding.EncodeToString([]byte("x-access-token:" + token))
		config = append(config, [2]string{"http." + strings.TrimRight(base, "/") + "/.extraheader", "AUTHORIZATION: basic " + auth})
		j.rep.AddMask(auth)
	}
	g.env = checkoutGitEnv(os.Environ(), g.gitDir, g.workTree, home, config)
	return g, nil
}

// checkoutGitEnv is base (the daemon's environment) without HOME,
// XDG_CONFIG_HOME and the GIT_* variables but GIT_SSL_*, with git's
// repository at gitDir, the work tree at workTree, HOME at home, no system or global config or attributes, no prompt, and config
// as command-line config.
func checkoutGitEnv(base []string, gitDir, workTree, home string, config [][2]string) []string {
	env := make([]string, 0, len(base)+10+2*len(config))
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if k == "HOME" || k == "XDG_CONFIG_HOME" || (strings.HasPrefix(k, "GIT_") && !strings.HasPrefix(k, "GIT_SSL_")) {
			continue
		}
		env = append(env, kv)
	}
	env = append(env,
		"GIT_DIR="+gitDir,
		"GIT_WORK_TREE="+workTree,
		"HOME="+home,
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL="+os.DevNull,
		"GIT_ATTR_NOSYSTEM=1",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_CONFIG_COUNT="+strconv.Itoa(len(config)),
	)
	for n, kv := range config {
		env = append(env, fmt.Sprintf("GIT_CONFIG_KEY_%d=%s", n, kv[0]), fmt.Sprintf("GIT_CONFIG_VALUE_%d=%s", n, kv[1]))
	}
	return env
}

// gitWaitDelay bounds how long a git command's output is read after git
// was killed: what git started (git-lfs, a remote helper) may hold it.
const gitWaitDelay = 5 * time.Second

// command is git with args, in g's work tree and environment, ended with
// g's context: git in a process group of its own, killed whole, so that
// what git started (git-lfs's filter, git-remote-http) ends with it.
func (g *hostGit) command(args ...string) *exec.Cmd {
	cmd := exec.CommandContext(g.ctx, "git", args...)
	cmd.Dir = g.workTree
	cmd.Env = g.env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = gitWaitDelay
	return cmd
}

// run runs git with args and copies its output to the step's log.
func (g *hostGit) run(args ...string) error {
	cmd := g.command(args...)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	err := cmd.Run()
	for _, l := range strings.Split(strings.TrimRight(out.String(), "\n"), "\n") {
		if l != "" {
			fmt.Fprintln(g.out, l)
		}
	}
	if err != nil {
		return fmt.Errorf("git %s: %w", gitSubcommand(args), err)
	}
	return nil
}

// gitSubcommand is the subcommand in git's args, after any -c options.
func gitSubcommand(args []string) string {
	for len(args) > 1 && args[0] == "-c" {
		args = args[2:]
	}
	if len(args) == 0 {
		return ""
	}
	return args[0]
}

// moveInto moves the checked-out files and the repository into the
// destination dest through the task directory td. With clean, dest is
// emptied first (what git clean -ffdx did); else the files merge into what
// is there, replacing what is in their way. Whatever a step put at .git (a
// decoy directory, a link, a gitdir: file) is replaced by the repository.
// Nothing is followed: see [jobfile.Dir.MoveTreeIn].
func (g *hostGit) moveInto(td *jobfile.Dir, dest string, clean bool) error {
	if clean {
		if err := td.Empty(dest); err != nil {
			return fmt.Errorf("clean %s: %w", dest, err)
		}
	}
	if err := td.MoveTreeIn(g.workTree, dest); err != nil {
		return fmt.Errorf("put the checked-out files in %s: %w", dest, err)
	}
	if err := td.Replace(g.gitDir, filepath.Join(dest, ".git")); err != nil {
		return fmt.Errorf("put the repository in %s: %w", dest, err)
	}
	return nil
}

// close removes the private directory, and the repository in it when it
// was not moved.
func (g *hostGit) close() {
	_ = os.RemoveAll(g.priv)
}
