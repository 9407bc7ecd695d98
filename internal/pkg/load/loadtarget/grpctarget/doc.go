// Package grpctarget owns the load tests' real gRPC servers: the Greeter of
// greeter.proto (registered by hand with dynamic messages, over plain TCP or
// TLS with a self-signed certificate) and [OTLP], an OpenTelemetry trace
// receiver over HTTP and gRPC. Each listens on 127.0.0.1, is started by a
// test and stopped by its cleanup, and records what it received, so tests
// judge a driver or exporter by what the server saw. They are apart from
// package loadtarget's HTTP, WebSocket, SSE and OAuth2 servers because
// gRPC and the run-time proto compiler roughly double a race-built test
// binary, and the link of every test binary is paid on every run of the
// suite. For tests only; nothing in the product imports it.
package grpctarget
