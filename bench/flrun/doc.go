// Command flrun drives forgeload's load engine (internal/pkg/load) directly,
// without the forgeload load command, so that bench/run.sh can measure the
// engine beside the command and profile it. It sends GET requests to one
// http:// target through the engine's own driver, internal/pkg/load/httpload,
// either on its HTTP/1.1 fast path (-client h1, what forgeload load uses) or
// over net/http (-client nethttp), or through a purpose-built HTTP/1.1
// keep-alive client that exists only here (-client raw), to measure how much
// of the generator's cost is the HTTP client's. It writes the engine's JSON
// summary to -json and optional CPU and allocation profiles and an execution
// trace.
package main
