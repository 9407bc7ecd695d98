package spec

import "github.com/forgeload/forgeload/internal/pkg/strictyaml"

// Error is one problem with a config: where it is, which key, and what is
// wrong and how to fix it. [Parse], [Load], [Config.Override] and
// [Config.Validate] return one Error, or several joined with errors.Join;
// use errors.As to find them.
type Error struct {
	// Source names the config, e.g. "perf/api.yaml", or is "inline" for
	// keys set by [Config.Override].
	Source string
	// Line is the 1-based line in Source, or 0 when not known.
	Line int
	// Column is the 1-based column, or 0 when not known.
	Column int
	// Key is the key path, e.g. "rate" or "endpoints[1].weight", or empty
	// when the problem is not with one key.
	Key string
	// Msg says what is wrong and what is expected.
	Msg string
}

// Error formats e as "source:line: key: msg", leaving out parts that are
// not known.
func (e *Error) Error() string {
	return (&strictyaml.Error{File: e.Source, Line: e.Line, Column: e.Column, Path: e.Key, Msg: e.Msg}).Error()
}
