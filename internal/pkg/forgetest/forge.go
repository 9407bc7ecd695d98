package forgetest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"gitea.dev/actions-proto-go/ping/v1/pingv1connect"
	"gitea.dev/actions-proto-go/runner/v1/runnerv1connect"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// DefaultCapabilities is the X-Gitea-Actions-Capabilities value a Forge
// returns on Declare unless changed with [WithCapabilities] or
// [Forge.SetCapabilities]. It is what Gitea 1.27 sends.
const DefaultCapabilities = "job-summary"

// CancellingTimeout is how recently a task must have been updated for
// [Forge.Cancel] to move it to cancelling rather than cancelled (Gitea's
// taskReportTimeout).
const CancellingTimeout = 60 * time.Second

// Option configures a Forge in [New] or [NewServer].
type Option func(*Forge)

// WithClock makes the Forge read the time from now instead of time.Now. It
// affects the started/stopped/updated times it records and the 60 s
// cancelling window of [Forge.Cancel].
func WithClock(now func() time.Time) Option {
	return func(f *Forge) { f.now = now }
}

// WithRegistrationToken adds a registration token, like
// [Forge.AddRegistrationToken]. It may be given more than once.
func WithRegistrationToken(token string) Option {
	return func(f *Forge) { f.regTokens[token] = true }
}

// Fault describes an injected failure of one RPC method; see
// [Forge.SetFault].
type Fault struct {
	// Code is the connect error code returned; 0 returns no error (useful
	// with Latency alone).
	Code connect.Code
	// Latency is how long the call waits before it is handled (or fails).
	// The wait ends early when the client gives up.
	Latency time.Duration
	// Count is how many calls the fault applies to; 0 means every call
	// until it is cleared.
	Count int
	// Pad, if positive, adds Pad bytes to a successful answer, in a field
	// the runner protocol does not define (which a client must read and
	// skip): an oversized answer such as a misconfigured or hostile
	// endpoint could send. Gitea sends none.
	Pad int
}

// Forge is a fake Gitea 1.27 Actions server on 127.0.0.1. Create it with
// [New] in tests or [NewServer] elsewhere. All methods are safe for
// concurrent use. The zero value is not usable.
type Forge struct {
	now    func() time.Time
	t      testing.TB
	jwtKey []byte

	srv     *http.Server
	addr    string
	lifeMu  sync.Mutex // serialises Down, Up and Close
	serveWG sync.WaitGroup

	mu           sync.Mutex
	ln           net.Listener
	hold         io.Closer // the port, bound but not listening, during an outage
	down, closed bool
	conns        map[net.Conn]struct{}

	flavor        Flavor // Gitea unless WithForgejo
	noArtifactAPI bool   // WithoutArtifactAPI
	expandCalls   bool   // WithCallExpansion: Gitea 1.27's reusable workflows
	adminToken    string // made by AdminToken

	regTokens    map[string]bool
	capabilities string
	runners      []*runner
	tasks        map[int64]*task
	order        []int64 // task ids in queue order
	nextRunnerID int64
	nextTaskID   int64
	version      int64
	calls        map[string]int64
	inflight     map[string]int64
	maxInflight  map[string]int64
	cancelled    map[string]int64
	headers      map[string]http.Header
	faults       map[string]*Fault

	gitRoot  string   // bare repositories made by AddRepo; removed by Close
	repo     string   // the last AddRepo's name, for the default context
	repoSHA  string   // and its commit
	gitAuths []string // task tokens that authenticated git requests

	// The Git LFS store (lfs.go): objects by oid, the oids each
	// repository has, and the requests the LFS server answered.
	lfsObjects map[string][]byte
	lfsMeta    map[string]map[string]bool
	lfsLog     []LFSRequest

	// artifacts are the uploaded artifacts; artifactRefusal, when not 0,
	// is the status CreateArtifact answers with.
	artifacts       []*Artifact
	artifactRefusal int

	comments   []*Comment        // pull request comments (comments.go)
	userTokens map[string]string // token → login, made by UserToken
}

// New starts a Forge on 127.0.0.1 with a random port and registers
// t.Cleanup(f.Close). It fails the test if the server cannot start.
func New(t testing.TB, opts ...Option) *Forge {
	t.Helper()
	f, err := NewServer(opts...)
	if err != nil {
		t.Fatalf("forgetest.New: %v", err)
	}
	f.t = t
	t.Cleanup(f.Close)
	return f
}

// NewServer starts a Forge on 127.0.0.1 with a random port. The caller must
// call [Forge.Close].
func NewServer(opts ...Option) (*Forge, error) {
	f := &Forge{
		now:          time.Now,
		jwtKey:       []byte(randHex(32)),
		conns:        map[net.Conn]struct{}{},
		regTokens:    map[string]bool{},
		capabilities: DefaultCapabilities,
		tasks:        map[int64]*task{},
		calls:        map[string]int64{},
		inflight:     map[string]int64{},
		maxInflight:  map[string]int64{},
		cancelled:    map[string]int64{},
		headers:      map[string]http.Header{},
		faults:       map[string]*Fault{},
	}
	for _, o := range opts {
		o(f)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("start fake forge: listen on 127.0.0.1: %w", err)
	}
	f.ln = ln
	f.addr = ln.Addr().String()

	svc := &service{f: f}
	hopts := connect.WithInterceptors(f.interceptor())
	mux := http.NewServeMux()
	// Gitea compresses a runner-service response only from 1 KiB on
	// (PROTOCOL.md); connect's default, every response, also cost the
	// race-built test processes a flate writer per RPC.
	rpath, rh := runnerv1connect.NewRunnerServiceHandler(svc, hopts, connect.WithCompressMinBytes(1024))
	ppath, ph := pingv1connect.NewPingServiceHandler(svc, hopts)
	mux.Handle("/api/actions"+rpath, http.StripPrefix("/api/actions", rh))
	mux.Handle("/api/actions"+ppath, http.StripPrefix("/api/actions", ph))
	// The per-step route is what PROTOCOL.md documents; the job-level
	// route is the one in Gitea's pull request description. Both are
	// served so that either client shape is tested.
	mux.HandleFunc("PUT /api/actions_pipeline/_apis/pipelines/workflows/{run}/jobs/{job}/steps/{step}/summary", f.handleSummary)
	mux.HandleFunc("PUT /api/actions_pipeline/_apis/pipelines/workflows/{run}/jobs/{job}/summary", f.handleSummary)
	mux.HandleFunc(ArtifactRoute, f.handleArtifacts)
	f.v3Routes(mux)
	f.apiRoutes(mux)
	f.forgejoRoutes(mux, hopts)
	mux.Handle("/", f.repoHandler())

	f.srv = &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		ConnState:         f.connState,
	}
	f.serve(ln)
	return f, nil
}

func (f *Forge) serve(ln net.Listener) {
	f.serveWG.Add(1)
	go func() {
		defer f.serveWG.Done()
		_ = f.srv.Serve(ln) // returns when ln is closed by Down or Close
	}()
}

func (f *Forge) connState(c net.Conn, s http.ConnState) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch s {
	case http.StateNew:
		if f.down || f.closed {
			_ = c.Close()
			return
		}
		f.conns[c] = struct{}{}
	case http.StateClosed, http.StateHijacked:
		delete(f.conns, c)
	}
}

// URL returns the instance address, e.g. http://127.0.0.1:PORT, without a
// trailing slash. The runner service is at URL()+"/api/actions". It stays
// the same across [Forge.Down] and [Forge.Up].
func (f *Forge) URL() string { return "http://" + f.addr }

// Close stops the server, closes every connection and waits for its
// goroutines. It is safe to call more than once.
func (f *Forge) Close() {
	f.lifeMu.Lock()
	defer f.lifeMu.Unlock()
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return
	}
	f.closed = true
	gitRoot := f.gitRoot
	if f.hold != nil {
		_ = f.hold.Close()
		f.hold = nil
	}
	f.mu.Unlock()
	_ = f.srv.Close()
	f.serveWG.Wait()
	if gitRoot != "" {
		_ = os.RemoveAll(gitRoot)
	}
}

// Down simulates an outage: the listener is closed, so new TCP connections
// are refused, and existing connections are closed. Calls in progress fail
// on the client side. The port stays bound (on Linux), so that no other
// server of the test process takes it meanwhile. [Forge.Up] ends the
// outage.
func (f *Forge) Down() {
	f.lifeMu.Lock()
	defer f.lifeMu.Unlock()
	f.mu.Lock()
	if f.down || f.closed {
		f.mu.Unlock()
		return
	}
	f.down = true
	_ = f.ln.Close()
	var herr error
	f.hold, herr = holdPort(f.addr)
	if herr != nil && f.t != nil {
		// The outage still refuses connections, but the port is free for
		// another test's server to take: say so, for the test that fails.
		f.t.Logf("forgetest: Down: cannot hold port %s during the outage: %v", f.addr, herr)
	}
	for c := range f.conns {
		_ = c.Close()
		delete(f.conns, c)
	}
	f.mu.Unlock()
	f.serveWG.Wait()
}

// Holding reports whether the current outage holds the forge's port (see
// [Forge.Down]); false outside an outage, outside Linux, and when the port
// could not be held (a client's connection can have been given it as its
// own port in the moment between the listener's close and the hold).
func (f *Forge) Holding() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.down && f.hold != nil
}

// Up ends an outage started by [Forge.Down], listening again on the same
// port. It retries for up to 5 s if the port is briefly busy; if it still
// cannot listen it fails the test (or panics when the Forge was made by
// [NewServer]).
func (f *Forge) Up() {
	f.lifeMu.Lock()
	defer f.lifeMu.Unlock()
	f.mu.Lock()
	up := !f.down || f.closed
	f.mu.Unlock()
	if up {
		return
	}
	f.mu.Lock()
	if f.hold != nil {
		_ = f.hold.Close()
		f.hold = nil
	}
	f.mu.Unlock()
	var ln net.Listener
	var err error
	deadline := time.Now().Add(5 * time.Second)
	for {
		ln, err = net.Listen("tcp", f.addr)
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond) // retry interval for a busy port, not synchronisation
	}
	if err != nil {
		msg := fmt.Sprintf("forgetest: Up: listen again on %s: %v", f.addr, err)
		if f.t != nil {
			f.t.Error(msg)
			return
		}
		panic(msg)
	}
	f.mu.Lock()
	f.ln = ln
	f.down = false
	f.mu.Unlock()
	f.serve(ln)
}

// Calls returns how many calls of method ("Ping", "Register", "Declare",
// "FetchTask", "UpdateTask" or "UpdateLog") reached the server, including
// calls failed by a [Fault] or by authentication.
func (f *Forge) Calls(method string) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[method]
}

// InFlight returns how many calls of method the server is handling now.
func (f *Forge) InFlight(method string) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.inflight[method]
}

// MaxInFlight returns the largest number of concurrent calls of method seen
// so far, e.g. to check that a poller never has more FetchTask calls open
// than its capacity allows.
func (f *Forge) MaxInFlight(method string) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.maxInflight[method]
}

// Cancelled returns how many calls of method the client abandoned while the
// server was still handling them (the request context was cancelled, as
// when the client cancels its context or drops the connection). Gitea logs
// "context canceled" for these and may abandon work the call started, so a
// runner should not cause them at a normal job end. Calls cut by
// [Forge.Down] count too.
func (f *Forge) Cancelled(method string) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cancelled[method]
}

// LastHeader returns a copy of the request headers of the latest call of
// method, or nil if there was none.
func (f *Forge) LastHeader(method string) http.Header {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.headers[method].Clone()
}

// methods are the RPC method names accepted by SetFault.
var methods = []string{"Ping", "Register", "Declare", "FetchTask", "UpdateTask", "UpdateLog"}

// SetFault makes later calls of method fail or slow down as fl says,
// replacing any earlier fault for that method. A zero Fault clears it. It
// panics on a method name other than those counted by [Forge.Calls], so a
// typo cannot silently disable a fault.
func (f *Forge) SetFault(method string, fl Fault) {
	if !slices.Contains(methods, method) {
		panic(fmt.Sprintf("forgetest: SetFault: unknown method %q; use one of %v", method, methods))
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if fl == (Fault{}) {
		delete(f.faults, method)
		return
	}
	f.faults[method] = &fl
}

// ClearFaults removes every fault set with [Forge.SetFault].
func (f *Forge) ClearFaults() {
	f.mu.Lock()
	defer f.mu.Unlock()
	clear(f.faults)
}

// SetCapabilities sets the X-Gitea-Actions-Capabilities value returned on
// later Declare calls.
func (f *Forge) SetCapabilities(csv string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.capabilities = csv
}

// interceptor counts calls, records headers and applies faults before the
// handler runs.
func (f *Forge) interceptor() connect.UnaryInterceptorFunc {
	return func(next connect.UnaryFunc) connect.UnaryFunc {
		return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
			method := methodName(req.Spec().Procedure)
			f.mu.Lock()
			f.calls[method]++
			f.inflight[method]++
			f.maxInflight[method] = max(f.maxInflight[method], f.inflight[method])
			f.headers[method] = req.Header().Clone()
			var fl Fault
			if p := f.faults[method]; p != nil {
				fl = *p
				if p.Count > 0 {
					p.Count--
					if p.Count == 0 {
						delete(f.faults, method)
					}
				}
			}
			f.mu.Unlock()
			defer func() {
				f.mu.Lock()
				f.inflight[method]--
				if errors.Is(ctx.Err(), context.Canceled) {
					f.cancelled[method]++
				}
				f.mu.Unlock()
			}()
			if fl.Latency > 0 {
				tm := time.NewTimer(fl.Latency)
				select {
				case <-tm.C:
				case <-ctx.Done():
					tm.Stop()
					code := connect.CodeCanceled
					if errors.Is(ctx.Err(), context.DeadlineExceeded) {
						code = connect.CodeDeadlineExceeded
					}
					return nil, connect.NewError(code, fmt.Errorf("fault latency: %w", ctx.Err()))
				}
			}
			if fl.Code != 0 {
				return nil, connect.NewError(fl.Code, errors.New("injected fault"))
			}
			res, err := next(ctx, req)
			if err == nil && fl.Pad > 0 {
				pad(res, fl.Pad)
			}
			return res, err
		}
	}
}

func methodName(procedure string) string {
	for i := len(procedure) - 1; i >= 0; i-- {
		if procedure[i] == '/' {
			return procedure[i+1:]
		}
	}
	return procedure
}

// padField is the field number of [Fault.Pad]'s padding, one the runner
// protocol does not define.
const padField = 99_999

// pad adds n bytes to res's message as an unknown field.
func pad(res connect.AnyResponse, n int) {
	m, ok := res.Any().(proto.Message)
	if !ok {
		return
	}
	r := m.ProtoReflect()
	b := protowire.AppendTag(r.GetUnknown(), padField, protowire.BytesType)
	r.SetUnknown(protowire.AppendBytes(b, make([]byte, n)))
}
