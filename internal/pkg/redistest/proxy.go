package redistest

import (
	"net"
	"sync"
	"sync/atomic"
	"testing"
)

// Proxy is a TCP relay, for example between one client and a Redis, that a
// test can cut: after Cut it keeps every connection open but forwards
// nothing, as a network partition does (no reset, no FIN, just silence).
type Proxy struct {
	ln    net.Listener
	cut   atomic.Bool
	mu    sync.Mutex
	conns []net.Conn
	wg    sync.WaitGroup
}

// StartProxy relays 127.0.0.1:<random port> to target until the test ends.
func StartProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	return StartProxyOn(t, "127.0.0.1:0", target)
}

// StartProxyOn relays listen (host:port, port 0 for a random one) to
// target until the test ends; for example a Docker network's gateway
// address, so that containers reach a server the test runs on 127.0.0.1.
func StartProxyOn(t testing.TB, listen, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		t.Fatalf("redistest: proxy listen: %v", err)
	}
	p := &Proxy{ln: ln}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			p.wg.Add(2)
			go func() { defer p.wg.Done(); p.pipe(up, c) }()
			go func() { defer p.wg.Done(); p.pipe(c, up) }()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		for _, c := range p.conns {
			c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
	return p
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Cut stops all forwarding until Heal.
func (p *Proxy) Cut() { p.cut.Store(true) }

// Heal ends a cut. The connections that lived through it lost whatever was
// sent meanwhile, as TCP connections that timed out during a long
// partition do, so Heal closes them; new connections relay again.
func (p *Proxy) Heal() {
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
	p.cut.Store(false)
	p.mu.Unlock()
}

func (p *Proxy) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !p.cut.Load() {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
