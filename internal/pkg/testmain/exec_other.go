//go:build !unix

package testmain

import "errors"

func reexec(string, []string, []string) error { return errors.New("not supported on this system") }
