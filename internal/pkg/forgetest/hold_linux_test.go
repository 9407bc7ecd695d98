package forgetest_test

import (
	"errors"
	"net"
	"net/netip"
	"syscall"
	"testing"
	"time"

	"github.com/forgeload/forgeload/internal/pkg/forgetest"
)

// TestDownHoldsThePort: during an outage connections are refused and the
// port stays taken, so no other server of a test process is given it (one
// that answered Declare with a 404 would pass for an old Gitea); Up serves
// on it again. The hold can fail when, in the moment between the
// listener's close and the hold, another connection was given the port as
// its own (Down then says so in the log); the test then tries again with a
// new forge, up to three times.
func TestDownHoldsThePort(t *testing.T) {
	t.Parallel()
	for attempt := 1; ; attempt++ {
		f := forgetest.New(t)
		f.Down()
		if f.Holding() {
			checkHeld(t, f)
			return
		}
		if attempt == 3 {
			t.Fatalf("three outages in a row could not hold their port (see the log)")
		}
		f.Close()
	}
}

func checkHeld(t *testing.T, f *forgetest.Forge) {
	addr := netip.MustParseAddrPort(f.URL()[len("http://"):])
	// Refused; or, rarely (see TestDownUp), accepted and reset: either
	// way nothing answers in the forge's place.
	if c, err := net.Dial("tcp", addr.String()); err == nil {
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		_, _ = c.Write([]byte("POST /api/actions/runner.v1.RunnerService/Declare HTTP/1.1\r\nHost: forge\r\nContent-Length: 0\r\n\r\n"))
		b := make([]byte, 64)
		n, rerr := c.Read(b)
		c.Close()
		if n > 0 {
			t.Fatalf("a call to %s during the outage was answered: %q", addr, b[:n])
		}
		t.Logf("dial %s during the outage was accepted, then ended without an answer (%v)", addr, rerr)
	} else if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dial %s during the outage = %v, want connection refused", addr, err)
	}
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Port: int(addr.Port()), Addr: addr.Addr().As4()}); !errors.Is(err, syscall.EADDRINUSE) {
		t.Fatalf("bind %s during the outage = %v, want EADDRINUSE (the port held)", addr, err)
	}
	f.Up()
	c, err := net.Dial("tcp", addr.String())
	if err != nil {
		t.Fatalf("dial %s after Up = %v", addr, err)
	}
	c.Close()
}
