package grpctarget

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	_ "embed"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/bufbuild/protocompile"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
)

//go:embed greeter.proto
var greeterProto string

// ProtoFile writes greeter.proto into a new temporary directory and returns
// its path. Its service is loadtest.Greeter with SayHello (unary), Stream
// (server streaming: count replies), Fail (always NOT_FOUND) and Upload
// (client streaming, which load drivers refuse).
func ProtoFile(t testing.TB) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "greeter.proto")
	if err := os.WriteFile(p, []byte(greeterProto), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// Call is one call the gRPC server received.
type Call struct {
	// Method is the method name, e.g. SayHello.
	Method string
	// JSON is the decoded request as protobuf JSON.
	JSON string
	// Metadata is the call's incoming metadata.
	Metadata metadata.MD
}

// GRPC is a real gRPC server for greeter.proto.
type GRPC struct {
	// Addr is host:port.
	Addr  string
	mu    sync.Mutex
	calls []Call
}

// StartGRPC starts the Greeter for the test, over TLS when creds is not
// nil.
func StartGRPC(t testing.TB, creds credentials.TransportCredentials) *GRPC {
	t.Helper()
	c := protocompile.Compiler{Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{
		Accessor: protocompile.SourceAccessorFromMap(map[string]string{"greeter.proto": greeterProto})})}
	files, err := c.Compile(context.Background(), "greeter.proto")
	if err != nil {
		t.Fatal(err)
	}
	sd := files[0].Services().ByName("Greeter")
	hello := sd.Methods().ByName("SayHello")
	in, out := hello.Input(), hello.Output()
	g := &GRPC{}
	reply := func(text string) *dynamicpb.Message {
		m := dynamicpb.NewMessage(out)
		m.Set(out.Fields().ByName("message"), protoreflect.ValueOfString(text))
		return m
	}
	unary := func(name string, fail bool) grpc.MethodDesc {
		return grpc.MethodDesc{MethodName: name, Handler: func(_ any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
			m := dynamicpb.NewMessage(in)
			if err := dec(m); err != nil {
				return nil, err
			}
			g.record(ctx, name, m)
			if fail {
				return nil, status.Error(codes.NotFound, "no such greeting")
			}
			return reply("hello"), nil
		}}
	}
	desc := grpc.ServiceDesc{
		ServiceName: string(sd.FullName()),
		HandlerType: (*any)(nil),
		Methods:     []grpc.MethodDesc{unary("SayHello", false), unary("Fail", true)},
		Streams: []grpc.StreamDesc{{StreamName: "Stream", ServerStreams: true, Handler: func(_ any, st grpc.ServerStream) error {
			m := dynamicpb.NewMessage(in)
			if err := st.RecvMsg(m); err != nil {
				return err
			}
			g.record(st.Context(), "Stream", m)
			for range m.Get(in.Fields().ByName("count")).Int() {
				if err := st.SendMsg(reply("tick")); err != nil {
					return err
				}
			}
			return nil
		}}},
	}
	var opts []grpc.ServerOption
	if creds != nil {
		opts = append(opts, grpc.Creds(creds))
	}
	srv := grpc.NewServer(opts...)
	srv.RegisterService(&desc, g)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(lis) }()
	t.Cleanup(func() { srv.Stop(); <-done })
	g.Addr = lis.Addr().String()
	return g
}

func (g *GRPC) record(ctx context.Context, method string, m protoreflect.ProtoMessage) {
	b, _ := protojson.Marshal(m)
	md, _ := metadata.FromIncomingContext(ctx)
	g.mu.Lock()
	g.calls = append(g.calls, Call{Method: method, JSON: string(b), Metadata: md})
	g.mu.Unlock()
}

// Calls returns the calls received, in order.
func (g *GRPC) Calls() []Call {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]Call(nil), g.calls...)
}

// SelfSigned returns a certificate for 127.0.0.1, valid for an hour.
func SelfSigned(t testing.TB) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}
