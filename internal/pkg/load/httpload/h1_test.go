package httpload

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/forgeload/forgeload/internal/pkg/load"
)

// rawServer answers every connection on 127.0.0.1 with handle; the test
// waits for its goroutines.
func rawServer(t *testing.T, handle func(c net.Conn, r *bufio.Reader)) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				handle(c, bufio.NewReader(c))
			})
		}
	})
	t.Cleanup(func() { _ = l.Close(); wg.Wait() })
	return "http://" + l.Addr().String()
}

// readRequest consumes one request head (and a Content-Length body).
func readRequest(r *bufio.Reader) (*http.Request, error) {
	req, err := http.ReadRequest(r)
	if err != nil {
		return nil, err
	}
	_, _ = io.Copy(io.Discard, req.Body)
	return req, nil
}

func TestH1ResponseShapes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		response string
		status   int
		bodyLen  int64
		class    load.ErrorClass
	}{
		{"content-length", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", 200, 5, load.ClassNone},
		{"chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n3\r\nabc\r\n0\r\nX-Trailer: 1\r\n\r\n", 200, 8, load.ClassNone},
		{"1xx then 200", "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\ncontent-length: 2\r\n\r\nok", 201, 2, load.ClassNone},
		{"204 no body", "HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n", 204, 0, load.ClassNone},
		{"until close", "HTTP/1.0 200 OK\r\n\r\nall of it", 200, 9, load.ClassNone},
		{"5xx", "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 3\r\nConnection: close\r\n\r\nbad", 502, 3, load.ClassHTTP5xx},
		{"garbage", "SMTP ready\r\n\r\n", 0, 0, load.ClassProtocol},
		{"truncated body", "HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\nshort", 200, 5, load.ClassNetwork},
		{"bad chunk", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 200, 0, load.ClassProtocol},
		{"no response", "", 0, 0, load.ClassNetwork},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			url := rawServer(t, func(c net.Conn, r *bufio.Reader) {
				if _, err := readRequest(r); err == nil {
					_, _ = io.WriteString(c, tc.response)
				}
			})
			d, err := New(Options{Endpoints: []Endpoint{{URL: url + "/p"}}, Timeout: 2 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			var s load.Sample
			err = d.DoSample(t.Context(), &s)
			if s.Status != tc.status || s.BytesIn != tc.bodyLen || s.Class != tc.class || (err == nil) != (tc.class == load.ClassNone) {
				t.Errorf("status=%d body=%d class=%v err=%v; want %d, %d, %v", s.Status, s.BytesIn, s.Class, err, tc.status, tc.bodyLen, tc.class)
			}
		})
	}
}

func TestH1KeepAliveAndStaleConnections(t *testing.T) {
	t.Parallel()
	// The server answers two requests per connection, then closes it; the
	// client must notice and retry on a new connection, without errors.
	var mu sync.Mutex
	conns := 0
	url := rawServer(t, func(c net.Conn, r *bufio.Reader) {
		mu.Lock()
		conns++
		mu.Unlock()
		for range 2 {
			req, err := readRequest(r)
			if err != nil {
				return
			}
			if req.Host == "" || req.Header.Get("User-Agent") == "" {
				return
			}
			_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		}
	})
	d, err := New(Options{Endpoints: []Endpoint{{URL: url}}, Connections: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for i := range 10 {
		if err := d.Do(t.Context()); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if conns != 5 {
		t.Errorf("connections = %d, want 5 (two requests each, reused)", conns)
	}
}

func TestH1TimeoutAndCancel(t *testing.T) {
	t.Parallel()
	hold := make(chan struct{})
	defer close(hold)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hold:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	d, err := New(Options{Endpoints: []Endpoint{{URL: srv.URL}}, Timeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var s load.Sample
	if err := d.DoSample(t.Context(), &s); err == nil || s.Class != load.ClassTimeout {
		t.Errorf("timeout: err=%v class=%v, want timeout", err, s.Class)
	}
	d2, _ := New(Options{Endpoints: []Endpoint{{URL: srv.URL}}, Timeout: time.Minute})
	defer d2.Close()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		var s load.Sample
		done <- d2.DoSample(ctx, &s)
	}()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("cancel: err = %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a cancelled request did not return")
	}
}

func TestH1MatchesNetHTTP(t *testing.T) {
	t.Parallel()
	rc := &recorder{}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	ep := Endpoint{URL: srv.URL + "/x?q=1", Method: "POST", Body: []byte("payload"), Headers: map[string]string{"X-Test": "yes", "Host": "example.test"}}
	for _, netHTTP := range []bool{false, true} {
		d, err := New(Options{Endpoints: []Endpoint{ep}, NetHTTP: netHTTP})
		if err != nil {
			t.Fatal(err)
		}
		var s load.Sample
		if err := d.DoSample(t.Context(), &s); err != nil {
			t.Fatal(err)
		}
		d.Close()
		if s.Status != 200 || s.BytesIn != int64(len("hello, load")) {
			t.Errorf("NetHTTP=%v: sample %+v", netHTTP, s)
		}
		if rc.method.Load() != "POST" || rc.body.Load() != "payload" || rc.header.Load() != "yes" || rc.host.Load() != "example.test" {
			t.Errorf("NetHTTP=%v: server saw method %v body %v header %v host %v", netHTTP, rc.method.Load(), rc.body.Load(), rc.header.Load(), rc.host.Load())
		}
	}
}

// FuzzH1Response feeds arbitrary bytes to the response parser: it must
// never panic, and a parsed status must be a 3-digit code.
func FuzzH1Response(f *testing.F) {
	for _, s := range []string{
		"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
		"HTTP/1.0 404 Not Found\r\n\r\nbody",
		"HTTP/1.1 100 Continue\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n",
	} {
		f.Add([]byte(s), false)
	}
	f.Fuzz(func(t *testing.T, data []byte, head bool) {
		c := &h1Conn{r: bufio.NewReaderSize(bytes.NewReader(data), 8<<10)}
		status, _, err := c.readResponse(head)
		if err == nil && (status < 100 || status > 999) {
			t.Errorf("status %d parsed from %q", status, data)
		}
		if c.n > int64(len(data)) || c.body > c.n {
			t.Errorf("counted %d bytes (%d body) from %d", c.n, c.body, len(data))
		}
	})
}

func BenchmarkHTTPPathNetHTTP(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}))
	defer srv.Close()
	d, err := New(Options{Endpoints: []Endpoint{{URL: srv.URL}}, Connections: 8, NetHTTP: true})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	benchRun(b, d)
}
