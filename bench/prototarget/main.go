package main

import (
	"context"
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"

	"github.com/bufbuild/protocompile"
	"github.com/coder/websocket"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
)

//go:embed greeter.proto
var greeterProto string

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "prototarget:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("prototarget", flag.ContinueOnError)
	proto := fs.String("proto", "", "write greeter.proto to this path (required)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *proto == "" {
		return errors.New("-proto is required: the path where greeter.proto is written for the load generators")
	}
	if err := os.WriteFile(*proto, []byte(greeterProto), 0o600); err != nil {
		return fmt.Errorf("write -proto %s: %w", *proto, err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	desc, err := greeter(ctx)
	if err != nil {
		return err
	}
	gs := grpc.NewServer()
	gs.RegisterService(desc, nil)
	gl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("listen for gRPC: %w", err)
	}
	hl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("listen for HTTP: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/ws", serveWS)
	mux.HandleFunc("/events", serveSSE)
	mux.HandleFunc("GET /__bench/stats", serveStats)
	hs := &http.Server{Handler: mux}

	errc := make(chan error, 2)
	go func() { errc <- gs.Serve(gl) }()
	go func() { errc <- hs.Serve(hl) }()
	fmt.Printf("http=%s grpc=%s\n", hl.Addr(), gl.Addr())

	select {
	case <-ctx.Done():
		err = nil
	case err = <-errc:
	}
	gs.Stop()
	_ = hs.Close()
	for range 2 - len(errc) {
		<-errc
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// What the server saw, for GET /__bench/stats.
var wsMessages, grpcCalls atomic.Int64

// serveStats answers {"ws_messages":N,"grpc_calls":N}: the WebSocket
// messages read and the gRPC calls answered since the start.
func serveStats(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = fmt.Fprintf(w, "{\"ws_messages\":%d,\"grpc_calls\":%d}\n", wsMessages.Load(), grpcCalls.Load())
}

// serveWS reads every message of a session and never replies.
func serveWS(w http.ResponseWriter, r *http.Request) {
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	defer func() { _ = c.CloseNow() }()
	c.SetReadLimit(1 << 20)
	for {
		if _, _, err := c.Read(r.Context()); err != nil {
			return
		}
		wsMessages.Add(1)
	}
}

var event = []byte("event: tick\ndata: {\"n\":1}\n\n")

// serveSSE writes events, flushing each, until the client goes away.
func serveSSE(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	f, _ := w.(http.Flusher)
	for r.Context().Err() == nil {
		if _, err := w.Write(event); err != nil {
			return
		}
		if f != nil {
			f.Flush()
		}
	}
}

// greeter builds the service description of greeter.proto's Greeter.
func greeter(ctx context.Context) (*grpc.ServiceDesc, error) {
	c := protocompile.Compiler{Resolver: &protocompile.SourceResolver{
		Accessor: protocompile.SourceAccessorFromMap(map[string]string{"greeter.proto": greeterProto})}}
	files, err := c.Compile(ctx, "greeter.proto")
	if err != nil {
		return nil, fmt.Errorf("compile greeter.proto: %w", err)
	}
	sd := files[0].Services().ByName("Greeter")
	hello := sd.Methods().ByName("SayHello")
	in, out := hello.Input(), hello.Output()
	msg := out.Fields().ByName("message")
	return &grpc.ServiceDesc{
		ServiceName: string(sd.FullName()),
		HandlerType: (*any)(nil),
		Methods: []grpc.MethodDesc{{MethodName: "SayHello", Handler: func(_ any, _ context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
			if err := dec(dynamicpb.NewMessage(in)); err != nil {
				return nil, err
			}
			grpcCalls.Add(1)
			m := dynamicpb.NewMessage(out)
			m.Set(msg, protoreflect.ValueOfString("hello"))
			return m, nil
		}}},
	}, nil
}
