package redistest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// StartTimeout is how long Start and Restart wait for redis-server to accept
// connections before failing the test.
const StartTimeout = 10 * time.Second

// Server is one redis-server process owned by a test. Its methods are safe
// for concurrent use. The zero value is not usable; call [Start].
type Server struct {
	t    testing.TB
	bin  string
	port int

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// Start launches a redis-server on a free 127.0.0.1 port with persistence
// disabled and registers a cleanup that stops it. It skips the test when no
// redis-server binary is found on PATH.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server not found on PATH: install it (Debian: apt-get install redis-server) to run this test")
	}
	s := &Server{t: t, bin: bin}
	// A port may be taken between probing and binding; try a few.
	var lastErr error
	for range 5 {
		s.port, err = freePort()
		if err != nil {
			t.Fatalf("redistest: find a free port on 127.0.0.1: %v", err)
		}
		if lastErr = s.launch(); lastErr == nil {
			break
		}
	}
	if lastErr != nil {
		t.Fatalf("redistest: start redis-server: %v", lastErr)
	}
	t.Cleanup(s.Stop)
	return s
}

// Addr returns the server's "127.0.0.1:port" address.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// URL returns a redis:// URL for the server, suitable for redis.ParseURL.
func (s *Server) URL() string { return "redis://" + s.Addr() + "/0" }

// Restart stops the server and starts a new one on the same port. All data
// is lost, and the new process has a different INFO run_id, which is what a
// Redis restart without persistence looks like to clients.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	var err error
	deadline := time.Now().Add(StartTimeout)
	for {
		if err = s.launch(); err == nil {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("redistest: restart redis-server on port %d: %v", s.port, err)
		}
		time.Sleep(50 * time.Millisecond) // waiting for the kernel to free the port; nothing to synchronise on
	}
}

// Pause freezes the server (SIGSTOP), as a stalled Redis host: it keeps
// its connections and its data but answers nothing until [Server.Resume].
func (s *Server) Pause() { s.signal(syscall.SIGSTOP) }

// Resume ends a Pause (SIGCONT).
func (s *Server) Resume() { s.signal(syscall.SIGCONT) }

func (s *Server) signal(sig syscall.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		if err := s.cmd.Process.Signal(sig); err != nil {
			s.t.Errorf("redistest: signal redis-server: %v", err)
		}
	}
}

// Stop kills the server and waits for it to exit. It is idempotent.
func (s *Server) Stop() {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-done
}

func (s *Server) launch() error {
	cmd := exec.Command(s.bin,
		"--port", strconv.Itoa(s.port),
		"--bind", "127.0.0.1",
		"--save", "",
		"--appendonly", "no",
		"--protected-mode", "yes",
		"--dir", os.TempDir(),
		"--loglevel", "warning",
	)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("pipe stdout: %w", err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("exec %s: %w", s.bin, err)
	}
	done := make(chan struct{})
	var logMu sync.Mutex
	var logTail []string
	go func() { // owned by the process: ends when redis-server closes stdout
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			logMu.Lock()
			logTail = append(logTail, sc.Text())
			if len(logTail) > 20 {
				logTail = logTail[1:]
			}
			logMu.Unlock()
		}
		_ = cmd.Wait()
		close(done)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()
	for {
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", s.Addr())
		if err == nil {
			// The port was free when probed, but another test's server may
			// have taken it before ours bound: only our process counts.
			ok := ping(c) && servedBy(c, cmd.Process.Pid)
			_ = c.Close()
			if ok {
				s.mu.Lock()
				s.cmd, s.done = cmd, done
				s.mu.Unlock()
				return nil
			}
		}
		select {
		case <-done:
			logMu.Lock()
			defer logMu.Unlock()
			return fmt.Errorf("redis-server exited early on port %d: %s", s.port, strings.Join(logTail, "; "))
		case <-ctx.Done():
			_ = cmd.Process.Kill()
			<-done
			return fmt.Errorf("redis-server did not accept connections on %s within %s", s.Addr(), StartTimeout)
		case <-time.After(20 * time.Millisecond): // poll interval while the server boots
		}
	}
}

func ping(c net.Conn) bool {
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return false
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return err == nil && strings.HasPrefix(line, "+PONG")
}

// servedBy reports whether the Redis at the other end of c is process pid,
// from the process_id line of INFO server.
func servedBy(c net.Conn, pid int) bool {
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("INFO server\r\n")); err != nil {
		return false
	}
	r := bufio.NewReader(c)
	head, err := r.ReadString('\n')
	if err != nil || !strings.HasPrefix(head, "$") {
		return false
	}
	n, err := strconv.Atoi(strings.TrimSpace(head[1:]))
	if err != nil || n < 0 {
		return false
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return false
	}
	for _, line := range strings.Split(string(body), "\r\n") {
		if v, ok := strings.CutPrefix(line, "process_id:"); ok {
			return v == strconv.Itoa(pid)
		}
	}
	return false
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
