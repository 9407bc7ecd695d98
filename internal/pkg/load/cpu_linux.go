package load

import (
	"bytes"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"time"
	"unsafe"
)

// threadCPU returns the calling thread's id, the CPU time it ran and the
// time it waited on a run queue for a CPU, from /proc/thread-self/schedstat,
// and the real monotonic clock (not the Go clock, which a test's bubble
// fakes) at the reading; ok is false where the kernel does not say. Run plus wait is the time the
// thread wanted a CPU: that share of a span says whether the generator's
// CPU, its own work or other processes', is behind.
func threadCPU() (tid int, run, wait, at time.Duration, ok bool) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b, err := os.ReadFile("/proc/thread-self/schedstat")
	if err != nil {
		return 0, 0, 0, 0, false
	}
	f := bytes.Fields(b)
	if len(f) < 2 {
		return 0, 0, 0, 0, false
	}
	r, err1 := strconv.ParseInt(string(f[0]), 10, 64)
	w, err2 := strconv.ParseInt(string(f[1]), 10, 64)
	var ts syscall.Timespec
	_, _, errno := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, 1 /* CLOCK_MONOTONIC */, uintptr(unsafe.Pointer(&ts)), 0)
	if err1 != nil || err2 != nil || errno != 0 {
		return 0, 0, 0, 0, false
	}
	return syscall.Gettid(), time.Duration(r), time.Duration(w), time.Duration(ts.Nano()), true
}
