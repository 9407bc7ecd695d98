//go:build unix

package config

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// LockRegistration takes an exclusive, non-blocking lock on the registration
// at path, so that two daemons never share one runner identity. The lock is
// a flock on path+".lock" (not on path itself, which [SaveRegistration]
// replaces); the holder's PID is written into that file. If another process,
// or another call in this process, holds it, LockRegistration fails at once
// with an error naming the holder's PID. unlock releases the lock; it is
// safe to call more than once. The .lock file is left in place: removing it
// would let two lockers race.
func LockRegistration(path string) (unlock func() error, err error) {
	lockPath := path + ".lock"
	f, err := os.OpenFile(lockPath, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock registration %q: open %q: %w (check that its directory is writable)", path, lockPath, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		holder := ""
		if b, rerr := os.ReadFile(lockPath); rerr == nil {
			if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); perr == nil {
				holder = fmt.Sprintf(" (pid %d)", pid)
			}
		}
		_ = f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("lock registration %q: another forgeload daemon%s holds this registration; stop it, or give this daemon its own runner.file and register it", path, holder)
		}
		return nil, fmt.Errorf("lock registration %q: flock %q: %w", path, lockPath, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	var once sync.Once
	var uerr error
	return func() error {
		once.Do(func() {
			_ = f.Truncate(0)
			if err := unix.Flock(int(f.Fd()), unix.LOCK_UN); err != nil {
				uerr = fmt.Errorf("unlock registration %q: %w", path, err)
			}
			if err := f.Close(); err != nil && uerr == nil {
				uerr = fmt.Errorf("unlock registration %q: close %q: %w", path, lockPath, err)
			}
		})
		return uerr
	}, nil
}
