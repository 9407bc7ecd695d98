// Package loadtarget owns the real servers that load tests aim at: a
// WebSocket server, a Server-Sent Events server and a gRPC server (the
// Greeter of greeter.proto, registered by hand with dynamic messages), each
// on 127.0.0.1, started by a test and stopped by its cleanup. Each records
// what it received (messages, headers, metadata, decoded requests) so tests
// judge a driver by what the server saw, not by what the driver says it
// sent. [OTLP] is an OpenTelemetry trace receiver (HTTP and gRPC). It is
// for tests only; nothing in the product imports it.
package loadtarget
