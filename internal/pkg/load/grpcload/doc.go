// Package grpcload is the gRPC driver of the load engine: a
// [load.Requester] whose one request is one gRPC call. The service is
// described by a .proto file compiled when the run starts (no generated
// code): the request is the configured JSON turned into the method's input
// message once, and sent as its encoded bytes on every call, with the
// configured metadata, over plaintext or TLS connections dialled through the
// runner's dial control. Unary and server-streaming methods are supported;
// a call's gRPC status code is its error class (grpc_unavailable, …).
package grpcload
