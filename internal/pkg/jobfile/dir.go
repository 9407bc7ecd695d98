package jobfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
)

// Dir is a directory that a job can write to (a task directory, which a
// job container mounts read-write), opened once, before the job runs. Every
// operation on it resolves its path inside the directory through an
// [os.Root]: "..", absolute symlinks and symlinks that climb out are
// refused, so a symlink the job planted never makes the daemon read,
// write, create, truncate or remove a file elsewhere. Paths are given as
// absolute paths inside the directory (as the job sees them, e.g. the
// value of GITHUB_ENV) or relative to it; errors name them relative to it.
//
// A Dir is safe for concurrent use. Its zero value is not usable: call
// [OpenDir].
type Dir struct {
	root *os.Root
}

// OpenDir opens the directory at path, which the daemon made and the job
// has not touched yet (symlinks on the way to it are followed once, here).
func OpenDir(path string) (*Dir, error) {
	r, err := os.OpenRoot(path)
	if err != nil {
		return nil, fmt.Errorf("open the task directory: %w", err)
	}
	return &Dir{root: r}, nil
}

// Close closes the directory.
func (d *Dir) Close() error { return d.root.Close() }

// Path is the directory's path, as given to OpenDir.
func (d *Dir) Path() string { return d.root.Name() }

// OpenRoot opens the directory at path as an [os.Root] of its own, for
// readers such as [ReadIn]; the caller closes it.
func (d *Dir) OpenRoot(path string) (*os.Root, error) {
	rel, err := d.rel(path)
	if err != nil {
		return nil, err
	}
	r, err := d.root.OpenRoot(rel)
	if err != nil {
		return nil, d.confine("open", rel, err)
	}
	return r, nil
}

// rel turns path into a path relative to the directory, refusing one
// outside it.
func (d *Dir) rel(path string) (string, error) {
	rel, err := Rel(d.Path(), path)
	if err != nil {
		return "", err
	}
	return rel, nil
}

// confine rewrites an error of the root into one that names rel and says
// what happened.
func (d *Dir) confine(op, rel string, err error) error {
	if err == nil {
		return nil
	}
	if isEscape(err) {
		return fmt.Errorf("%s %s in the task directory %s: a symlink on the way leads out of it (%w), and the runner reads and writes only inside the task directory", op, rel, d.Path(), ErrOutside)
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return fmt.Errorf("%s %s in the task directory %s: %w", op, rel, d.Path(), err)
}

// isEscape reports whether err is os.Root's refusal of a path that
// leads out of it (its error value is not exported).
func isEscape(err error) bool {
	return err != nil && strings.Contains(err.Error(), "path escapes from parent")
}

// CreateNew writes data to a new file at path, created with O_EXCL: when
// anything is at path already (a file, or a symlink, which is not
// followed), it fails, naming the path, so neither an existing file nor
// the target of a symlink is ever opened, truncated or created.
func (d *Dir) CreateNew(path string, data []byte, perm fs.FileMode) error {
	rel, err := d.rel(path)
	if err != nil {
		return err
	}
	f, err := d.root.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_CLOEXEC, perm)
	if err != nil {
		return d.exists("create", rel, err)
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return d.confine("write", rel, err)
	}
	return d.confine("write", rel, f.Close())
}

// MkdirNew makes a new, empty directory at path: when anything is at path
// already (a symlink included), it fails, naming the path. The parent must
// exist.
func (d *Dir) MkdirNew(path string, perm fs.FileMode) error {
	rel, err := d.rel(path)
	if err != nil {
		return err
	}
	return d.exists("create", rel, d.root.Mkdir(rel, perm))
}

// exists is confine, saying what is in the way when err is fs.ErrExist.
func (d *Dir) exists(op, rel string, err error) error {
	if !errors.Is(err, fs.ErrExist) {
		return d.confine(op, rel, err)
	}
	what := "something"
	if fi, lerr := d.root.Lstat(rel); lerr == nil {
		what = kind(fi.Mode())
		if fi.Mode().IsRegular() {
			what = "a file"
		}
	}
	return fmt.Errorf("%s %s in the task directory %s: %s is there already (%w), and the runner makes this path new for each step: a step must not create, replace or link paths in temp/ and files/ that the runner uses", op, rel, d.Path(), what, fs.ErrExist)
}

// MkdirAll makes the directory at path and any parents it lacks, inside
// the directory.
func (d *Dir) MkdirAll(path string, perm fs.FileMode) error {
	rel, err := d.rel(path)
	if err != nil {
		return err
	}
	return d.confine("create", rel, d.root.MkdirAll(rel, perm))
}

// RemoveAll removes path and everything under it, without following a
// symlink at path or in it. A missing path is not an error.
func (d *Dir) RemoveAll(path string) error {
	rel, err := d.rel(path)
	if err != nil {
		return err
	}
	return d.confine("remove", rel, d.root.RemoveAll(rel))
}

// Stat is [os.Root.Stat] of path: symlinks are followed while they stay
// inside the directory.
func (d *Dir) Stat(path string) (fs.FileInfo, error) {
	rel, err := d.rel(path)
	if err != nil {
		return nil, err
	}
	fi, err := d.root.Stat(rel)
	if err != nil {
		return nil, d.confine("stat", rel, err)
	}
	return fi, nil
}

// ReadNoFollow reads the regular file at path, of at most limit bytes: a
// symlink at path is refused, and the directories on the way resolve
// inside the directory only. name is the file's name in errors (e.g.
// "GITHUB_OUTPUT"). A missing file is reported with an error that
// satisfies errors.Is(err, fs.ErrNotExist).
func (d *Dir) ReadNoFollow(path, name string, limit int64) ([]byte, error) {
	rel, err := d.rel(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	f, err := d.root.OpenFile(rel, openFlags, 0)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		return nil, fmt.Errorf("%s: %w", name, d.confine("open", rel, err))
	}
	defer f.Close()
	// The root follows a symlink at path that stays inside; this file must
	// be the one the runner made, so a symlink is refused.
	lfi, err := d.root.Lstat(rel)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, d.confine("stat", rel, err))
	}
	if lfi.Mode()&fs.ModeSymlink != 0 {
		return nil, fmt.Errorf("%s (%s in the task directory) is a symlink, which this file must not be: %w; write to the file itself", name, rel, ErrNotRegular)
	}
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("stat %s: %w", name, err)
	}
	if !os.SameFile(fi, lfi) {
		return nil, fmt.Errorf("%s (%s in the task directory) changed while the runner opened it: %w; write to the file itself", name, rel, ErrNotRegular)
	}
	return read(f, name, limit)
}

// OpenRealDir opens the directory at path for running a program in it:
// path must resolve, inside the directory, to a real directory reached
// through no symlink at all, so that the directory opened is the one its
// path names. It returns the open directory and its path; the caller
// closes it.
func (d *Dir) OpenRealDir(path string) (*os.File, string, error) {
	rel, err := d.rel(path)
	if err != nil {
		return nil, "", err
	}
	// Each component is checked with Lstat through the root: a symlink
	// anywhere on the way, even one that stays inside, is refused.
	cur := "."
	if rel != "." {
		for _, part := range strings.Split(rel, string(filepath.Separator)) {
			cur = filepath.Join(cur, part)
			fi, err := d.root.Lstat(cur)
			if err != nil {
				return nil, "", d.confine("open", cur, err)
			}
			if fi.Mode()&fs.ModeSymlink != 0 {
				return nil, "", fmt.Errorf("%s in the task directory is a symlink: %w; remove the link, or choose another path", cur, ErrNotDir)
			}
			if !fi.IsDir() {
				what := kind(fi.Mode())
				if fi.Mode().IsRegular() {
					what = "a file"
				}
				return nil, "", fmt.Errorf("%s in the task directory is %s: %w", cur, what, ErrNotDir)
			}
		}
	}
	f, err := d.root.OpenFile(rel, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, "", d.confine("open", rel, err)
	}
	// A link swapped in after the checks above still resolves inside the
	// root; the directory opened must also be the one the path names.
	want := filepath.Join(d.Path(), rel)
	fi, err := f.Stat()
	if err == nil {
		var byPath fs.FileInfo
		byPath, err = os.Lstat(want)
		if err == nil && !os.SameFile(fi, byPath) {
			err = fmt.Errorf("it changed while it was opened: %w", ErrNotDir)
		}
	}
	if err != nil {
		_ = f.Close()
		return nil, "", fmt.Errorf("open %s in the task directory: %w", rel, err)
	}
	return f, want, nil
}

// MoveIn moves the file or directory at from, which the daemon made
// outside the task directory (where no job can write to it), to the new
// path to
// inside the task directory. to's parent must be a real directory reached
// through no symlink (as for [Dir.OpenRealDir]), and nothing may be at to:
// a file, symlink or directory the job put there is neither followed nor
// replaced, and MoveIn fails with an error that satisfies
// errors.Is(err, fs.ErrExist), so that the caller can remove it and try
// again. from and to must be on the same file system: the move is one
// rename.
func (d *Dir) MoveIn(from, to string) error {
	rel, err := d.rel(to)
	if err != nil {
		return err
	}
	if rel == "." {
		return fmt.Errorf("move %s into the task directory %s: the destination is the task directory itself; name a path inside it", from, d.Path())
	}
	parent, parentPath, err := d.OpenRealDir(filepath.Dir(rel))
	if err != nil {
		return fmt.Errorf("move %s to %s: %w", from, rel, err)
	}
	defer parent.Close()
	err = renameNoReplace(from, parent, parentPath, filepath.Base(rel))
	switch {
	case err == nil:
		return nil
	case errors.Is(err, fs.ErrExist):
		what := "something"
		if fi, lerr := d.root.Lstat(rel); lerr == nil {
			what = kind(fi.Mode())
			if fi.Mode().IsRegular() {
				what = "a file"
			}
		}
		return fmt.Errorf("move %s to %s in the task directory %s: %s is there (%w); the runner neither follows nor replaces what a step put there", from, rel, d.Path(), what, fs.ErrExist)
	case errors.Is(err, syscall.EXDEV):
		return fmt.Errorf("move %s to %s in the task directory %s: they are on different file systems (%w); keep the runner's work dir on one file system", from, rel, d.Path(), err)
	default:
		return fmt.Errorf("move %s to %s in the task directory %s: %w", from, rel, d.Path(), err)
	}
}

// Empty removes everything in the directory at path, which must be a real
// directory reached through no symlink (as for [Dir.OpenRealDir]), without
// following a symlink at or in any entry.
func (d *Dir) Empty(path string) error {
	names, rel, err := d.names(path)
	if err != nil {
		return err
	}
	for _, name := range names {
		if err := d.RemoveAll(filepath.Join(rel, name)); err != nil {
			return err
		}
	}
	return nil
}

// names lists the directory at path, a real directory reached through no
// symlink, and gives its path relative to the directory.
func (d *Dir) names(path string) ([]string, string, error) {
	rel, err := d.rel(path)
	if err != nil {
		return nil, "", err
	}
	f, _, err := d.OpenRealDir(rel)
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, "", fmt.Errorf("list %s in the task directory %s: %w", rel, d.Path(), err)
	}
	sort.Strings(names)
	return names, rel, nil
}

// MoveTreeIn moves every entry of the directory from, which the daemon
// made outside the task directory, into the directory at to inside it
// (see [Dir.MoveIn]): a directory of from where to holds a real directory
// of the same name is merged into it the same way; anything else at an
// entry's path (a file, a symlink, a directory where from has a file) is
// removed first, without following it. Nothing is copied: each entry
// moves by one rename, which keeps its inode and modification time. The
// directory at to must be a real directory reached through no symlink;
// when MoveTreeIn returns nil, from is empty.
func (d *Dir) MoveTreeIn(from, to string) error {
	rel, err := d.rel(to)
	if err != nil {
		return err
	}
	top, _, err := d.OpenRealDir(rel)
	if err != nil {
		return err
	}
	_ = top.Close()
	f, err := os.Open(from)
	if err != nil {
		return err
	}
	names, err := f.Readdirnames(-1)
	_ = f.Close()
	if err != nil {
		return fmt.Errorf("list %s: %w", from, err)
	}
	sort.Strings(names)
	for _, name := range names {
		src, dst := filepath.Join(from, name), filepath.Join(rel, name)
		sfi, err := os.Lstat(src)
		if err != nil {
			return err
		}
		if sfi.IsDir() {
			if fi, err := d.root.Lstat(dst); err == nil && fi.IsDir() {
				if err := d.MoveTreeIn(src, dst); err != nil {
					return err
				}
				if err := os.Remove(src); err != nil {
					return err
				}
				continue
			}
		}
		if err := d.Replace(src, dst); err != nil {
			return err
		}
	}
	return nil
}

// Replace moves from (the daemon's, outside the task directory) to the
// path to inside it, as [Dir.MoveIn] does, after removing whatever is at
// to without following it; it tries again, a few times, while something
// is put back at to in between.
func (d *Dir) Replace(from, to string) error {
	var err error
	for range 3 {
		if err = d.RemoveAll(to); err != nil {
			return err
		}
		if err = d.MoveIn(from, to); !errors.Is(err, fs.ErrExist) {
			return err
		}
	}
	return err
}
