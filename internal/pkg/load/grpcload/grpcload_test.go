package grpcload

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/credentials"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/forgeload/forgeload/internal/pkg/load"
	"github.com/forgeload/forgeload/internal/pkg/load/loadtarget/grpctarget"
)

func method(t *testing.T, name string) protoreflect.MethodDescriptor {
	t.Helper()
	md, err := loadMethod(context.Background(), grpctarget.ProtoFile(t), "Greeter", name)
	if err != nil {
		t.Fatal(err)
	}
	return md
}

func TestUnaryCalls(t *testing.T) {
	t.Parallel()
	g := grpctarget.StartGRPC(t, nil)
	d, err := New(Options{Target: g.Addr, Method: method(t, "SayHello"), Message: `{"name":"load","at":"2024-01-02T03:04:05Z"}`, Metadata: map[string]string{"X-Tenant": "a"}})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	res, err := load.Run(context.Background(), load.Options{Requester: d, Rate: 200, Total: 20, Concurrency: 4, Endpoints: d.Names(), Grace: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != 20 || res.Errors != 0 || res.BytesIn == 0 || res.BytesOut == 0 {
		t.Fatalf("requests %d errors %d (%v) bytes %d/%d", res.Requests, res.Errors, res.Classes, res.BytesIn, res.BytesOut)
	}
	calls := g.Calls()
	if len(calls) != 20 {
		t.Fatalf("server saw %d calls, want 20", len(calls))
	}
	var req struct{ Name, At string }
	if c := calls[0]; json.Unmarshal([]byte(c.JSON), &req) != nil || c.Method != "SayHello" || req.Name != "load" || req.At != "2024-01-02T03:04:05Z" {
		t.Errorf("server decoded %s %s", c.Method, c.JSON)
	}
	if got := calls[0].Metadata.Get("x-tenant"); len(got) != 1 || got[0] != "a" {
		t.Errorf("metadata x-tenant = %q, want a", got)
	}
}

func TestServerStreaming(t *testing.T) {
	t.Parallel()
	g := grpctarget.StartGRPC(t, nil)
	d, err := New(Options{Target: "grpc://" + g.Addr, Method: method(t, "Stream"), Message: `{"count":3}`})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for range 2 {
		var s load.Sample
		if err := d.DoSample(context.Background(), &s); err != nil {
			t.Fatal(err)
		}
	}
	if n := d.ProtocolStats().Counters["stream_messages"]; n != 6 {
		t.Errorf("stream messages = %d, want 6", n)
	}
}

func TestStatusIsTheClass(t *testing.T) {
	t.Parallel()
	g := grpctarget.StartGRPC(t, nil)
	d, err := New(Options{Target: g.Addr, Method: method(t, "Fail")})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var s load.Sample
	err = d.DoSample(context.Background(), &s)
	if err == nil || s.Class.String() != "grpc_not_found" {
		t.Fatalf("err %v class %s, want grpc_not_found", err, s.Class)
	}
	if n := len(g.Calls()); n != 1 {
		t.Errorf("server saw %d calls, want 1", n)
	}
}

func TestTLS(t *testing.T) {
	t.Parallel()
	g := grpctarget.StartGRPC(t, credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{grpctarget.SelfSigned(t)}}))
	md := method(t, "SayHello")
	d, err := New(Options{Target: g.Addr, Method: md, TLS: true, Insecure: true})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var s load.Sample
	if err := d.DoSample(context.Background(), &s); err != nil {
		t.Fatal(err)
	}
	strict, err := New(Options{Target: g.Addr, Method: md, TLS: true})
	if err != nil {
		t.Fatal(err)
	}
	defer strict.Close()
	s = load.Sample{}
	if err := strict.DoSample(context.Background(), &s); err == nil || s.Class.String() != "grpc_unavailable" {
		t.Errorf("an unverified certificate: err %v class %s, want grpc_unavailable", err, s.Class)
	}
	if n := len(g.Calls()); n != 1 {
		t.Errorf("server saw %d calls, want 1", n)
	}
}

func TestDialControlRefuses(t *testing.T) {
	t.Parallel()
	g := grpctarget.StartGRPC(t, nil)
	refused := errors.New("refused by policy")
	d, err := New(Options{Target: g.Addr, Method: method(t, "SayHello"), Timeout: 5 * time.Second,
		DialControl: func(string, string, syscall.RawConn) error { return refused }})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var s load.Sample
	if err := d.DoSample(context.Background(), &s); err == nil || !strings.Contains(err.Error(), "refused by policy") {
		t.Fatalf("err = %v, want the refusal", err)
	}
	if n := len(g.Calls()); n != 0 {
		t.Errorf("the server saw %d calls the dial control refused", n)
	}
}

func TestNewErrors(t *testing.T) {
	t.Parallel()
	md := method(t, "SayHello")
	for _, tt := range []struct {
		name string
		o    Options
		want string
	}{
		{"bad json", Options{Target: "127.0.0.1:1", Method: md, Message: `{"nope":1}`}, "JSON form of loadtest.HelloRequest"},
		{"no port", Options{Target: "127.0.0.1", Method: md}, "not host:port"},
		{"client streaming", Options{Target: "127.0.0.1:1", Method: method(t, "Upload")}, "unary and server-streaming"},
	} {
		if _, err := New(tt.o); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want %q", tt.name, err, tt.want)
		}
	}
	proto := grpctarget.ProtoFile(t)
	for _, tt := range []struct{ svc, m, want string }{
		{"loadtest.Nope", "SayHello", `service "loadtest.Nope" is not in greeter.proto (it has: loadtest.Greeter)`},
		{"Greeter", "Nope", `method "Nope" is not in service loadtest.Greeter (it has: SayHello, Stream, Fail, Upload)`},
	} {
		if _, err := loadMethod(context.Background(), proto, tt.svc, tt.m); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("loadMethod(%s, %s) = %v, want %q", tt.svc, tt.m, err, tt.want)
		}
	}
}

func FuzzCompileMethod(f *testing.F) {
	f.Add("syntax = \"proto3\";\npackage p;\nmessage A { string s = 1; }\nservice S { rpc M(A) returns (A); }\n", "S", "M")
	f.Add("syntax = \"proto2\";\nmessage A { optional int32 x = 1; }\nservice S { rpc M(A) returns (stream A); }\n", "S", "M")
	f.Fuzz(func(t *testing.T, src, svc, m string) {
		open := func(name string) (io.ReadCloser, error) {
			if name != "f.proto" {
				return nil, errors.New("not found")
			}
			return io.NopCloser(strings.NewReader(src)), nil
		}
		md, err := compileMethod(context.Background(), "f.proto", open, svc, m)
		if err == nil && string(md.Name()) != m {
			t.Fatalf("found method %s, asked for %s", md.Name(), m)
		}
	})
}

// loadMethod loads a method from a .proto file on disk.
func loadMethod(ctx context.Context, path, service, method string) (protoreflect.MethodDescriptor, error) {
	return LoadMethodFrom(ctx, path, os.ReadFile, service, method)
}
