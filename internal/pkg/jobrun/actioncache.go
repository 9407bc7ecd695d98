package jobrun

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// DefaultActionCacheBytes bounds the action cache when the admin sets no
// bound (runner.action_cache_max_mb).
const DefaultActionCacheBytes = 1 << 30

// ActionCache is the on-disk cache of the remote actions jobs use, one
// directory per repository and resolved commit (a commit's tree never
// changes, so an entry is never stale; a moved tag resolves to another
// commit). Only the daemon reads and writes it: a job gets a copy of an
// entry in its task directory, so no job can change what a later job
// runs. Its size is bounded: after each addition the entries used least
// recently are removed until the cache is within MaxBytes. It is safe for
// concurrent use by the daemon's jobs.
type ActionCache struct {
	// Dir is the cache's directory, made 0700 on first use.
	Dir string
	// MaxBytes bounds the cache; an action larger than it is refused.
	// Zero or less is DefaultActionCacheBytes.
	MaxBytes int64

	mu    sync.Mutex
	clean sync.Once
}

func (c *ActionCache) limit() int64 {
	if c.MaxBytes <= 0 {
		return DefaultActionCacheBytes
	}
	return c.MaxBytes
}

// entry is the directory of the action at key (host/owner/repo/commit).
func (c *ActionCache) entry(key string) string { return filepath.Join(c.Dir, filepath.FromSlash(key)) }

// prepare makes the cache directory and removes what an interrupted
// addition left (tmp-*), once.
func (c *ActionCache) prepare() error {
	if err := os.MkdirAll(c.Dir, 0o700); err != nil {
		return fmt.Errorf("create the action cache %s: %w (set runner.action_cache_dir to a writable directory)", c.Dir, err)
	}
	c.clean.Do(func() {
		if ents, err := os.ReadDir(c.Dir); err == nil {
			for _, e := range ents {
				if strings.HasPrefix(e.Name(), "tmp-") {
					_ = os.RemoveAll(filepath.Join(c.Dir, e.Name()))
				}
			}
		}
	})
	return nil
}

// copyOut copies the entry at key into the new directory dst; false when
// the cache has no such entry. A used entry counts as recently used.
func (c *ActionCache) copyOut(key, dst string) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.prepare(); err != nil {
		return false, err
	}
	src := c.entry(key)
	if fi, err := os.Stat(src); err != nil || !fi.IsDir() {
		return false, nil
	}
	now := time.Now()
	_ = os.Chtimes(src, now, now)
	if err := copyTree(dst, src); err != nil {
		return false, fmt.Errorf("copy the cached action %s: %w", key, err)
	}
	return true, nil
}

// add stores the tree at src as the entry at key, then removes the least
// recently used entries until the cache is within MaxBytes.
func (c *ActionCache) add(key, src string) error {
	size, err := treeSize(src)
	if err != nil {
		return err
	}
	if size > c.limit() {
		return fmt.Errorf("the action is %s, more than the action cache's bound of %s; use a smaller action, or ask the admin to raise runner.action_cache_max_mb", mib(size), mib(c.limit()))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.prepare(); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(c.Dir, "tmp-")
	if err != nil {
		return fmt.Errorf("add to the action cache: %w", err)
	}
	defer os.RemoveAll(tmp)
	if err := copyTree(tmp, src); err != nil {
		return fmt.Errorf("add to the action cache: %w", err)
	}
	dst := c.entry(key)
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return fmt.Errorf("add to the action cache: %w", err)
	}
	if err := os.Rename(tmp, dst); err != nil && !errors.Is(err, fs.ErrExist) && !isNotEmpty(err) {
		return fmt.Errorf("add to the action cache: %w", err)
	}
	c.evict(dst)
	return nil
}

func isNotEmpty(err error) bool {
	return err != nil && strings.Contains(err.Error(), "directory not empty")
}

// evict removes the entries used least recently, but keep, until the
// cache is within MaxBytes.
func (c *ActionCache) evict(keep string) {
	type ent struct {
		dir  string
		size int64
		used time.Time
	}
	var ents []ent
	var total int64
	// Entries are the directories four levels down: host/owner/repo/commit.
	matches, _ := filepath.Glob(filepath.Join(c.Dir, "*", "*", "*", "*"))
	for _, m := range matches {
		fi, err := os.Lstat(m)
		if err != nil || !fi.IsDir() {
			continue
		}
		size, err := treeSize(m)
		if err != nil {
			continue
		}
		ents = append(ents, ent{m, size, fi.ModTime()})
		total += size
	}
	sort.Slice(ents, func(a, b int) bool { return ents[a].used.Before(ents[b].used) })
	for _, e := range ents {
		if total <= c.limit() {
			return
		}
		if e.dir == keep {
			continue
		}
		if os.RemoveAll(e.dir) == nil {
			total -= e.size
		}
	}
}

// treeSize is the size of the files under dir (symlinks not followed).
func treeSize(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			fi, err := d.Info()
			if err != nil {
				return err
			}
			n += fi.Size()
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("measure %s: %w", dir, err)
	}
	return n, nil
}

// copyTree copies the directory src into dst (which may exist): regular
// files with their mode, directories, and symlinks as symlinks (never
// followed); anything else is skipped.
func copyTree(dst, src string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(to, 0o755)
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(target, to)
		case d.Type().IsRegular():
			fi, err := d.Info()
			if err != nil {
				return err
			}
			return copyFile(to, p, fi.Mode().Perm()|0o600)
		}
		return nil
	})
}

// copyFile copies the regular file src to the new file dst.
func copyFile(dst, src string, perm fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
