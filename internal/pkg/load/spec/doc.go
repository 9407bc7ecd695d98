// Package spec owns the load-test config: the YAML or JSON file a user
// writes for `forgeload load -f` or a `forgeload/load@v1` step, and the
// inline `with:` keys or CLI flags that override it. The format is a
// superset of Crankfire's, so Crankfire files parse unchanged; forgeload adds
// the closed model (`vus`, `think_time`), `seed` and the `distributed` block,
// and runs endpoints that set their own `protocol` (a mixed-protocol run,
// [Config.Mixed]) where Crankfire's binary ignores the key.
//
// # Use
//
// Most callers want [Load] (a file, with relative paths resolved), then
// [Config.Override] with the inline keys, then [Config.Validate]. [Parse]
// does the same as Load for bytes already in memory.
//
// # Strictness
//
// Keys are matched without regard to case, '_' or '-' (so Crankfire's
// body_file, bodyFile and body-file are one key), but a key that is not
// known is an error naming it, its file:line, the keys known at that level
// and the closest match. Every bad value is reported with its file:line,
// what was given and what is expected. Errors are [*Error] values, joined,
// worded by the strict-YAML layer the daemon config and workflow parsers
// share (package strictyaml).
//
// # Units
//
// Durations accept Go syntax (1m30s, 250ms) or a plain number of seconds, as
// Crankfire does. Rates are requests per second and may be fractional.
//
// The package has no global state; a [Config] is a plain value that is not
// safe for concurrent mutation.
package spec
