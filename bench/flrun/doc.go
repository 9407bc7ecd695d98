// Command flrun drives forgeload's load engine (internal/pkg/load) directly,
// without the forgeload load command, so that bench/run.sh can measure the
// engine before and beside the command and profile it. It sends GET requests
// to one http:// target through either the engine's own driver
// (-client nethttp, internal/pkg/load/httpload over net/http) or a
// purpose-built HTTP/1.1 keep-alive client (-client raw) that exists only
// here, to measure how much of the generator's cost is net/http's. It writes
// the engine's JSON summary to -json and optional CPU and heap profiles.
package main
