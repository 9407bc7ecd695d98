//go:build linux

package leftover

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// envBuf is the buffer an environment is scanned through; the marker is
// far shorter.
const envBuf = 512

// rounds bounds Stop's searches: a script that forks in a loop is found
// again, with its new children, until two searches in a row find no one
// new.
const rounds = 10

// Stop kills (SIGKILL) every process whose environment holds Marker(owner),
// other than this process and its ancestors, and returns those it killed.
// It searches /proc again after each round of kills, so that children
// forked meanwhile are found too, until two searches in a row find no one
// new. Each
// process is signalled through a pidfd opened before its environment is
// read, so a process id reused in between is never signalled. Processes
// whose environment this user may not read are not its own and are left
// alone. The error names those it could not kill, and why.
func Stop(ctx context.Context, owner string) ([]Proc, error) {
	marker := []byte(Marker(owner))
	skip := ancestors()
	var killed []Proc
	var errs []error
	quiet := 0 // searches in a row that found no one new
	for range rounds {
		if err := ctx.Err(); err != nil {
			return killed, err
		}
		found, ferrs, err := killMarked(marker, skip)
		errs = append(errs, ferrs...)
		if err != nil {
			return killed, errors.Join(append(errs, err)...)
		}
		if len(found) > 0 {
			killed, quiet = append(killed, found...), 0
			continue
		}
		// A process in the middle of an exec shows no environment for
		// that instant: it is taken to be done only after two searches.
		if quiet++; quiet == 2 {
			return killed, errors.Join(errs...)
		}
	}
	errs = append(errs, fmt.Errorf("processes marked %s were still starting after %d rounds of kills; find them with: grep -l %s /proc/[0-9]*/environ", Key, rounds, Marker(owner)))
	return killed, errors.Join(errs...)
}

// killMarked makes one pass over /proc. skip holds the processes not to
// touch, and gains those killed or refused, so that the next pass finds
// only new ones.
func killMarked(marker []byte, skip map[int]bool) (killed []Proc, errs []error, err error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, nil, fmt.Errorf("list /proc to find the processes earlier steps left running: %w", err)
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 1 || skip[pid] {
			continue
		}
		p, err := killIfMarked(pid, marker)
		switch {
		case err != nil:
			skip[pid] = true
			errs = append(errs, err)
		case p != nil:
			skip[pid] = true
			killed = append(killed, *p)
		}
	}
	return killed, errs, nil
}

// killIfMarked kills pid if its environment holds marker: it returns the
// process when it did, nil when pid is not marked (or gone, or not this
// user's), and an error when pid is marked and could not be killed.
func killIfMarked(pid int, marker []byte) (*Proc, error) {
	fd, err := unix.PidfdOpen(pid, 0)
	switch {
	case err == nil:
		defer unix.Close(fd)
	case errors.Is(err, unix.ESRCH):
		return nil, nil // gone already
	default:
		fd = -1 // no pidfd (a kernel before 5.3, no descriptor left): signal by pid
	}
	if !environHas(pid, marker) {
		return nil, nil
	}
	p := &Proc{PID: pid, Name: comm(pid)}
	if fd >= 0 {
		err = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
	} else {
		err = unix.Kill(pid, unix.SIGKILL)
	}
	switch {
	case err == nil:
		return p, nil
	case errors.Is(err, unix.ESRCH):
		return nil, nil // it ended by itself
	default:
		return nil, fmt.Errorf("could not stop process %s, left running by a step: %w; stop it by hand", p, err)
	}
}

// environHas reports whether pid's environment holds entry, false when it
// cannot be read. A job sets that environment, up to megabytes of it, so it
// is scanned through a small buffer, one NUL-ended entry at a time, never
// read whole: an entry longer than the buffer cannot be the marker.
func environHas(pid int, entry []byte) bool {
	f, err := os.Open(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		return false
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, envBuf)
	long := false // inside an entry longer than the buffer
	for {
		kv, err := r.ReadSlice(0)
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			long = true
			continue
		case err == nil:
			if !long && bytes.Equal(kv[:len(kv)-1], entry) {
				return true
			}
			long = false
		default: // the end: the last entry may lack its NUL
			return err == io.EOF && !long && bytes.Equal(kv, entry)
		}
	}
}

// comm is pid's command name, or "?" when it cannot be read.
func comm(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(b))
}

// ancestors returns this process and its ancestors, which Stop spares: a
// daemon started from a marked step's shell must not kill that shell, nor
// itself.
func ancestors() map[int]bool {
	out := map[int]bool{}
	for pid := os.Getpid(); pid > 1 && !out[pid]; {
		out[pid] = true
		ppid, err := parentOf(pid)
		if err != nil {
			break
		}
		pid = ppid
	}
	return out
}

// parentOf reads pid's parent from /proc/PID/stat, whose fourth field
// follows the command name in parentheses (which may hold any byte).
func parentOf(pid int) (int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 {
		return 0, fmt.Errorf("/proc/%d/stat: too short", pid)
	}
	return strconv.Atoi(f[1])
}
