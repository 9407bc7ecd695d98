package spec

import (
	"errors"
	"fmt"
	"strconv"
)

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
	s := e.Source
	if e.Line > 0 {
		s += ":" + strconv.Itoa(e.Line)
		if e.Column > 0 {
			s += ":" + strconv.Itoa(e.Column)
		}
	}
	if s != "" {
		s += ": "
	}
	if e.Key != "" {
		s += e.Key + ": "
	}
	return s + e.Msg
}

// errorList collects errors up to a limit, so one broken file does not
// produce a wall of text.
type errorList struct {
	errs    []error
	dropped int
}

const maxErrors = 20

func (l *errorList) add(e *Error) {
	if len(l.errs) >= maxErrors {
		l.dropped++
		return
	}
	l.errs = append(l.errs, e)
}

func (l *errorList) err() error {
	if len(l.errs) == 0 {
		return nil
	}
	errs := l.errs
	if l.dropped > 0 {
		errs = append(errs[:len(errs):len(errs)], fmt.Errorf("and %d more problems", l.dropped))
	}
	return join(errs)
}

// join is errors.Join, except that a single error is returned as is so
// callers can type-assert it.
func join(errs []error) error {
	if len(errs) == 1 {
		return errs[0]
	}
	return errors.Join(errs...)
}
