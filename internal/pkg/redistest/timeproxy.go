package redistest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// proxyTimeEnv asks a proxy process to rewrite TIME replies.
const proxyTimeEnv = "REDISTEST_PROXY_TIME"

// StartTimeProxy is [StartProxy] for a Redis whose clock a test can step
// or freeze, with no privileges: the relay reads the Redis protocol both
// ways and rewrites the reply to every TIME command by the offset set with
// [Proxy.SetTimeOffset], or to the instant [Proxy.FreezeTime] froze it at.
// Everything else passes unchanged, so clients behind it see a Redis whose
// TIME stepped, while its key expiry still follows the real clock (a test
// that wants the expiry a step would cause applies it to the keys itself).
func StartTimeProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("redistest: time proxy listen: %v", err)
	}
	r := startRelay(ln, target, true)
	t.Cleanup(r.close)
	return &Proxy{r: r}
}

// StartTimeProxyProcess is [StartTimeProxy] with the relay in a process of
// its own, as [StartProxyProcess]; Cut and Heal work on it too.
func StartTimeProxyProcess(t testing.TB, target string) *Proxy {
	t.Helper()
	return startProxyProcess(t, target, true)
}

// SetTimeOffset makes TIME replies d later than Redis's clock (negative:
// earlier) from now on; it also ends a freeze. Only for a time proxy.
func (p *Proxy) SetTimeOffset(d time.Duration) {
	p.do("time-offset " + strconv.FormatInt(d.Microseconds(), 10))
}

// FreezeTime makes every TIME reply the instant it was called (with the
// offset), until ThawTime or SetTimeOffset. Only for a time proxy.
func (p *Proxy) FreezeTime() { p.do("time-freeze") }

// ThawTime ends a freeze: TIME follows Redis's clock plus the offset again.
func (p *Proxy) ThawTime() { p.do("time-thaw") }

// timeRewrite is a relay's clock: the offset and the frozen instant.
type timeRewrite struct {
	mu       sync.Mutex
	offset   time.Duration
	frozen   bool
	frozenAt time.Time
}

func (c *timeRewrite) setOffset(d time.Duration) {
	c.mu.Lock()
	c.offset, c.frozen = d, false
	c.mu.Unlock()
}

func (c *timeRewrite) freeze() {
	c.mu.Lock()
	c.frozen, c.frozenAt = true, time.Now().Add(c.offset)
	c.mu.Unlock()
}

func (c *timeRewrite) thaw() {
	c.mu.Lock()
	c.frozen = false
	c.mu.Unlock()
}

// rewrite turns Redis's TIME reply (seconds, microseconds) into the
// relay's.
func (c *timeRewrite) rewrite(real time.Time) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.frozen {
		return c.frozenAt
	}
	return real.Add(c.offset)
}

// pipeCommands forwards the client's commands to Redis, telling
// pipeReplies, in order, which of them are TIME.
func (r *relay) pipeCommands(dst, src net.Conn, times chan<- bool) {
	defer func() { dst.Close(); src.Close(); close(times) }()
	br := bufio.NewReaderSize(src, 32<<10)
	bw := bufio.NewWriterSize(dst, 32<<10)
	for {
		raw, name, err := readCommand(br)
		if err != nil {
			return
		}
		if r.cut.Load() {
			continue
		}
		times <- strings.EqualFold(name, "TIME")
		if _, err := bw.Write(raw); err != nil {
			return
		}
		if br.Buffered() == 0 && bw.Flush() != nil {
			return
		}
	}
}

// pipeReplies forwards Redis's replies to the client, rewriting the
// replies to TIME.
func (r *relay) pipeReplies(dst, src net.Conn, times <-chan bool) {
	defer func() { dst.Close(); src.Close() }()
	br := bufio.NewReaderSize(src, 32<<10)
	bw := bufio.NewWriterSize(dst, 32<<10)
	for {
		raw, err := readReply(br)
		if err != nil {
			return
		}
		if raw[0] != '>' { // a RESP3 push answers no command
			isTime, ok := <-times
			if !ok {
				return
			}
			if isTime {
				raw = r.clock.rewriteReply(raw)
			}
		}
		if r.cut.Load() {
			continue
		}
		if _, err := bw.Write(raw); err != nil {
			return
		}
		if br.Buffered() == 0 && bw.Flush() != nil {
			return
		}
	}
}

// rewriteReply rewrites a TIME reply, *2 of two bulk strings; anything
// else (an error reply) passes unchanged.
func (c *timeRewrite) rewriteReply(raw []byte) []byte {
	parts := strings.Split(string(raw), "\r\n")
	if len(parts) < 5 || parts[0] != "*2" {
		return raw
	}
	sec, err1 := strconv.ParseInt(parts[2], 10, 64)
	usec, err2 := strconv.ParseInt(parts[4], 10, 64)
	if err1 != nil || err2 != nil {
		return raw
	}
	t := c.rewrite(time.Unix(sec, usec*1000)).UnixMicro()
	s := strconv.FormatInt(t/1e6, 10)
	u := strconv.FormatInt(t%1e6, 10)
	return fmt.Appendf(nil, "*2\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n", len(s), s, len(u), u)
}

// maxBulk bounds one bulk string the relay buffers (Redis's own default
// proto-max-bulk-len is 512 MB; tests send far less).
const maxBulk = 64 << 20

var errProtocol = errors.New("redistest: malformed Redis protocol")

// readLine reads one CRLF-terminated line, CRLF included.
func readLine(br *bufio.Reader) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if err != nil {
		return nil, err
	}
	return append([]byte(nil), line...), nil
}

// lineInt is the integer of a header line such as "*3\r\n" or "$5\r\n".
func lineInt(line []byte) (int, error) {
	n, err := strconv.Atoi(strings.TrimRight(string(line[1:]), "\r\n"))
	if err != nil {
		return 0, errProtocol
	}
	return n, nil
}

// readCommand reads one client command (a RESP array of bulk strings, or
// an inline command) whole, and names it.
func readCommand(br *bufio.Reader) (raw []byte, name string, err error) {
	line, err := readLine(br)
	if err != nil {
		return nil, "", err
	}
	if line[0] != '*' {
		f := strings.Fields(string(line))
		if len(f) > 0 {
			name = f[0]
		}
		return line, name, nil
	}
	n, err := lineInt(line)
	if err != nil {
		return nil, "", err
	}
	raw = line
	for i := range n {
		var arg []byte
		if arg, err = readBulk(br); err != nil {
			return nil, "", err
		}
		if i == 0 {
			if h := strings.Index(string(arg), "\r\n"); h >= 0 {
				name = strings.TrimSuffix(string(arg[h+2:]), "\r\n")
			}
		}
		raw = append(raw, arg...)
	}
	return raw, name, nil
}

// readBulk reads one "$len\r\n<bytes>\r\n".
func readBulk(br *bufio.Reader) ([]byte, error) {
	line, err := readLine(br)
	if err != nil {
		return nil, err
	}
	if line[0] != '$' {
		return nil, errProtocol
	}
	return readBody(br, line)
}

// readBody reads the body a bulk-like header line announces.
func readBody(br *bufio.Reader, head []byte) ([]byte, error) {
	n, err := lineInt(head)
	if err != nil || n < 0 {
		return head, err
	}
	if n > maxBulk {
		return nil, errProtocol
	}
	body := make([]byte, len(head)+n+2)
	copy(body, head)
	if _, err := io.ReadFull(br, body[len(head):]); err != nil {
		return nil, err
	}
	return body, nil
}

// readReply reads one reply, RESP2 or RESP3, whole.
func readReply(br *bufio.Reader) ([]byte, error) {
	line, err := readLine(br)
	if err != nil {
		return nil, err
	}
	if len(line) < 3 {
		return nil, errProtocol
	}
	switch line[0] {
	case '+', '-', ':', '_', ',', '#', '(':
		return line, nil
	case '$', '!', '=':
		return readBody(br, line)
	case '*', '~', '>', '%', '|':
		n, err := lineInt(line)
		if err != nil || n < 0 {
			return line, err
		}
		if line[0] == '%' || line[0] == '|' {
			n *= 2
		}
		if line[0] == '|' {
			n++ // an attribute map comes before the reply it annotates
		}
		raw := line
		for range n {
			el, err := readReply(br)
			if err != nil {
				return nil, err
			}
			raw = append(raw, el...)
		}
		return raw, nil
	}
	return nil, errProtocol
}
