// Package cmd holds forgeload's cobra commands (register, daemon, exec, load,
// config generate, version) and is the one place where the concrete types of
// internal/pkg meet: it loads config, builds the forge client, the metrics
// registry, the poller and the task runner, and maps failures to exit codes.
// Each command is a small function over a type that does the work: [Daemon]
// (Run polls, Shutdown drains, cancels and releases), registration for
// register, localRun for exec; the command itself keeps only the flags and
// the signals.
package cmd
