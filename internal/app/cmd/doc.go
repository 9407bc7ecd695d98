// Package cmd holds forgeload's cobra commands (register, daemon, exec, load,
// config generate, version) and is the one place where the concrete types of
// internal/pkg meet: it loads config, builds the forge client, the metrics
// registry, the poller and the task runner, and maps failures to exit codes.
package cmd
