package jobfile

import (
	"errors"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// renameNoReplace renames from to name in the open directory parent
// (whose path is parentPath) by the directory's descriptor, so no path
// the job can change is walked; name is not followed and not replaced:
// anything there is an error satisfying errors.Is(err, fs.ErrExist).
func renameNoReplace(from string, parent *os.File, _ string, name string) error {
	rc, err := parent.SyscallConn()
	if err != nil {
		return err
	}
	var rerr error
	if err := rc.Control(func(fd uintptr) {
		rerr = unix.Renameat2(unix.AT_FDCWD, from, int(fd), name, unix.RENAME_NOREPLACE)
		if errors.Is(rerr, unix.EINVAL) || errors.Is(rerr, unix.ENOSYS) {
			// A file system without RENAME_NOREPLACE: a directory renamed
			// onto a path replaces only an empty directory there, and fails
			// on anything else.
			rerr = unix.Renameat(unix.AT_FDCWD, from, int(fd), name)
		}
	}); err != nil {
		return err
	}
	if errors.Is(rerr, unix.EEXIST) || errors.Is(rerr, unix.ENOTEMPTY) || errors.Is(rerr, unix.ENOTDIR) || errors.Is(rerr, unix.EISDIR) {
		return fs.ErrExist
	}
	return rerr
}
