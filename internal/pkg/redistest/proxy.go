package redistest

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Proxy is a TCP relay, for example between one client and a Redis, that a
// test can cut: after Cut it keeps every connection open but forwards
// nothing, as a network partition does (no reset, no FIN, just silence).
// It relays in the test's own process ([StartProxy]) or in a process of its
// own ([StartProxyProcess]); the methods are the same.
type Proxy struct {
	r *relay // in this process; nil for a proxy process

	// A proxy process, driven over its stdin and stdout.
	t    testing.TB
	addr string
	mu   sync.Mutex // one command at a time
	in   io.Writer
	out  *bufio.Reader
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
	r := startRelay(ln, target, false)
	t.Cleanup(r.close)
	return &Proxy{r: r}
}

// proxyEnv names the target of a proxy process; see [ServeProxyIfAsked].
const proxyEnv = "REDISTEST_PROXY_TARGET"

// StartProxyProcess is StartProxy with the relay in a process of its own:
// the test binary itself, started again, which the package's TestMain
// turns into the relay by calling [ServeProxyIfAsked] first. A relay in
// the test's process shares its scheduler with everything else the test
// serves (targets, fake forges, other parallel tests), and on a loaded
// machine it alone delayed a proxied daemon's Redis calls by seconds,
// past its lease, with no fault applied. The process ends with the test.
func StartProxyProcess(t testing.TB, target string) *Proxy {
	t.Helper()
	return startProxyProcess(t, target, false)
}

func startProxyProcess(t testing.TB, target string, rewriteTime bool) *Proxy {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), proxyEnv+"="+target)
	if rewriteTime {
		cmd.Env = append(cmd.Env, proxyTimeEnv+"=1")
	}
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatalf("redistest: proxy process stdin: %v", err)
	}
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatalf("redistest: proxy process stdout: %v", err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("redistest: start proxy process: %v", err)
	}
	t.Cleanup(func() {
		_ = in.Close() // the process exits at the end of its stdin
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	p := &Proxy{t: t, in: in, out: bufio.NewReader(outPipe)}
	line, err := p.out.ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "addr ")
	if err != nil || !ok {
		t.Fatalf("redistest: proxy process said %q (%v), want its address; does the package's TestMain call redistest.ServeProxyIfAsked first?", line, err)
	}
	p.addr = addr
	return p
}

// ServeProxyIfAsked returns at once, unless this process was started by
// [StartProxyProcess] or [StartTimeProxyProcess]: then it relays to the
// target it was given, obeys "cut", "heal", "time-offset <µs>",
// "time-freeze" and "time-thaw" lines on stdin (answering each with "ok"),
// and exits when stdin ends. Call it first in the TestMain of a package that uses
// StartProxyProcess.
func ServeProxyIfAsked() {
	target := os.Getenv(proxyEnv)
	if target == "" {
		return
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintf(os.Stderr, "redistest proxy: listen: %v\n", err)
		os.Exit(1)
	}
	r := startRelay(ln, target, os.Getenv(proxyTimeEnv) != "")
	fmt.Printf("addr %s\n", ln.Addr())
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		r.command(sc.Text())
		fmt.Println("ok")
	}
	r.close()
	os.Exit(0)
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string {
	if p.r != nil {
		return p.r.ln.Addr().String()
	}
	return p.addr
}

// Cut stops all forwarding until Heal. It returns once the cut is in
// effect. For a proxy process, call it (and Heal) from the test's
// goroutine: a process that does not answer fails the test.
func (p *Proxy) Cut() { p.do("cut") }

// Heal ends a cut. The connections that lived through it lost whatever was
// sent meanwhile, as TCP connections that timed out during a long
// partition do, so Heal closes them; new connections relay again.
func (p *Proxy) Heal() { p.do("heal") }

func (p *Proxy) do(cmd string) {
	if p.r != nil {
		p.r.command(cmd)
		return
	}
	p.t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, err := fmt.Fprintln(p.in, cmd); err != nil {
		p.t.Fatalf("redistest: proxy process: %s: %v", cmd, err)
	}
	if line, err := p.out.ReadString('\n'); err != nil || strings.TrimSpace(line) != "ok" {
		p.t.Fatalf("redistest: proxy process answered %s with %q (%v)", cmd, line, err)
	}
}

// relay is the proxy itself, wherever it runs.
type relay struct {
	ln     net.Listener
	cut    atomic.Bool
	clock  *timeRewrite // nil: bytes pass through untouched
	mu     sync.Mutex
	conns  []net.Conn
	closed bool // under mu: a connection accepted after close is closed at once
	wg     sync.WaitGroup
}

func startRelay(ln net.Listener, target string, rewriteTime bool) *relay {
	r := &relay{ln: ln}
	if rewriteTime {
		r.clock = &timeRewrite{}
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
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
			r.mu.Lock()
			if r.closed {
				// close ran between Accept and here: it did not see
				// these, and its wait would never end.
				r.mu.Unlock()
				c.Close()
				up.Close()
				return
			}
			r.conns = append(r.conns, c, up)
			r.wg.Add(2)
			r.mu.Unlock()
			if r.clock != nil {
				times := make(chan bool, 4096) // per command sent: is it TIME?
				go func() { defer r.wg.Done(); r.pipeCommands(up, c, times) }()
				go func() { defer r.wg.Done(); r.pipeReplies(c, up, times) }()
				continue
			}
			go func() { defer r.wg.Done(); r.pipe(up, c) }()
			go func() { defer r.wg.Done(); r.pipe(c, up) }()
		}
	}()
	return r
}

// command obeys one control line (see [ServeProxyIfAsked]).
func (r *relay) command(line string) {
	switch verb, arg, _ := strings.Cut(line, " "); verb {
	case "cut":
		r.cut.Store(true)
	case "heal":
		r.heal()
	case "time-offset":
		us, _ := strconv.ParseInt(arg, 10, 64)
		r.clock.setOffset(time.Duration(us) * time.Microsecond)
	case "time-freeze":
		r.clock.freeze()
	case "time-thaw":
		r.clock.thaw()
	}
}

func (r *relay) heal() {
	r.mu.Lock()
	for _, c := range r.conns {
		c.Close()
	}
	r.conns = nil
	r.cut.Store(false)
	r.mu.Unlock()
}

func (r *relay) close() {
	r.ln.Close()
	r.mu.Lock()
	r.closed = true
	for _, c := range r.conns {
		c.Close()
	}
	r.mu.Unlock()
	r.wg.Wait()
}

// pipe copies src to dst until either fails, then closes both, so that
// the other direction ends too: a peer that closes its side is seen closed
// on the far side, as through a real network path.
func (r *relay) pipe(dst, src net.Conn) {
	defer func() { dst.Close(); src.Close() }()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !r.cut.Load() {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
