package redistest

import (
	"bufio"
	"errors"
	"net"
	"os"
	"testing"
	"time"

	"github.com/forgeload/forgeload/internal/pkg/testmain"
)

func TestMain(m *testing.M) {
	testmain.NoRaceExitSleep()
	ServeProxyIfAsked()
	os.Exit(m.Run())
}

func TestProxyRelaysGoesSilentAndHeals(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		start func(testing.TB, string) *Proxy
	}{{"in this process", StartProxy}, {"in a process of its own", StartProxyProcess}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			testProxy(t, tc.start)
		})
	}
}

func testProxy(t *testing.T, start func(testing.TB, string) *Proxy) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					_, _ = c.Write([]byte(line)) // echo
				}
			}()
		}
	}()
	p := start(t, ln.Addr().String())
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	if _, err := c.Write([]byte("ping\n")); err != nil {
		t.Fatal(err)
	}
	if got, err := r.ReadString('\n'); err != nil || got != "ping\n" {
		t.Fatalf("echo through the proxy = %q, %v", got, err)
	}
	p.Cut()
	if _, err := c.Write([]byte("lost\n")); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if got, err := r.ReadString('\n'); err == nil {
		t.Fatalf("read %q through a cut proxy, want silence", got)
	}
	p.Heal()
	if _, err := r.ReadString('\n'); err == nil {
		t.Fatal("a connection that lived through the cut still answers after Heal, want it closed")
	}
	c2, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if _, err := c2.Write([]byte("back\n")); err != nil {
		t.Fatal(err)
	}
	_ = c2.SetReadDeadline(time.Now().Add(5 * time.Second))
	if got, err := bufio.NewReader(c2).ReadString('\n'); err != nil || got != "back\n" {
		t.Fatalf("echo through a healed proxy = %q, %v", got, err)
	}
}

// TestProxyPassesOnACloseBothWays: when one end of a relayed connection
// closes, the proxy closes the other, as a real path would show it. A
// relay that kept the far side open held a goroutine reading a silent
// Redis connection for good, and its close waited on it until the test
// binary's 10-minute timeout.
func TestProxyPassesOnACloseBothWays(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ups := make(chan net.Conn, 2)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			ups <- c
		}
	}()
	p := StartProxy(t, ln.Addr().String())
	eof := func(c net.Conn, side string) {
		t.Helper()
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("%s: read %v, want the connection closed", side, err)
		}
	}
	for _, closer := range []string{"client", "server"} {
		c, err := net.Dial("tcp", p.Addr())
		if err != nil {
			t.Fatal(err)
		}
		var up net.Conn
		select {
		case up = <-ups:
		case <-time.After(5 * time.Second):
			t.Fatal("the proxy did not connect upstream")
		}
		if closer == "client" {
			c.Close()
			eof(up, "the server after the client closed")
			up.Close()
		} else {
			up.Close()
			eof(c, "the client after the server closed")
			c.Close()
		}
	}
}
