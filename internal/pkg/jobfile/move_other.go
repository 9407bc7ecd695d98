//go:build !linux

package jobfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// renameNoReplace renames from to name in the directory at parentPath,
// by path: without renameat2, a link swapped in between the check and the
// rename is not caught. Anything at name is an error satisfying
// errors.Is(err, fs.ErrExist).
func renameNoReplace(from string, _ *os.File, parentPath, name string) error {
	to := filepath.Join(parentPath, name)
	if _, err := os.Lstat(to); err == nil {
		return fs.ErrExist
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return os.Rename(from, to)
}
