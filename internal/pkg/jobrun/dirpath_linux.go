package jobrun

import (
	"os"
	"strconv"
)

// dirPath is a path by which a child process enters the open directory
// dir itself: /proc/self/fd/N resolves to the open file, not by name, so
// a symlink swapped in on the way to path after dir was opened cannot
// redirect the child.
func dirPath(dir *os.File, path string) string {
	p := "/proc/self/fd/" + strconv.Itoa(int(dir.Fd()))
	if _, err := os.Stat(p); err != nil {
		return path // no /proc
	}
	return p
}
