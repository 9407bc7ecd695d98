// Package loadtarget owns the real servers that load tests aim at: an HTTP
// server, a WebSocket server, a Server-Sent Events server and an OAuth2
// token endpoint, each on 127.0.0.1, started by a test and stopped by its
// cleanup. Each records what it received (messages, headers, requests) so
// tests judge a driver by what the server saw, not by what the driver says
// it sent. The gRPC servers (the Greeter and the OTLP receiver) are in
// ./grpctarget. It is for tests only; nothing in the product imports it.
package loadtarget
