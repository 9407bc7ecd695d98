package run

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/forgeload/forgeload/internal/pkg/jobrun"
)

// taskRoot is the directory that holds the task directories of the runner
// with processOwner owner, in workDir: one of its own for a registration
// (so that a daemon removing the ones a killed predecessor left touches no
// other runner's, even when they share the work dir), workDir itself for
// local runs (forgeload exec, no owner).
func taskRoot(workDir, owner string) string {
	if owner == "" {
		return workDir
	}
	sum := sha256.Sum256([]byte("forgeload task directories\x00" + owner))
	return filepath.Join(workDir, "runner-"+hex.EncodeToString(sum[:6]))
}

// RemoveStaleTaskDirs removes the task directories that an earlier daemon
// of this runner's registration left when it was killed (kill -9, the OOM
// killer, a crash): a job's workspace, scripts and event file, secrets in
// them, would otherwise stay on disk for ever. The daemon calls it at
// start, after it has taken the registration's lock (so no live daemon
// owns them) and stopped the processes the killed one's steps left, and
// before it takes a job. Only this registration's directory is searched,
// and only the task directories in it are removed, without following any
// symlink in them. It returns the directories removed; the error joins
// those it could not remove (a job container's root-owned files, say, when
// the daemon is not root). It does nothing for a runner with no
// ProcessOwner (forgeload exec).
func (r *Runner) RemoveStaleTaskDirs() ([]string, error) {
	if r.o.ProcessOwner == "" {
		return nil, nil
	}
	dir := r.o.TaskRoot
	root, err := os.OpenRoot(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open the runner's task directories %s: %w", dir, err)
	}
	defer root.Close()
	f, err := root.Open(".")
	if err != nil {
		return nil, fmt.Errorf("list the runner's task directories %s: %w", dir, err)
	}
	names, err := f.Readdirnames(-1)
	_ = f.Close()
	if err != nil {
		return nil, fmt.Errorf("list the runner's task directories %s: %w", dir, err)
	}
	sort.Strings(names)
	var removed []string
	var errs []error
	for _, name := range names {
		if !strings.HasPrefix(name, jobrun.TaskDirPrefix) {
			continue
		}
		// Root.RemoveAll unlinks a symlink, never what it points at.
		if err := root.RemoveAll(name); err != nil {
			errs = append(errs, fmt.Errorf("remove %s: %w", filepath.Join(dir, name), err))
			continue
		}
		removed = append(removed, filepath.Join(dir, name))
	}
	return removed, errors.Join(errs...)
}
