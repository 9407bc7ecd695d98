package leftover

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// Key is the environment variable that marks a step's processes.
const Key = "FORGELOAD_STEP_OWNER"

// Proc is a process that Stop killed.
type Proc struct {
	PID  int
	Name string // its command name (/proc/PID/comm)
}

// String is the pid and the quoted name: a job chooses its processes'
// names, and a quoted one cannot break the daemon's log line.
func (p Proc) String() string { return fmt.Sprintf("%d (%q)", p.PID, p.Name) }

// Marker returns the environment entry (KEY=value) that marks a process as
// started by a step of owner, the registration's UUID. The value is a hash
// of owner, so a job's environment does not learn the UUID.
func Marker(owner string) string {
	sum := sha256.Sum256([]byte("forgeload step owner\x00" + owner))
	return Key + "=" + hex.EncodeToString(sum[:8])
}

// Mark returns env without any entry for Key, and with Marker(owner) last,
// so that neither the daemon's own environment nor a job's env can change
// or drop it.
func Mark(env []string, owner string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, Key+"=") {
			out = append(out, kv)
		}
	}
	return append(out, Marker(owner))
}

// Summary is Stop's result as one line for the daemon's log: how many
// processes, and which (at most ten of them named).
func Summary(procs []Proc) string {
	names := make([]string, 0, min(len(procs), 10))
	for _, p := range procs[:min(len(procs), 10)] {
		names = append(names, p.String())
	}
	s := strings.Join(names, ", ")
	if len(procs) > 10 {
		s += fmt.Sprintf(" and %d more", len(procs)-10)
	}
	return fmt.Sprintf("stopped %d processes that steps of an earlier run of this runner left running (that daemon ended without stopping them: kill -9, the OOM killer or a crash): %s", len(procs), s)
}
