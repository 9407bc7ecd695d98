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
// with an error naming the holder's PID. unlock removes the .lock file and
// releases the lock; it is safe to call more than once. The file is removed
// while the lock is held, and a locker checks after flock that the file it
// locked is still the one at that path (else it starts over), so removing
// it lets no two lockers both succeed. A killed process leaves the file,
// unlocked, behind; the next locker takes it over.
func LockRegistration(path string) (unlock func() error, err error) {
	lockPath := path + ".lock"
	for attempt := 0; ; attempt++ {
		f, err := lockFile(path, lockPath)
		if err != nil {
			return nil, err
		}
		if f != nil {
			return unlocker(path, lockPath, f), nil
		}
		if attempt >= 10 {
			return nil, fmt.Errorf("lock registration %q: %q keeps being replaced while it is locked; check that no other program removes it", path, lockPath)
		}
	}
}

// lockFile opens and flocks lockPath. It returns a nil file, and no error,
// when the file it locked was removed or replaced meanwhile by the previous
// holder's unlock, so that the caller tries again.
func lockFile(path, lockPath string) (*os.File, error) {
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
	var held, named unix.Stat_t
	if unix.Fstat(int(f.Fd()), &held) != nil || unix.Stat(lockPath, &named) != nil || held.Dev != named.Dev || held.Ino != named.Ino {
		_ = f.Close()
		return nil, nil
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return f, nil
}

func unlocker(path, lockPath string, f *os.File) func() error {
	var once sync.Once
	var uerr error
	return func() error {
		once.Do(func() {
			if err := os.Remove(lockPath); err != nil && !errors.Is(err, os.ErrNotExist) {
				_ = f.Truncate(0)
			}
			if err := unix.Flock(int(f.Fd()), unix.LOCK_UN); err != nil {
				uerr = fmt.Errorf("unlock registration %q: %w", path, err)
			}
			if err := f.Close(); err != nil && uerr == nil {
				uerr = fmt.Errorf("unlock registration %q: close %q: %w", path, lockPath, err)
			}
		})
		return uerr
	}
}
