package jobrun

import (
	"os"

	"golang.org/x/sys/unix"
)

// unread is how many bytes pipe r holds (FIONREAD); 0 if unknown.
func unread(r *os.File) int {
	rc, err := r.SyscallConn()
	if err != nil {
		return 0
	}
	n := 0
	_ = rc.Control(func(fd uintptr) {
		if v, err := unix.IoctlGetInt(int(fd), unix.TIOCINQ); err == nil {
			n = v
		}
	})
	return n
}
