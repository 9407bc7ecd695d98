// Package config owns the daemon's configuration and its registration file.
//
// # Config
//
// [Load] and [Parse] build a [Config] in four steps: the documented defaults
// ([Default]), then the YAML file, then FORGELOAD_<SECTION>_<KEY> environment
// overrides, then validation. Parsing is strict: an unknown key, a value of the
// wrong type or an out-of-range value fails with an error that names the file
// and line (or the environment variable), the full key path, the bad value and
// what is allowed, in the wording every YAML parser of forgeload shares
// (package strictyaml). config.example.yaml at the repository root documents every
// key; a test keeps it and [Default] in step.
//
// # Labels
//
// Runner labels have the form name[:schema[:arg]]; see [ParseLabel].
//
// # Registration
//
// The .runner file written by `forgeload register` is a [Registration]:
// JSON, mode 0600, written atomically by [SaveRegistration] and held by one
// daemon at a time through [LockRegistration].
package config
