package nettest

import (
	"net"
	"sync"
	"testing"
)

// SilentTarget starts a listener on 127.0.0.1 that accepts connections and
// never answers, and returns its URL ("http://127.0.0.1:PORT/"). The
// listener and every connection it accepted are closed when t ends.
func SilentTarget(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	})
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return "http://" + ln.Addr().String() + "/"
}
