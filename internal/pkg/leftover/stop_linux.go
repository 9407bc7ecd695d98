//go:build linux

package leftover

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// rounds bounds Stop's searches: a script that forks in a loop is found
// again, with its new children, until one search finds no one new.
const rounds = 10

// Stop kills (SIGKILL) every process whose environment holds Marker(owner),
// other than this process and its ancestors, and returns those it killed.
// It searches /proc again after each round of kills, so that children
// forked meanwhile are found too, until a search finds no one new. Each
// process is signalled through a pidfd opened before its environment is
// read, so a process id reused in between is never signalled. Processes
// whose environment this user may not read are not its own and are left
// alone. The error names those it could not kill, and why.
func Stop(ctx context.Context, owner string) ([]Proc, error) {
	marker := []byte(Marker(owner))
	skip := ancestors()
	var killed []Proc
	var errs []error
	for range rounds {
		if err := ctx.Err(); err != nil {
			return killed, err
		}
		found, ferrs, err := killMarked(marker, skip)
		errs = append(errs, ferrs...)
		if err != nil {
			return killed, errors.Join(append(errs, err)...)
		}
		if len(found) == 0 {
			return killed, errors.Join(errs...)
		}
		killed = append(killed, found...)
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
	env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil || !hasEntry(env, marker) {
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

// hasEntry reports whether the NUL-separated environment env holds entry.
func hasEntry(env, entry []byte) bool {
	for kv := range bytes.SplitSeq(env, []byte{0}) {
		if bytes.Equal(kv, entry) {
			return true
		}
	}
	return false
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
