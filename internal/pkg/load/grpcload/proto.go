package grpcload

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/bufbuild/protocompile"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// LoadMethodFrom compiles the .proto file at path and returns the method
// named method of the service named service. The service may be given by
// its full name (helloworld.Greeter) or its simple name (Greeter). Every
// file (the .proto and its imports, as paths beside it; Google's
// well-known types are built in) is read by read, so the caller confines
// and bounds what is read, e.g. to a job's workspace.
func LoadMethodFrom(ctx context.Context, path string, read func(path string) ([]byte, error), service, method string) (protoreflect.MethodDescriptor, error) {
	dir := filepath.Dir(path)
	open := func(name string) (io.ReadCloser, error) {
		data, err := read(filepath.Join(dir, filepath.FromSlash(name)))
		if err != nil {
			return nil, err
		}
		return io.NopCloser(bytes.NewReader(data)), nil
	}
	return compileMethod(ctx, filepath.Base(path), open, service, method)
}

func compileMethod(ctx context.Context, name string, open func(string) (io.ReadCloser, error), service, method string) (protoreflect.MethodDescriptor, error) {
	c := protocompile.Compiler{Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{Accessor: open})}
	files, err := c.Compile(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("grpc proto_file %s: %w: fix the .proto (it must compile with protoc)", name, err)
	}
	var known []string
	for _, f := range files {
		svcs := f.Services()
		for i := range svcs.Len() {
			sd := svcs.Get(i)
			if string(sd.FullName()) != service && string(sd.Name()) != service {
				known = append(known, string(sd.FullName()))
				continue
			}
			if md := sd.Methods().ByName(protoreflect.Name(method)); md != nil {
				return md, nil
			}
			var ms []string
			for j := range sd.Methods().Len() {
				ms = append(ms, string(sd.Methods().Get(j).Name()))
			}
			return nil, fmt.Errorf("grpc method %q is not in service %s (it has: %s): fix grpc.method", method, sd.FullName(), strings.Join(ms, ", "))
		}
	}
	if len(known) == 0 {
		return nil, fmt.Errorf("grpc proto_file %s defines no service: point grpc.proto_file at the file with the service", name)
	}
	return nil, fmt.Errorf("grpc service %q is not in %s (it has: %s): fix grpc.service", service, name, strings.Join(known, ", "))
}
