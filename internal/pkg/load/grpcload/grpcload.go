package grpcload

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/forgeload/forgeload/internal/pkg/load"
	"github.com/forgeload/forgeload/internal/pkg/load/check"
	"github.com/forgeload/forgeload/internal/pkg/load/vars"
)

// Defaults used where an [Options] field is zero.
const (
	// DefaultTimeout bounds one call.
	DefaultTimeout = 30 * time.Second
	// MaxConnections caps the connections a driver opens; gRPC multiplexes
	// calls over each.
	MaxConnections = 16
	// callsPerConnection is how many concurrent calls share a connection.
	callsPerConnection = 64
	dialTimeout        = 10 * time.Second
)

// Options configures a [Driver]. Target and Method are required.
type Options struct {
	// Target is host:port (a grpc:// or grpcs:// prefix is accepted).
	Target string
	// Method is the method to call, from [LoadMethodFrom].
	Method protoreflect.MethodDescriptor
	// Message is the request as protobuf JSON; empty is {}.
	Message string
	// Metadata is sent with every call; keys are lower-cased.
	Metadata map[string]string
	// Timeout bounds each call. Default DefaultTimeout.
	Timeout time.Duration
	// TLS uses TLS; Insecure skips certificate verification.
	TLS, Insecure bool
	// Concurrency is the run's concurrency; the driver opens one
	// connection per 64 calls in flight, up to MaxConnections.
	Concurrency int
	// DialControl is called with the resolved address of every connection
	// before it is made; an error refuses it (the runner's target policy).
	DialControl func(network, address string, c syscall.RawConn) error
	// Resolver resolves host names at dial time; nil is the system one.
	Resolver *net.Resolver
	// Vars fills {{placeholders}} in the message and metadata values with
	// the call's feeder row and the user's variables; nil renders defaults
	// only. A templated message is encoded at every call.
	Vars *vars.Source
	// Checks run on every call: status checks on its gRPC status code (0
	// is OK), body_contains, body_not_contains and json checks on each
	// response message in its protobuf JSON form (which costs a decode and
	// an encode per message). New refuses header checks. A call with a
	// failed check fails with class check.
	Checks check.List
}

// Driver makes gRPC calls for the load engine. It is safe for concurrent
// use; create it with [New] and release its connections with Close.
type Driver struct {
	o      Options
	path   string // /package.Service/Method
	req    []byte
	md     metadata.MD
	conns  []*grpc.ClientConn
	next   atomic.Uint32
	stream bool
	rec    *load.ProtocolRecorder
	// The templated parts, used when perUser is set.
	msg     *vars.Template
	mdt     map[string]*vars.Template
	perUser bool
	// status and body are Options.Checks split by what they read.
	status, body check.List
}

var (
	_ load.Requester     = (*Driver)(nil)
	_ load.ProtocolMeter = (*Driver)(nil)
)

// New encodes the request, checks o and returns a Driver. Connections are
// made lazily, at the first call.
func New(o Options) (*Driver, error) {
	if o.Method == nil {
		return nil, errors.New("grpc driver: no method: set grpc.proto_file, grpc.service and grpc.method")
	}
	if o.Method.IsStreamingClient() {
		return nil, fmt.Errorf("grpc method %s streams from the client: forgeload calls unary and server-streaming methods only", o.Method.FullName())
	}
	target := strings.TrimPrefix(strings.TrimPrefix(o.Target, "grpc://"), "grpcs://")
	target = strings.TrimSuffix(target, "/")
	if _, _, err := net.SplitHostPort(target); err != nil {
		return nil, fmt.Errorf("grpc target %q is not host:port (want e.g. 127.0.0.1:50051)", o.Target)
	}
	if err := o.Checks.Only("protocol grpc", append([]check.Kind{check.KindStatus}, check.BodyKinds...)...); err != nil {
		return nil, fmt.Errorf("grpc driver: %w", err)
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	d := &Driver{o: o, stream: o.Method.IsStreamingServer(), rec: load.NewProtocolRecorder("grpc"),
		path: "/" + string(o.Method.Parent().FullName()) + "/" + string(o.Method.Name()),
		msg:  vars.Parse(o.Message), mdt: map[string]*vars.Template{}}
	d.perUser = !d.msg.Static() || o.Vars.PerRequest()
	d.status, d.body = o.Checks.Of(check.KindStatus), o.Checks.Of(check.BodyKinds...)
	for k, v := range o.Metadata {
		d.mdt[k] = vars.Parse(v)
		d.perUser = d.perUser || !d.mdt[k].Static()
	}
	if d.msg.Static() {
		req, err := d.encode(o.Message)
		if err != nil {
			return nil, err
		}
		d.req = req
	}
	if len(o.Metadata) > 0 {
		d.md = metadata.New(o.Metadata)
	}
	creds := insecure.NewCredentials()
	if o.TLS {
		creds = credentials.NewTLS(&tls.Config{InsecureSkipVerify: o.Insecure}) //nolint:gosec // opt-in for self-signed targets
	}
	dialer := &net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second, Control: o.DialControl, Resolver: o.Resolver}
	n := min(MaxConnections, max(1, (o.Concurrency+callsPerConnection-1)/callsPerConnection))
	for range n {
		// passthrough: the dialer resolves the name itself, so the dial
		// control sees every address actually dialled.
		cc, err := grpc.NewClient("passthrough:///"+target,
			grpc.WithTransportCredentials(creds),
			grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
				return dialer.DialContext(ctx, "tcp", addr)
			}),
			grpc.WithDefaultCallOptions(grpc.ForceCodec(rawCodec{})),
		)
		if err != nil {
			d.Close()
			return nil, fmt.Errorf("grpc driver: %w", err)
		}
		d.conns = append(d.conns, cc)
	}
	return d, nil
}

// encode turns the JSON form of the input message into its wire bytes.
func (d *Driver) encode(text string) ([]byte, error) {
	in := d.o.Method.Input()
	msg := dynamicpb.NewMessage(in)
	body := strings.TrimSpace(text)
	if body == "" {
		body = "{}"
	}
	if err := protojson.Unmarshal([]byte(body), msg); err != nil {
		return nil, fmt.Errorf("grpc message: %w: write it as the JSON form of %s", err, in.FullName())
	}
	b, err := proto.Marshal(msg)
	if err != nil {
		return nil, fmt.Errorf("grpc message: encode %s: %w", in.FullName(), err)
	}
	return b, nil
}

// Names returns the one endpoint name, for load.Options.Endpoints.
func (d *Driver) Names() []string { return []string{"grpc " + d.path} }

// ProtocolStats returns the gRPC measurements so far.
func (d *Driver) ProtocolStats() *load.ProtocolStats { return d.rec.Stats() }

// Close closes the connections.
func (d *Driver) Close() {
	for _, c := range d.conns {
		_ = c.Close()
	}
}

// Do makes one call.
func (d *Driver) Do(ctx context.Context) error {
	var s load.Sample
	return d.DoSample(ctx, &s)
}

// DoSample makes one call and reports its bytes and error class (the gRPC
// status code) in s.
func (d *Driver) DoSample(ctx context.Context, s *load.Sample) error {
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, d.o.Timeout)
	defer cancel()
	req, md := d.req, d.md
	if d.perUser {
		u, err := d.o.Vars.Begin(ctx, s)
		if err != nil {
			return err
		}
		if !d.msg.Static() {
			if req, err = d.encode(d.msg.Render(u)); err != nil {
				s.Class = load.ClassOther
				return fmt.Errorf("%w (after filling its placeholders)", err)
			}
		}
		if len(d.mdt) > 0 || u.Auth != "" || u.TraceParent != "" {
			md = metadata.MD{}
			for k, t := range d.mdt {
				md.Set(k, t.Render(u))
			}
			if u.Auth != "" {
				md.Set("authorization", u.Auth)
			}
			if u.TraceParent != "" {
				md.Set("traceparent", u.TraceParent)
			}
		}
	}
	if md != nil {
		ctx = metadata.NewOutgoingContext(ctx, md)
	}
	cc := d.conns[int(d.next.Add(1))%len(d.conns)]
	out := &raw{b: req}
	in := &raw{keep: len(d.body) > 0}
	s.BytesOut = int64(len(req))
	var err, checkErr error
	if !d.stream {
		err = cc.Invoke(ctx, d.path, out, in)
		s.BytesIn = int64(in.n)
		if err == nil {
			checkErr = d.checkMessage(in)
		}
	} else {
		err, checkErr = d.serverStream(ctx, cc, out, s)
	}
	if err2 := d.checkStatus(parent, err); checkErr == nil {
		checkErr = err2
	}
	if err != nil {
		if parent.Err() != nil {
			s.Class = load.ClassCanceled
		} else {
			st, _ := status.FromError(err)
			s.Class = load.GRPCClass(uint32(st.Code()))
		}
		return fmt.Errorf("grpc call %s: %w", d.path, err)
	}
	if checkErr != nil {
		s.Class = load.ClassCheck
	}
	return checkErr
}

// checkStatus runs the status checks on the status code of a call that
// ended with err, unless the run was canceled (there is no status then).
func (d *Driver) checkStatus(parent context.Context, err error) error {
	if len(d.status) == 0 || parent.Err() != nil {
		return nil
	}
	st, _ := status.FromError(err)
	return d.status.Run(&check.Response{Status: int(st.Code())})
}

// checkMessage runs the body checks on a response message, as protobuf
// JSON.
func (d *Driver) checkMessage(in *raw) error {
	if len(d.body) == 0 {
		return nil
	}
	msg := dynamicpb.NewMessage(d.o.Method.Output())
	body := []byte("not a " + string(d.o.Method.Output().FullName()))
	if proto.Unmarshal(in.b, msg) == nil {
		if b, err := protojson.Marshal(msg); err == nil {
			body = b
		}
	}
	return d.body.Run(&check.Response{Body: body})
}

var streamDesc = &grpc.StreamDesc{ServerStreams: true}

// serverStream makes a server-streaming call; it returns the call's error
// and the first failed check of a message.
func (d *Driver) serverStream(ctx context.Context, cc *grpc.ClientConn, out *raw, s *load.Sample) (err, checkErr error) {
	st, err := cc.NewStream(ctx, streamDesc, d.path)
	if err != nil {
		return err, nil
	}
	if err := st.SendMsg(out); err != nil && !errors.Is(err, io.EOF) {
		return err, nil
	}
	if err := st.CloseSend(); err != nil {
		return err, nil
	}
	var msgs int64
	for {
		in := &raw{keep: len(d.body) > 0}
		err := st.RecvMsg(in)
		if errors.Is(err, io.EOF) {
			d.rec.Add("stream_messages", msgs)
			return nil, checkErr
		}
		if err != nil {
			d.rec.Add("stream_messages", msgs)
			return err, checkErr
		}
		msgs++
		s.BytesIn += int64(in.n)
		if cerr := d.checkMessage(in); checkErr == nil {
			checkErr = cerr
		}
	}
}

// raw is a message that is already encoded (requests) or only counted
// (responses).
type raw struct {
	b []byte
	n int
	// keep makes Unmarshal keep a copy of a response in b, for checks.
	keep bool
}

// rawCodec sends raw.b as it is and counts the bytes of what it receives,
// so a call costs no protobuf work on the client. It keeps the "proto"
// content subtype, so servers see an ordinary protobuf call.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) {
	if r, ok := v.(*raw); ok {
		return r.b, nil
	}
	if m, ok := v.(proto.Message); ok {
		return proto.Marshal(m)
	}
	return nil, fmt.Errorf("grpc driver: cannot encode %T", v)
}

func (rawCodec) Unmarshal(data []byte, v any) error {
	if r, ok := v.(*raw); ok {
		r.n = len(data)
		if r.keep {
			r.b = append(r.b[:0], data...)
		}
		return nil
	}
	if m, ok := v.(proto.Message); ok {
		return proto.Unmarshal(data, m)
	}
	return fmt.Errorf("grpc driver: cannot decode into %T", v)
}

func (rawCodec) Name() string { return "proto" }
