package forgetest

import (
	"fmt"
	"io"
	"net/netip"
	"syscall"
)

// holdPort keeps addr's port bound, but not listening, during an outage:
// connections to it are refused, as with nothing there, and the kernel
// does not hand the port to another listener asking for any free port (a
// test's server that took it would answer in the forge's place: an HTTP
// 404 to Declare reads as an old Gitea). It returns nil when it cannot
// hold the port, with the reason; the outage then only closes the listener.
func holdPort(addr string) (io.Closer, error) {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil || !ap.Addr().Is4() {
		return nil, fmt.Errorf("%s is not an IPv4 address and port", addr)
	}
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("socket: %w", err)
	}
	// As a listener would: the port's connections may linger in TIME_WAIT.
	if err := syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1); err != nil {
		_ = syscall.Close(fd)
		return nil, fmt.Errorf("SO_REUSEADDR: %w", err)
	}
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}); err != nil {
		_ = syscall.Close(fd)
		return nil, fmt.Errorf("bind %s: %w", addr, err)
	}
	return heldPort(fd), nil
}

type heldPort int

func (h heldPort) Close() error { return syscall.Close(int(h)) }
