package redistest_test

import (
	"bufio"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/forgeload/forgeload/internal/pkg/redistest"
)

func do(t *testing.T, addr, cmd string) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte(cmd + "\r\n")); err != nil {
		t.Fatalf("write %q: %v", cmd, err)
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		t.Fatalf("read reply to %q: %v", cmd, err)
	}
	return strings.TrimSpace(line)
}

func TestStartRestartStop(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	if !strings.HasPrefix(s.URL(), "redis://127.0.0.1:") {
		t.Fatalf("URL() = %q, want redis://127.0.0.1:...", s.URL())
	}
	if got := do(t, s.Addr(), "SET k v"); got != "+OK" {
		t.Fatalf("SET = %q, want +OK", got)
	}
	s.Restart()
	if got := do(t, s.Addr(), "EXISTS k"); got != ":0" {
		t.Fatalf("EXISTS k after Restart = %q, want :0 (data lost)", got)
	}
	s.Stop()
	s.Stop() // idempotent
	if c, err := net.DialTimeout("tcp", s.Addr(), 200*time.Millisecond); err == nil {
		c.Close()
		t.Fatalf("dial after Stop succeeded, want refused")
	}
}
