package load

import (
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// wakeTimer waits out the last stretch before an arrival on a timerfd that
// the Go runtime's netpoller watches. The kernel wakes the netpoller when
// the timerfd fires, to within the thread's timer slack (50 µs by default),
// where a Go timer on an idle process fires on the netpoller's
// millisecond timeout. The waiting goroutine is parked and holds no P, so
// responses in flight are read meanwhile, even with GOMAXPROCS=1.
type wakeTimer struct {
	fd  int
	f   *os.File // owns fd; its reads park in the netpoller
	buf [8]byte
}

// newWakeTimer returns a timer, or nil when no timerfd can be made (the
// caller then waits on its Go timer alone).
func newWakeTimer() *wakeTimer {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil
	}
	// A non-blocking descriptor given to os.NewFile is registered with the
	// netpoller. f.Fd() must never be called: it would make fd blocking.
	return &wakeTimer{fd: fd, f: os.NewFile(uintptr(fd), "forgeload-wake")}
}

// sleep returns after d, or at once when d <= 0 or the timer fails.
func (t *wakeTimer) sleep(d time.Duration) {
	if d <= 0 {
		return
	}
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(d))}
	if unix.TimerfdSettime(t.fd, 0, &spec, nil) != nil {
		time.Sleep(d)
		return
	}
	// The read returns the expiration count once the timer fires.
	if _, err := t.f.Read(t.buf[:]); err != nil {
		time.Sleep(d)
	}
}

// close releases the descriptor.
func (t *wakeTimer) close() { _ = t.f.Close() }
