// Package sseload is the Server-Sent Events driver of the load engine: a
// [load.Requester] whose one request is one session of up to
// MaxEvents events, with Crankfire's meaning. A session reads on from a
// stream an earlier session with the same request left open at an event
// boundary, or opens one with a GET (through the runner's dial control;
// a redirect is not followed, its 3xx fails the session),
// and reads events until it has MaxEvents (the stream is then kept for the
// next session), the server ends the stream, or the read timeout passes
// (the stream is then closed). Beside the engine's per-session latency it
// measures the time to a stream's first event, the gaps between events,
// the streams opened, and the events and bytes received.
package sseload
