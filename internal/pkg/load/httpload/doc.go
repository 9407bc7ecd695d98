// Package httpload is the HTTP driver of the load engine: a
// [load.Requester] that sends weighted requests to one or more
// endpoints over a tuned keep-alive transport (HTTP/1.1, HTTP/2 over TLS via
// ALPN, and optionally cleartext h2c), with per-request timeouts, and
// reports each request's endpoint, status, bytes and error class to the
// engine's recorder. Plain http:// targets go through the package's own
// allocation-free HTTP/1.1 client; https:// and h2c go through net/http.
// The runner enforces its target policy through
// [Options.DialControl], which runs on the resolved address of every
// connection, so DNS rebinding cannot get around it. It follows no
// redirect: a 3xx is the response.
package httpload
