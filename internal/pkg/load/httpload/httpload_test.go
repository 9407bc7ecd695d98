package httpload

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/forgeload/forgeload/internal/pkg/load"
)

// recorder is a target that counts requests and remembers what it saw.
type recorder struct {
	n      atomic.Int64
	proto  atomic.Int32
	method atomic.Value
	header atomic.Value
	body   atomic.Value
	host   atomic.Value
}

func (rc *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rc.n.Add(1)
	rc.proto.Store(int32(r.ProtoMajor))
	rc.method.Store(r.Method)
	rc.header.Store(r.Header.Get("X-Test"))
	rc.host.Store(r.Host)
	b, _ := io.ReadAll(r.Body)
	rc.body.Store(string(b))
	switch r.URL.Path {
	case "/fail":
		w.WriteHeader(http.StatusServiceUnavailable)
	case "/slow":
		select {
		case <-time.After(2 * time.Second):
		case <-r.Context().Done():
		}
	case "/missing":
		http.NotFound(w, r)
	default:
		_, _ = io.WriteString(w, "hello, load")
	}
}

func TestDriverHTTP1(t *testing.T) {
	t.Parallel()
	rc := &recorder{}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	d, err := New(Options{Endpoints: []Endpoint{{URL: srv.URL + "/x", Method: "put", Body: []byte("payload"),
		Headers: map[string]string{"X-Test": "yes", "Host": "example.test"}}}})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var s load.Sample
	if err := d.DoSample(t.Context(), &s); err != nil {
		t.Fatal(err)
	}
	if s.Status != 200 || s.BytesIn != int64(len("hello, load")) || s.BytesOut < int64(len("payload")) || s.Class != load.ClassNone {
		t.Errorf("sample = %+v, want 200 with body bytes", s)
	}
	if rc.proto.Load() != 1 || rc.method.Load() != "PUT" || rc.header.Load() != "yes" || rc.body.Load() != "payload" || rc.host.Load() != "example.test" {
		t.Errorf("server saw proto %v method %v header %v body %v host %v", rc.proto.Load(), rc.method.Load(), rc.header.Load(), rc.body.Load(), rc.host.Load())
	}
	if got := d.Names(); len(got) != 1 || got[0] != "PUT /x" {
		t.Errorf("Names() = %v, want [PUT /x]", got)
	}
}

func TestDriverHTTP2OverTLS(t *testing.T) {
	t.Parallel()
	rc := &recorder{}
	srv := httptest.NewUnstartedServer(rc)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	d, err := New(Options{Endpoints: []Endpoint{{URL: srv.URL}}, TLSConfig: srv.Client().Transport.(*http.Transport).TLSClientConfig})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Do(t.Context()); err != nil {
		t.Fatal(err)
	}
	if rc.proto.Load() != 2 {
		t.Errorf("server saw HTTP/%d, want HTTP/2", rc.proto.Load())
	}
	// HTTP1 forces HTTP/1.1 even over TLS.
	d1, err := New(Options{Endpoints: []Endpoint{{URL: srv.URL}}, Protocol: HTTP1, InsecureSkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	defer d1.Close()
	if err := d1.Do(t.Context()); err != nil {
		t.Fatal(err)
	}
	if rc.proto.Load() != 1 {
		t.Errorf("Protocol HTTP1: server saw HTTP/%d, want HTTP/1.1", rc.proto.Load())
	}
}

func TestDriverH2C(t *testing.T) {
	t.Parallel()
	rc := &recorder{}
	srv := httptest.NewUnstartedServer(rc)
	srv.Config.Protocols = new(http.Protocols)
	srv.Config.Protocols.SetHTTP1(true)
	srv.Config.Protocols.SetUnencryptedHTTP2(true)
	srv.Start()
	defer srv.Close()
	d, err := New(Options{Endpoints: []Endpoint{{URL: srv.URL}}, Protocol: H2C})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Do(t.Context()); err != nil {
		t.Fatal(err)
	}
	if rc.proto.Load() != 2 {
		t.Errorf("server saw HTTP/%d, want h2c", rc.proto.Load())
	}
}

func TestDriverErrors(t *testing.T) {
	t.Parallel()
	rc := &recorder{}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	for _, tc := range []struct {
		path    string
		timeout time.Duration
		status  int
		class   load.ErrorClass
	}{
		{"/fail", 0, 503, load.ClassHTTP5xx},
		{"/missing", 0, 404, load.ClassHTTP4xx},
		{"/slow", 50 * time.Millisecond, 0, load.ClassTimeout},
	} {
		d, err := New(Options{Endpoints: []Endpoint{{URL: srv.URL + tc.path}}, Timeout: tc.timeout})
		if err != nil {
			t.Fatal(err)
		}
		var s load.Sample
		err = d.DoSample(t.Context(), &s)
		if err == nil || s.Status != tc.status || s.Class != tc.class {
			t.Errorf("%s: err=%v status=%d class=%v, want status %d class %v", tc.path, err, s.Status, s.Class, tc.status, tc.class)
		}
		d.Close()
	}
	// Nothing listens: a network error.
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := l.Addr().String()
	_ = l.Close()
	d, _ := New(Options{Endpoints: []Endpoint{{URL: "http://" + addr}}})
	var s load.Sample
	if err := d.DoSample(t.Context(), &s); err == nil || s.Class != load.ClassNetwork {
		t.Errorf("refused: err=%v class=%v, want network", err, s.Class)
	}
}

func TestDriverDialControlSeesResolvedAddress(t *testing.T) {
	t.Parallel()
	rc := &recorder{}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	var seen atomic.Value
	deny := errors.New("target policy: address denied")
	d, err := New(Options{
		// "localhost" is a name: the hook must see the resolved IP.
		Endpoints: []Endpoint{{URL: "http://localhost:" + port}},
		DialControl: func(network, address string, c syscall.RawConn) error {
			seen.Store(address)
			return deny
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var s load.Sample
	err = d.DoSample(t.Context(), &s)
	if !errors.Is(err, deny) {
		t.Errorf("DoSample = %v, want the policy error", err)
	}
	if rc.n.Load() != 0 {
		t.Error("the denied target received a request")
	}
	addr, _ := seen.Load().(string)
	host, _, _ := net.SplitHostPort(addr)
	if net.ParseIP(host) == nil {
		t.Errorf("DialControl saw %q, want a resolved IP address", addr)
	}
}

func TestNewRejectsBadInput(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{}, "no endpoints"},
		{Options{Endpoints: []Endpoint{{URL: "ftp://x"}}}, "endpoint 1"},
		{Options{Endpoints: []Endpoint{{URL: "http://x"}, {URL: "/relative"}}}, "endpoint 2"},
		{Options{Endpoints: []Endpoint{{URL: "http://x", Weight: -1}}}, "weight"},
		{Options{Endpoints: []Endpoint{{URL: "http://x", Method: "BAD METHOD"}}}, "method"},
	} {
		if _, err := New(tc.o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v) = %v, want an error mentioning %q", tc.o, err, tc.want)
		}
	}
}

// TestRunWeightedEndpoints drives the engine against a real server.
func TestRunWeightedEndpoints(t *testing.T) {
	t.Parallel()
	rc := &recorder{}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	d, err := New(Options{Endpoints: []Endpoint{
		{Name: "a", URL: srv.URL + "/a", Weight: 3},
		{Name: "b", URL: srv.URL + "/fail", Weight: 1},
	}, Connections: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	res, err := load.Run(t.Context(), load.Options{
		Requester:   load.Retry(d, load.RetryPolicy{Retries: 1, Base: time.Microsecond, Max: time.Microsecond}),
		Endpoints:   d.Names(),
		Concurrency: 4, Total: 2000,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != 2000 {
		t.Fatalf("requests = %d, want 2000", res.Requests)
	}
	a, b := res.Endpoints[0], res.Endpoints[1]
	if a.Name != "a" || b.Name != "b" {
		t.Fatalf("endpoints = %q, %q; want a, b", a.Name, b.Name)
	}
	if share := float64(a.Requests) / 2000; share < 0.70 || share > 0.80 {
		t.Errorf("endpoint a got %.2f of requests, want about 0.75", share)
	}
	if b.Errors != b.Requests || b.Status[503] != b.Requests || a.Errors != 0 {
		t.Errorf("b: %d errors / %d status 503 / %d requests; a: %d errors", b.Errors, b.Status[503], b.Requests, a.Errors)
	}
	if res.Retries != b.Requests {
		t.Errorf("retries = %d, want one per failing request (%d)", res.Retries, b.Requests)
	}
	if int64(rc.n.Load()) != 2000+b.Requests {
		t.Errorf("server saw %d requests, want %d", rc.n.Load(), 2000+b.Requests)
	}
	if res.BytesIn != a.Requests*int64(len("hello, load")) {
		t.Errorf("bytes in = %d, want %d", res.BytesIn, a.Requests*int64(len("hello, load")))
	}
}

// TestRunStallingServerRecordsWait is the coordinated-omission check on a
// real server: at a fixed rate, requests queued behind a stall are measured
// from their intended send time.
func TestRunStallingServerRecordsWait(t *testing.T) {
	t.Parallel()
	// 200 req/s for 1.2 s over 4 workers; the target stalls from 0.2 s to
	// 0.7 s after the first request (not after the test's start, which a
	// loaded machine can put far before the load's), so about 100
	// arrivals wait up to 500 ms.
	var once sync.Once
	var start time.Time
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		once.Do(func() { start = time.Now() })
		if el := time.Since(start); el >= 200*time.Millisecond && el < 700*time.Millisecond {
			t := time.NewTimer(700*time.Millisecond - el)
			defer t.Stop()
			select {
			case <-t.C:
			case <-r.Context().Done():
			}
		}
	}))
	defer srv.Close()
	d, err := New(Options{Endpoints: []Endpoint{{URL: srv.URL}}, Connections: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	res, err := load.Run(t.Context(), load.Options{Requester: d, Concurrency: 4, Rate: 200, Duration: 1200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if p := res.Quantile(0.99); p < 350*time.Millisecond {
		t.Errorf("p99 = %v, want the stall's wait (> 350ms) included", p)
	}
	if res.Late == 0 {
		t.Error("late = 0, want the queued arrivals counted as late")
	}
	if res.Requests+res.Dropped != 240 {
		t.Errorf("requests %d + dropped %d, want 240 arrivals", res.Requests, res.Dropped)
	}
}

// rawOKServer is a minimal keep-alive HTTP/1.1 server that answers every
// request head with a fixed 200 and allocates nothing per request, so the
// benchmark's allocations are the client's.
func rawOKServer(b testing.TB) string {
	b.Helper()
	return fixedServer(b, []byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"))
}

// fixedServer is rawOKServer answering resp, a whole HTTP/1.1 response.
func fixedServer(b testing.TB, resp []byte) string {
	b.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
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
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadSlice('\n')
					if err != nil {
						return
					}
					if len(line) <= 2 { // end of a request head
						if _, err := c.Write(resp); err != nil {
							return
						}
					}
				}
			})
		}
	})
	b.Cleanup(func() { _ = l.Close(); wg.Wait() })
	return "http://" + l.Addr().String()
}

// BenchmarkHTTPPath drives the engine and the HTTP/1.1 fast path against a
// local server; allocs/op is the client's and the engine's per request.
func BenchmarkHTTPPath(b *testing.B) {
	url := rawOKServer(b)
	d, err := New(Options{Endpoints: []Endpoint{{URL: url}}, Connections: 8})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	benchRun(b, d)
}

// benchRun drives the engine over d for b.N requests from 8 workers and
// fails on any error; allocs/op are the client's and the engine's.
func benchRun(b *testing.B, d *Driver) {
	b.Helper()
	b.ReportAllocs()
	res, err := load.Run(context.Background(), load.Options{Requester: d, Concurrency: 8, Total: uint64(b.N)})
	if err != nil {
		b.Fatal(err)
	}
	if res.Errors != 0 {
		b.Fatalf("%d errors", res.Errors)
	}
}

// TestWarmOpensConnectionsBeforeTheRun counts the connections the target
// accepts: Warm opens them all, and the requests after it reuse them.
func TestWarmOpensConnectionsBeforeTheRun(t *testing.T) {
	t.Parallel()
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	d, err := New(Options{Endpoints: []Endpoint{{URL: srv.URL + "/"}}, Connections: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Warm(context.Background(), 4); err != nil {
		t.Fatalf("Warm: %v", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for conns.Load() < 4 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond) // the server counts a connection when it accepts it
	}
	if got := conns.Load(); got != 4 {
		t.Fatalf("connections after Warm(4) = %d, want 4", got)
	}
	var s load.Sample
	for range 4 {
		if err := d.DoSample(context.Background(), &s); err != nil {
			t.Fatal(err)
		}
	}
	if got := conns.Load(); got != 4 {
		t.Fatalf("connections after 4 requests = %d, want 4 (warm ones reused)", got)
	}
	// A second Warm does not open more than the pool holds.
	if err := d.Warm(context.Background(), 10); err != nil {
		t.Fatal(err)
	}
	if got := conns.Load(); got > 4 {
		t.Fatalf("connections after a second Warm = %d, want 4", got)
	}
}

// TestRefusedRequestsSendNoBytes: a request whose connection is refused
// never left the machine, so it counts no bytes out, on either path.
func TestRefusedRequestsSendNoBytes(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	for _, netHTTP := range []bool{false, true} {
		d, err := New(Options{Endpoints: []Endpoint{{URL: "http://" + addr + "/", Body: []byte("payload")}}, NetHTTP: netHTTP})
		if err != nil {
			t.Fatal(err)
		}
		var s load.Sample
		if err := d.DoSample(context.Background(), &s); err == nil {
			t.Fatalf("netHTTP=%v: request to a closed port succeeded", netHTTP)
		}
		if s.BytesOut != 0 {
			t.Errorf("netHTTP=%v: BytesOut = %d for a refused connection, want 0", netHTTP, s.BytesOut)
		}
		d.Close()
	}
}

// TestDoEndpointSendsTheEndpointAsked: a caller that picks the endpoint
// itself (a mixed-protocol run) gets that endpoint, whatever the weights,
// on both the fast path and net/http.
func TestDoEndpointSendsTheEndpointAsked(t *testing.T) {
	t.Parallel()
	paths := make(chan string, 64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { paths <- r.URL.Path }))
	defer srv.Close()
	for _, netHTTP := range []bool{false, true} {
		d, err := New(Options{Endpoints: []Endpoint{
			{Name: "a", URL: srv.URL + "/a", Weight: 1000},
			{Name: "b", URL: srv.URL + "/b", Weight: 1},
		}, Connections: 2, NetHTTP: netHTTP})
		if err != nil {
			t.Fatal(err)
		}
		for range 20 {
			var s load.Sample
			if err := d.DoEndpoint(t.Context(), &s, 1); err != nil {
				t.Fatal(err)
			}
			if got := <-paths; got != "/b" || s.Endpoint != 1 || s.Status != 200 {
				t.Fatalf("DoEndpoint(1) (net/http %v) sent %s, sample endpoint %d status %d; want /b, 1, 200", netHTTP, got, s.Endpoint, s.Status)
			}
		}
		d.Close()
	}
}
