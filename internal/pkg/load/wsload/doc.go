// Package wsload is the WebSocket driver of the load engine: a
// [load.Requester] whose one request is one WebSocket session. A
// session takes a connection from the driver's pool (dialling one, through
// the runner's dial control, when the pool is empty; a redirect of the
// handshake is followed only past the runner's redirect check), sends the configured
// messages at the configured interval, optionally waits for a reply to each
// (its round trip is measured) or collects replies until a receive timeout,
// and returns the connection to the pool. Beside the engine's per-session
// latency it measures connect time, message round trips, messages and bytes
// in each direction, and the close codes the server sent.
package wsload
