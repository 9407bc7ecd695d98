package jobfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// ErrTooLarge is wrapped by errors for files over their limit.
var ErrTooLarge = errors.New("file too large")

// ErrNotRegular is wrapped by errors for files that are not regular files.
var ErrNotRegular = errors.New("not a regular file")

// ErrNotDir is wrapped by errors for paths that must be a real directory,
// reached through no symlink, and are not.
var ErrNotDir = errors.New("not a real directory")

// ErrOutside is wrapped by errors for paths outside the confining directory.
var ErrOutside = errors.New("path outside the job's directory")

// openFlags open without blocking on a FIFO; reads of a regular file are
// unaffected by O_NONBLOCK.
const openFlags = os.O_RDONLY | syscall.O_NONBLOCK | syscall.O_CLOEXEC

// Read reads the file at path, following symlinks: a regular file of at
// most limit bytes. name is the file's name in errors.
func Read(path, name string, limit int64) ([]byte, error) {
	f, err := os.OpenFile(path, openFlags, 0)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	defer f.Close()
	return read(f, name, limit)
}

// ReadIn reads the file at path inside root: path is relative to root's
// directory, or absolute and inside it. Symlinks are followed only while
// they stay inside root. The file must be a regular file of at most limit
// bytes. name is the file's name in errors (e.g. "config: perf/api.yaml").
func ReadIn(root *os.Root, path, name string, limit int64) ([]byte, error) {
	rel, err := Rel(root.Name(), path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	f, err := root.OpenFile(rel, openFlags, 0)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s: no such file in the workspace: %w", name, err)
		}
		if strings.Contains(err.Error(), "escapes") {
			return nil, fmt.Errorf("%s: a symlink leads outside the workspace: %w; only files inside the workspace can be read", name, ErrOutside)
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	defer f.Close()
	return read(f, name, limit)
}

// Rel returns path relative to dir: a relative path is cleaned and must not
// climb out of dir with ".."; an absolute path must lie inside dir. Only the
// text is checked; [ReadIn] also confines symlinks.
func Rel(dir, path string) (string, error) {
	if filepath.IsAbs(path) {
		r, err := filepath.Rel(filepath.Clean(dir), filepath.Clean(path))
		if err != nil {
			return "", fmt.Errorf("%s is outside the workspace %s: %w; give a path inside the workspace", path, dir, ErrOutside)
		}
		path = r
	}
	path = filepath.Clean(path)
	if path == ".." || strings.HasPrefix(path, "../") {
		return "", fmt.Errorf("%s is outside the workspace %s: %w; give a path inside the workspace", path, dir, ErrOutside)
	}
	return path, nil
}

// read reads an open file, refusing a non-regular file and more than limit
// bytes, whatever the file grows to while it is read.
func read(f *os.File, name string, limit int64) ([]byte, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("stat %s: %w", name, err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is %s: %w; give a regular file", name, kind(st.Mode()), ErrNotRegular)
	}
	if st.Size() > limit {
		return nil, tooLarge(name, st.Size(), limit)
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	if int64(len(data)) > limit {
		return nil, tooLarge(name, int64(len(data)), limit)
	}
	return data, nil
}

func tooLarge(name string, size, limit int64) error {
	return fmt.Errorf("%s is %s, more than the %s limit: %w", name, Size(size), Size(limit), ErrTooLarge)
}

func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSymlink != 0:
		return "a symlink"
	}
	return "not a regular file"
}

// Size formats a byte count for messages: "1 MiB", "512 KiB", "17 bytes".
func Size(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	case n >= 10<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d bytes", n)
}
