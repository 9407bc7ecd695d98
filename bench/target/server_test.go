package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestStallDelay(t *testing.T) {
	t.Parallel()
	origin := time.Unix(1000, 0)
	at := func(d time.Duration) time.Time { return origin.Add(d) }
	tests := []struct {
		name         string
		now          time.Time
		every, stall time.Duration
		want         time.Duration
	}{
		{"fast mode never holds", at(0), 5 * time.Second, 0, 0},
		{"window start holds the whole stall", at(0), 5 * time.Second, time.Second, time.Second},
		{"mid stall holds the rest", at(400 * time.Millisecond), 5 * time.Second, time.Second, 600 * time.Millisecond},
		{"stall end is free", at(time.Second), 5 * time.Second, time.Second, 0},
		{"after the stall is free", at(4999 * time.Millisecond), 5 * time.Second, time.Second, 0},
		{"next window stalls again", at(5*time.Second + 250*time.Millisecond), 5 * time.Second, time.Second, 750 * time.Millisecond},
		{"many windows later", at(100*time.Second + time.Millisecond), 5 * time.Second, time.Second, 999 * time.Millisecond},
		{"before origin wraps", at(-4500 * time.Millisecond), 5 * time.Second, time.Second, 500 * time.Millisecond},
		{"zero window never holds", at(0), 0, time.Second, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := stallDelay(tt.now, origin, tt.every, tt.stall); got != tt.want {
				t.Errorf("stallDelay = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestStallPercentiles checks the arithmetic behind the stall probe's
// expected numbers: at a uniform rate over whole windows, the holds alone
// put p90, p99 and p99.9 at 500, 950 and 995 ms.
func TestStallPercentiles(t *testing.T) {
	t.Parallel()
	origin := time.Unix(0, 0)
	const n = 20000 // 1,000 req/s for 20 s
	holds := make([]time.Duration, n)
	for i := range holds {
		holds[i] = stallDelay(origin.Add(time.Duration(i)*time.Millisecond), origin, 5*time.Second, time.Second)
	}
	slices.Sort(holds)
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{{0.90, 500 * time.Millisecond}, {0.99, 950 * time.Millisecond}, {0.999, 995 * time.Millisecond}} {
		got := holds[int(c.q*n)]
		if d := got - c.want; d < -2*time.Millisecond || d > 2*time.Millisecond {
			t.Errorf("p%v = %v, want %v ± 2ms", c.q*100, got, c.want)
		}
	}
}

func TestStatsBuckets(t *testing.T) {
	t.Parallel()
	now := time.Unix(50, 0)
	s := newServer(5*time.Second, 0, func() time.Time { return now })
	// 30 arrivals in the first 100 ms, then 10 every 100 ms for 2 s.
	for i := range 30 {
		now = time.Unix(50, int64(i)*int64(3*time.Millisecond))
		s.arrive()
	}
	for w := 1; w <= 20; w++ {
		for i := range 10 {
			now = time.Unix(50, int64(w)*int64(100*time.Millisecond)+int64(i)*int64(time.Millisecond))
			s.arrive()
		}
	}
	st := s.stats()
	if st.Total != 230 || st.First100ms != 30 || st.Max100msAfter1s != 10 {
		t.Errorf("stats = %+v, want total 230, first_100ms 30, max_100ms_after_1s 10", st)
	}
	if want := []int64{4, 3, 3, 4, 3, 3, 4, 3, 3}; !slices.Equal(st.First100msBy10ms[:9], want) || st.First100msBy10ms[9] != 0 {
		t.Errorf("first_100ms_by_10ms = %v, want %v then 0", st.First100msBy10ms, want)
	}
	if len(st.PerSecond) != 3 || st.PerSecond[0] != 120 || st.PerSecond[1] != 100 || st.PerSecond[2] != 10 {
		t.Errorf("per_second = %v, want [120 100 10]", st.PerSecond)
	}
	if want := 2.009; st.SpanSeconds < want-1e-9 || st.SpanSeconds > want+1e-9 {
		t.Errorf("span = %v, want %v", st.SpanSeconds, want)
	}
	s.reset()
	if st := s.stats(); st.Total != 0 || len(st.PerSecond) != 0 || st.First100ms != 0 {
		t.Errorf("after reset stats = %+v, want zero", st)
	}
}

func TestParseFlags(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args    []string
		wantErr string
	}{
		{nil, ""},
		{[]string{"-mode", "stall", "-port", "8080", "-impl", "net"}, ""},
		{[]string{"-mode", "slow"}, `-mode "slow" is unknown`},
		{[]string{"-impl", "fasthttp"}, `-impl "fasthttp" is unknown`},
		{[]string{"-port", "70000"}, "-port 70000 is out of range"},
		{[]string{"-mode", "stall", "-stall-for", "5s"}, "want 0 < stall-for < stall-every"},
		{[]string{"extra"}, `unexpected argument "extra"`},
		{[]string{"-bogus"}, "parse flags"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			t.Parallel()
			_, err := parseFlags(tt.args)
			if tt.wantErr == "" && err != nil {
				t.Fatalf("parseFlags(%q) = %v, want nil", tt.args, err)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("parseFlags(%q) = %v, want an error containing %q", tt.args, err, tt.wantErr)
			}
		})
	}
}

// start serves a target on 127.0.0.1 for the test's lifetime.
func start(t *testing.T, impl string, every, stall time.Duration) (*server, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := newServer(every, stall, time.Now)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	addr := make(chan string, 1)
	go func() { done <- serve(ctx, s, impl, ln, func(a string) { addr <- a }) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return s, "http://" + <-addr
}

func get(t *testing.T, c *http.Client, url string) (int, string) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

func TestServeFast(t *testing.T) {
	t.Parallel()
	for _, impl := range []string{"raw", "net"} {
		t.Run(impl, func(t *testing.T) {
			t.Parallel()
			_, url := start(t, impl, 5*time.Second, 0)
			tr := &http.Transport{MaxIdleConnsPerHost: 1}
			defer tr.CloseIdleConnections()
			c := &http.Client{Transport: tr}
			for i := range 5 {
				code, b := get(t, c, url+"/x")
				if code != 200 || b != body {
					t.Fatalf("request %d: %d %q, want 200 %q", i, code, b, body)
				}
			}
			resp, err := c.Post(url+"/upload", "text/plain", strings.NewReader("some body"))
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("POST: status %d, want 200", resp.StatusCode)
			}
			_, js := get(t, c, url+"/__bench/stats")
			var st Stats
			if err := json.Unmarshal([]byte(js), &st); err != nil {
				t.Fatalf("stats %q: %v", js, err)
			}
			if st.Total != 6 {
				t.Errorf("stats total = %d, want 6 (control requests are not counted)", st.Total)
			}
			get(t, c, url+"/__bench/reset")
			_, js = get(t, c, url+"/__bench/stats")
			if err := json.Unmarshal([]byte(js), &st); err != nil || st.Total != 0 {
				t.Errorf("after reset: %q (%v), want total 0", js, err)
			}
		})
	}
}

// TestRawKeepAliveAndPipelining speaks HTTP/1.x by hand to the raw server:
// pipelined requests get answers in order on one connection, and
// Connection: close and HTTP/1.0 end the connection.
func TestRawKeepAliveAndPipelining(t *testing.T) {
	t.Parallel()
	_, url := start(t, "raw", 5*time.Second, 0)
	addr := strings.TrimPrefix(url, "http://")
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	req := "GET / HTTP/1.1\r\nHost: x\r\n\r\nPOST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabcGET / HTTP/1.1\r\nConnection: close\r\n\r\n"
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	for i := range 3 {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("response %d: %v", i, err)
		}
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != 200 || string(b) != body {
			t.Fatalf("response %d: %d %q, want 200 %q", i, resp.StatusCode, b, body)
		}
		if got, want := resp.Close, i == 2; got != want {
			t.Errorf("response %d: close = %v, want %v", i, got, want)
		}
	}
	if n, err := br.Read(make([]byte, 1)); n != 0 || err == nil {
		t.Errorf("after Connection: close, read = %d, %v; want EOF", n, err)
	}

	for _, bad := range []struct{ req, status string }{
		{"GARBAGE\r\n\r\n", "400"},
		{"GET / HTTP/2.0\r\n\r\n", "400"},
		{"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", "400"},
		{"POST / HTTP/1.1\r\nContent-Length: 999999999\r\n\r\n", "413"},
		{"GET / HTTP/1.1\r\nX: " + strings.Repeat("a", 10000) + "\r\n\r\n", "413"},
	} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		_, _ = io.WriteString(c, bad.req)
		b, _ := io.ReadAll(c)
		c.Close()
		if !strings.HasPrefix(string(b), "HTTP/1.1 "+bad.status) {
			t.Errorf("%.30q: answer %.40q, want status %s and close", bad.req, b, bad.status)
		}
	}
}

// TestServeStall checks that a request arriving inside a stall is held until
// the stall ends, and one outside it is not, on a scaled-down window.
func TestServeStall(t *testing.T) {
	t.Parallel()
	for _, impl := range []string{"raw", "net"} {
		t.Run(impl, func(t *testing.T) {
			t.Parallel()
			const every, stall = 2 * time.Second, 400 * time.Millisecond
			s, url := start(t, impl, every, stall)
			tr := &http.Transport{}
			defer tr.CloseIdleConnections()
			c := &http.Client{Transport: tr}
			get(t, c, url+"/__bench/reset") // a stall starts now
			origin := time.Unix(0, s.origin.Load())
			t0 := time.Now()
			get(t, c, url+"/in-stall")
			held := time.Since(t0)
			if want := stall - t0.Sub(origin); held < want {
				t.Errorf("request inside the stall took %v, want at least %v", held, want)
			}
			// Now well outside the stall (it ended at origin+400ms and
			// the next starts at origin+2s): no hold.
			for {
				since := time.Since(origin) % every
				if since > stall && since < every-600*time.Millisecond {
					break
				}
				tm := time.NewTimer(20 * time.Millisecond)
				<-tm.C
			}
			t1 := time.Now()
			get(t, c, url+"/free")
			if d := time.Since(t1); d > 300*time.Millisecond {
				t.Errorf("request outside the stall took %v, want no hold", d)
			}
		})
	}
}

// FuzzReadRequest feeds arbitrary bytes to the raw server's parser: it must
// never panic, and a request it accepts must leave the reader at a sane
// position (no negative or runaway body skip).
func FuzzReadRequest(f *testing.F) {
	f.Add([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
	f.Add([]byte("POST /a HTTP/1.0\r\nContent-Length: 3\r\nConnection: keep-alive\r\n\r\nabc"))
	f.Add([]byte("GET /__bench/stats HTTP/1.1\n\n"))
	f.Add([]byte("GET / HTTP/1.1\r\nContent-Length: -1\r\n\r\n"))
	f.Add([]byte("GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		br := bufio.NewReaderSize(strings.NewReader(string(in)), 64)
		for range 8 {
			r, err := readRequest(br)
			if err != nil {
				return
			}
			if r.kind < kindLoad || r.kind > kindStats {
				t.Fatalf("kind %d out of range", r.kind)
			}
		}
	})
}
