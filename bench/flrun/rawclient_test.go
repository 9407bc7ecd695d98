package main

import (
	"bufio"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/forgeload/forgeload/internal/pkg/load"
)

func TestReadResponse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		in       string
		status   int
		n        int64
		keep     bool
		errMatch string
	}{
		{"content length", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", 200, 5, true, ""},
		{"chunked with trailer", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n2\r\nde\r\n0\r\nT: v\r\n\r\n", 200, 5, true, ""},
		{"close", "HTTP/1.1 503 Busy\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", 503, 0, false, ""},
		{"http/1.0 default close", "HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\nx", 200, 1, false, ""},
		{"http/1.0 keep-alive", "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 1\r\n\r\nx", 200, 1, true, ""},
		{"no framing reads to EOF", "HTTP/1.1 200 OK\r\n\r\nabcdef", 200, 6, false, ""},
		{"204 has no body", "HTTP/1.1 204 No Content\r\n\r\n", 204, 0, true, ""},
		{"garbage", "SSH-2.0-OpenSSH\r\n", 0, 0, false, "malformed"},
		{"bad length", "HTTP/1.1 200 OK\r\nContent-Length: -3\r\n\r\n", 200, 0, false, "Content-Length"},
		{"short body", "HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nabc", 200, 3, false, "EOF"},
		{"bad chunk", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 200, 0, false, "chunk size"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			status, n, keep, err := readResponse(bufio.NewReader(strings.NewReader(tt.in)))
			if tt.errMatch != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errMatch) {
					t.Fatalf("err = %v, want one containing %q", err, tt.errMatch)
				}
				return
			}
			if err != nil || status != tt.status || n != tt.n || keep != tt.keep {
				t.Fatalf("got %d %d %v %v, want %d %d %v nil", status, n, keep, err, tt.status, tt.n, tt.keep)
			}
		})
	}
}

// TestRawClientAgainstNetHTTP runs the raw client against a real net/http
// server: keep-alive reuse, chunked bodies and error statuses.
func TestRawClientAgainstNetHTTP(t *testing.T) {
	t.Parallel()
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/chunked":
			_, _ = w.Write([]byte("part one "))
			w.(http.Flusher).Flush()
			_, _ = w.Write([]byte("part two"))
		case "/missing":
			http.NotFound(w, r)
		default:
			_, _ = w.Write([]byte("ok"))
		}
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()

	for _, tc := range []struct {
		path   string
		status int
		n      int64
		err    bool
	}{{"/", 200, 2, false}, {"/chunked", 200, 17, false}, {"/missing", 404, 19, true}} {
		c, err := newRawClient(srv.URL+tc.path, 2, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			var s load.Sample
			err := c.DoSample(t.Context(), &s)
			if s.Status != tc.status || s.BytesIn != tc.n || (err != nil) != tc.err {
				t.Fatalf("%s #%d: status %d, %d bytes, err %v; want %d, %d bytes, error %v", tc.path, i, s.Status, s.BytesIn, err, tc.status, tc.n, tc.err)
			}
			var se load.StatusError
			if tc.err && (!errors.As(err, &se) || s.Class != load.StatusClass(tc.status)) {
				t.Fatalf("%s: err %v class %v, want a StatusError classed %v", tc.path, err, s.Class, load.StatusClass(tc.status))
			}
		}
		c.close()
	}
	if got := conns.Load(); got != 3 {
		t.Errorf("connections opened = %d, want 3 (one per client, reused across its requests)", got)
	}
	if _, err := newRawClient("https://example.invalid/", 1, time.Second); err == nil {
		t.Error("newRawClient accepted an https URL, want an error")
	}
}

// TestRunRawClosed drives the engine with the raw client for a few
// requests against a real server.
func TestRunRaw(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }))
	defer srv.Close()
	var out strings.Builder
	err := run(t.Context(), []string{"-target", srv.URL, "-client", "raw", "-c", "2", "-rate", "200", "-d", "250ms"}, &out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `"requests": 50`) {
		t.Errorf("summary does not report 50 requests (200/s for 250ms):\n%s", out.String())
	}
}

func TestParseFlags(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{}, "-target is required"},
		{[]string{"-target", "http://x", "-client", "fasthttp"}, `-client "fasthttp" is unknown: use h1, nethttp or raw`},
		{[]string{"-target", "http://x", "-d", "1h"}, "use a duration in (0, 10m]"},
		{[]string{"-target", "http://x", "-c", "0"}, "use at least 1"},
		{[]string{"-target", "http://x", "-rate", "-1"}, "-rate -1"},
		{[]string{"-target", "http://x", "extra"}, `unexpected argument "extra"`},
	} {
		if _, err := parseFlags(tc.args); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseFlags(%q) = %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
}

// FuzzReadResponse: the parser of bytes from the network never panics and
// never reports more body bytes than it was given.
func FuzzReadResponse(f *testing.F) {
	f.Add([]byte("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"))
	f.Add([]byte("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"))
	f.Add([]byte("HTTP/1.0 404 Not Found\r\n\r\nxyz"))
	f.Fuzz(func(t *testing.T, in []byte) {
		_, n, _, _ := readResponse(bufio.NewReaderSize(strings.NewReader(string(in)), 64))
		if n < 0 || n > int64(len(in)) {
			t.Fatalf("body length %d outside [0, %d]", n, len(in))
		}
	})
}
