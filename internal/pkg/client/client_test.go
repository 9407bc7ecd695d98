package client_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect"
	pingv1 "gitea.dev/actions-proto-go/ping/v1"
	"gitea.dev/actions-proto-go/ping/v1/pingv1connect"
	runnerv1 "gitea.dev/actions-proto-go/runner/v1"

	"github.com/forgeload/forgeload/internal/pkg/client"
	"github.com/forgeload/forgeload/internal/pkg/forgetest"
)

func mustNew(t *testing.T, o client.Options) *client.Client {
	t.Helper()
	c, err := client.New(o)
	if err != nil {
		t.Fatalf("New(%v): %v", o, err)
	}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

func TestNewValidation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		o       client.Options
		wantErr string // "" = valid
	}{
		{"empty address", client.Options{}, "address is empty"},
		{"no scheme", client.Options{Address: "gitea.example.com"}, "scheme must be http or https"},
		{"ftp", client.Options{Address: "ftp://gitea.example.com"}, "scheme must be http or https"},
		{"no host", client.Options{Address: "https://"}, "no host"},
		{"query", client.Options{Address: "https://g.example.com/?a=b"}, "remove the query"},
		{"negative timeout", client.Options{Address: "https://g.example.com", Timeout: -time.Second}, "timeout -1s is negative"},
		{"uuid without token", client.Options{Address: "https://g.example.com", UUID: "u"}, "uuid and token must be set together"},
		{"valid with sub-path", client.Options{Address: "https://g.example.com/gitea/", UUID: "u", Token: "t"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := client.New(tt.o)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("New(%v) = %v, want no error", tt.o, err)
				}
				if got := c.Address(); strings.HasSuffix(got, "/") {
					t.Errorf("Address() = %q, want no trailing slash", got)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("New(%v) error = %v, want it to contain %q", tt.o, err, tt.wantErr)
			}
		})
	}
}

// An address's password and credential-like query values never reach an
// error, also when the address does not parse.
func TestNewErrorsHideAddressSecrets(t *testing.T) {
	t.Parallel()
	for _, addr := range []string{
		"https://bob:s3cret%zz@g.example.com",              // does not parse
		"ftp://bob:s3cret@g.example.com",                   // wrong scheme
		"https://bob:s3cret@g.example.com/?token=s3cret-q", // a query
	} {
		_, err := client.New(client.Options{Address: addr})
		if err == nil || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("New(%q) error = %v, want an error without the secrets", addr, err)
		}
	}
}

func TestHeadersAndFlow(t *testing.T) {
	t.Parallel()
	f := forgetest.New(t, forgetest.WithRegistrationToken("reg"))
	ctx := context.Background()

	reg := mustNew(t, client.Options{Address: f.URL() + "/", Version: "1.2.3"})
	if reg.Address() != f.URL() {
		t.Errorf("Address() = %q, want %q", reg.Address(), f.URL())
	}
	if err := reg.PingUntil(ctx, "r1", time.Millisecond, nil); err != nil {
		t.Fatalf("PingUntil: %v", err)
	}
	res, err := reg.Register(ctx, connect.NewRequest(&runnerv1.RegisterRequest{Name: "r1", Token: "reg", Labels: []string{"forgeload"}}))
	if err != nil {
		t.Fatalf("Register: %v", err)
	}
	for _, m := range []string{"Ping", "Register"} {
		h := f.LastHeader(m)
		if h.Get("x-runner-uuid") != "" || h.Get("x-runner-token") != "" {
			t.Errorf("%s sent runner credentials: %v", m, h)
		}
		if got := h.Get("User-Agent"); got != "forgeload/1.2.3" {
			t.Errorf("%s User-Agent = %q, want forgeload/1.2.3", m, got)
		}
	}

	r := res.Msg.Runner
	c := mustNew(t, client.Options{Address: f.URL(), UUID: r.Uuid, Token: r.Token, Version: "1.2.3"})
	dres, err := c.Declare(ctx, connect.NewRequest(&runnerv1.DeclareRequest{Version: "1.2.3", Labels: []string{"forgeload"}}))
	if err != nil {
		t.Fatalf("Declare: %v", err)
	}
	if got := dres.Header().Get(client.HeaderCapabilities); got != "job-summary" {
		t.Errorf("capabilities = %q, want job-summary", got)
	}
	id := f.QueueJob(forgetest.Job{RunsOn: []string{"forgeload"}})
	fres, err := c.FetchTask(ctx, connect.NewRequest(&runnerv1.FetchTaskRequest{}))
	if err != nil || fres.Msg.Task == nil || fres.Msg.Task.Id != id {
		t.Fatalf("FetchTask = %v, %v; want task %d", fres, err, id)
	}
	if _, err := c.UpdateLog(ctx, connect.NewRequest(&runnerv1.UpdateLogRequest{TaskId: id, Rows: []*runnerv1.LogRow{{Content: "hi"}}, NoMore: true})); err != nil {
		t.Fatalf("UpdateLog: %v", err)
	}
	if _, err := c.UpdateTask(ctx, connect.NewRequest(&runnerv1.UpdateTaskRequest{State: &runnerv1.TaskState{Id: id, Result: runnerv1.Result_RESULT_SUCCESS}})); err != nil {
		t.Fatalf("UpdateTask: %v", err)
	}
	for _, m := range []string{"Declare", "FetchTask", "UpdateLog", "UpdateTask"} {
		h := f.LastHeader(m)
		if h.Get("x-runner-uuid") != r.Uuid || h.Get("x-runner-token") != r.Token {
			t.Errorf("%s headers uuid=%q token set=%v, want the runner's credentials", m, h.Get("x-runner-uuid"), h.Get("x-runner-token") != "")
		}
	}
	if v := f.Task(id); !v.Done || v.Log[0] != "hi" {
		t.Errorf("task after flow = %+v", v)
	}
}

func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	f := forgetest.New(t)
	uuid, token := f.AddRunner("r", []string{"forgeload"})
	c := mustNew(t, client.Options{Address: f.URL(), UUID: uuid, Token: token})
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Go(func() {
			_, err := c.FetchTask(context.Background(), connect.NewRequest(&runnerv1.FetchTaskRequest{}))
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("concurrent FetchTask: %v", err)
		}
	}
	if got := f.Calls("FetchTask"); got != 16 {
		t.Errorf("Calls(FetchTask) = %d, want 16", got)
	}
}

func TestTimeout(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		optTimeout time.Duration
		ctxTimeout time.Duration // 0 = no deadline
	}{
		{"option timeout applies without a ctx deadline", 100 * time.Millisecond, 0},
		{"option timeout applies before a later ctx deadline", 100 * time.Millisecond, time.Minute},
		{"earlier ctx deadline wins", time.Minute, 100 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := forgetest.New(t)
			uuid, token := f.AddRunner("r", []string{"forgeload"})
			f.SetFault("FetchTask", forgetest.Fault{Latency: time.Minute})
			c := mustNew(t, client.Options{Address: f.URL(), UUID: uuid, Token: token, Timeout: tt.optTimeout})
			ctx := context.Background()
			if tt.ctxTimeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.ctxTimeout)
				defer cancel()
			}
			start := time.Now()
			_, err := c.FetchTask(ctx, connect.NewRequest(&runnerv1.FetchTaskRequest{}))
			if connect.CodeOf(err) != connect.CodeDeadlineExceeded {
				t.Fatalf("FetchTask against a 1 min stall = %v, want DeadlineExceeded", err)
			}
			if el := time.Since(start); el > 10*time.Second {
				t.Errorf("FetchTask took %v, want about 100ms", el)
			}
			if !strings.Contains(err.Error(), "FetchTask") || !strings.Contains(err.Error(), f.URL()) {
				t.Errorf("error %q does not name the method and address", err)
			}
		})
	}
}

func TestIsUnauthenticated(t *testing.T) {
	t.Parallel()
	f := forgetest.New(t)
	uuid, token := f.AddRunner("r", []string{"forgeload"})
	good := mustNew(t, client.Options{Address: f.URL(), UUID: uuid, Token: token})
	bad := mustNew(t, client.Options{Address: f.URL(), UUID: uuid, Token: "wrong"})
	ctx := context.Background()

	_, badErr := bad.FetchTask(ctx, connect.NewRequest(&runnerv1.FetchTaskRequest{}))
	f.SetFault("FetchTask", forgetest.Fault{Code: connect.CodeUnavailable, Count: 1})
	_, unavailErr := good.FetchTask(ctx, connect.NewRequest(&runnerv1.FetchTaskRequest{}))
	_, okErr := good.FetchTask(ctx, connect.NewRequest(&runnerv1.FetchTaskRequest{}))
	f.DeleteRunner(uuid)
	_, deletedErr := good.Declare(ctx, connect.NewRequest(&runnerv1.DeclareRequest{}))

	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"wrong token", badErr, true},
		{"deleted runner", deletedErr, true},
		{"wrapped again", fmt.Errorf("poll: %w", badErr), true},
		{"unavailable", unavailErr, false},
		{"success", okErr, false},
		{"plain error", errors.New("unauthenticated"), false},
		{"connect Unauthenticated", connect.NewError(connect.CodeUnauthenticated, errors.New("unregistered runner")), true},
		{"gitea's gRPC status as unknown", connect.NewError(connect.CodeUnknown, errors.New("rpc error: code = Unauthenticated desc = unregistered runner")), true},
		{"another gRPC status as unknown", connect.NewError(connect.CodeUnknown, errors.New("rpc error: code = Internal desc = boom")), false},
		{"plain text naming the code", errors.New("rpc error: code = Unauthenticated desc = x"), false},
	}
	for _, tt := range tests {
		if got := client.IsUnauthenticated(tt.err); got != tt.want {
			t.Errorf("IsUnauthenticated(%s: %v) = %v, want %v", tt.name, tt.err, got, tt.want)
		}
	}
	if strings.Contains(badErr.Error(), "wrong") || strings.Contains(badErr.Error(), token) {
		t.Errorf("error %q contains a token", badErr)
	}
}

func TestPingUntil(t *testing.T) {
	t.Parallel()
	t.Run("retries until the forge answers", func(t *testing.T) {
		t.Parallel()
		f := forgetest.New(t)
		f.SetFault("Ping", forgetest.Fault{Code: connect.CodeUnavailable, Count: 2})
		c := mustNew(t, client.Options{Address: f.URL()})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := c.PingUntil(ctx, "r", 5*time.Millisecond, nil); err != nil {
			t.Fatalf("PingUntil: %v", err)
		}
		if got := f.Calls("Ping"); got != 3 {
			t.Errorf("Calls(Ping) = %d, want 3", got)
		}
	})
	t.Run("gives up at once on a server that is not a forge", func(t *testing.T) {
		t.Parallel()
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			http.NotFound(w, nil)
		}))
		t.Cleanup(srv.Close)
		c := mustNew(t, client.Options{Address: srv.URL})
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		called := 0
		start := time.Now()
		err := c.PingUntil(ctx, "r", time.Second, func(error) { called++ })
		if err == nil || errors.Is(err, context.DeadlineExceeded) || connect.CodeOf(err) != connect.CodeUnimplemented || called != 0 {
			t.Errorf("PingUntil against a 404 server = %v (retrying called %d times), want Unimplemented at once", err, called)
		}
		if d := time.Since(start); d > 30*time.Second {
			t.Errorf("PingUntil against a 404 server took %s, want no retry", d)
		}
	})
	t.Run("says once what it waits for", func(t *testing.T) {
		t.Parallel()
		f := forgetest.New(t)
		f.SetFault("Ping", forgetest.Fault{Code: connect.CodeUnavailable, Count: 3})
		c := mustNew(t, client.Options{Address: f.URL()})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var got []error
		if err := c.PingUntil(ctx, "r", time.Millisecond, func(err error) { got = append(got, err) }); err != nil {
			t.Fatalf("PingUntil: %v", err)
		}
		if len(got) != 1 || connect.CodeOf(got[0]) != connect.CodeUnavailable {
			t.Errorf("retrying called with %v, want once with the Unavailable error", got)
		}
	})
	t.Run("gives up with address and last failure", func(t *testing.T) {
		t.Parallel()
		f := forgetest.New(t)
		f.Down()
		c := mustNew(t, client.Options{Address: f.URL()})
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		err := c.PingUntil(ctx, "r", 10*time.Millisecond, nil)
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), f.URL()) ||
			!strings.Contains(err.Error(), "refused") || connect.CodeOf(err) != connect.CodeUnavailable {
			t.Errorf("PingUntil against a down forge = %v, want deadline exceeded naming %s and connection refused", err, f.URL())
		}
	})
}

func TestRetryable(t *testing.T) {
	t.Parallel()
	wrap := func(code connect.Code, err error) error {
		return fmt.Errorf("forge Ping at x: %w", connect.NewError(code, err))
	}
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"connection refused", wrap(connect.CodeUnavailable, &net.OpError{Op: "dial", Err: errors.New("connect: connection refused")}), true},
		{"bad gateway while the forge starts", wrap(connect.CodeUnavailable, errors.New("HTTP status 502 Bad Gateway")), true},
		{"timeout", wrap(connect.CodeDeadlineExceeded, context.DeadlineExceeded), true},
		{"unknown host", wrap(connect.CodeUnavailable, &net.DNSError{Err: "no such host", Name: "gitea.exmaple.com", IsNotFound: true}), false},
		{"name server down", wrap(connect.CodeUnavailable, &net.DNSError{Err: "i/o timeout", Name: "gitea.example.com", IsTimeout: true}), true},
		{"refused certificate", wrap(connect.CodeUnavailable, &tls.CertificateVerificationError{Err: errors.New("x509: unknown authority")}), false},
		{"https to an http port", wrap(connect.CodeUnavailable, tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}), false},
		{"404: a mistyped path or Actions disabled", wrap(connect.CodeUnimplemented, errors.New("HTTP status 404 Not Found")), false},
		{"an HTML page", wrap(connect.CodeUnknown, errors.New("invalid content-type: \"text/html\"")), false},
		// connect reports a connection the forge reset (a restart, a
		// proxy dropping it) as canceled, though nobody cancelled.
		{"connection reset", wrap(connect.CodeCanceled, &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}), true},
		{"broken pipe", wrap(connect.CodeUnknown, &net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", syscall.EPIPE)}), true},
		{"cancelled by the runner", wrap(connect.CodeCanceled, context.Canceled), false},
		{"nil", nil, false},
	}
	for _, tt := range tests {
		if got := client.Retryable(tt.err); got != tt.want {
			t.Errorf("Retryable(%s: %v) = %v, want %v", tt.name, tt.err, got, tt.want)
		}
	}
}

// pingHandler answers Ping for the TLS test.
type pingHandler struct{}

func (pingHandler) Ping(_ context.Context, req *connect.Request[pingv1.PingRequest]) (*connect.Response[pingv1.PingResponse], error) {
	return connect.NewResponse(&pingv1.PingResponse{Data: "Hello, " + req.Msg.Data + "!"}), nil
}

func TestTLSInsecure(t *testing.T) {
	t.Parallel()
	path, h := pingv1connect.NewPingServiceHandler(pingHandler{})
	mux := http.NewServeMux()
	mux.Handle("/api/actions"+path, http.StripPrefix("/api/actions", h))
	srv := httptest.NewUnstartedServer(mux)
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the rejected handshake is expected
	srv.StartTLS()
	t.Cleanup(srv.Close)

	tests := []struct {
		insecure bool
		wantOK   bool
	}{
		{false, false}, // self-signed certificate is rejected
		{true, true},
	}
	for _, tt := range tests {
		c := mustNew(t, client.Options{Address: srv.URL, Insecure: tt.insecure, Timeout: 10 * time.Second})
		res, err := c.Ping(context.Background(), connect.NewRequest(&pingv1.PingRequest{Data: "tls"}))
		if tt.wantOK {
			if err != nil || res.Msg.Data != "Hello, tls!" {
				t.Errorf("Insecure=%v: Ping = %v, %v; want Hello, tls!", tt.insecure, res, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), "certificate") {
			t.Errorf("Insecure=%v: Ping error = %v, want a certificate error", tt.insecure, err)
		}
	}
}

// TestOversizedAnswerFailsCleanly: a forge answer above the read limit
// (DefaultMaxResponseBytes, 1 MiB here to keep the test light) fails its
// call with an error naming the limit (before, a 1 GiB FetchTask answer
// took 3.7 GB of the daemon's memory), and the next call works.
func TestOversizedAnswerFailsCleanly(t *testing.T) {
	t.Parallel()
	f := forgetest.New(t)
	uuid, token := f.AddRunner("r", []string{"forgeload"})
	c := mustNew(t, client.Options{Address: f.URL(), UUID: uuid, Token: token, MaxResponseBytes: 1 << 20})
	f.SetFault("FetchTask", forgetest.Fault{Pad: 1 << 20, Count: 1})
	_, err := c.FetchTask(t.Context(), connect.NewRequest(&runnerv1.FetchTaskRequest{}))
	if err == nil || connect.CodeOf(err) != connect.CodeResourceExhausted || !strings.Contains(err.Error(), "larger than the 1 MiB this runner reads from a forge") {
		t.Fatalf("FetchTask of an oversized answer = %v, want resource_exhausted naming the 1 MiB limit", err)
	}
	if !client.Retryable(err) {
		t.Errorf("Retryable(%v) = false, want true: the poller backs off and polls again", err)
	}
	id := f.QueueJob(forgetest.Job{RunsOn: []string{"forgeload"}})
	res, err := c.FetchTask(t.Context(), connect.NewRequest(&runnerv1.FetchTaskRequest{}))
	if err != nil || res.Msg.Task.GetId() != id {
		t.Fatalf("FetchTask after the oversized answer = %v, %v; want task %d", res, err, id)
	}
}
