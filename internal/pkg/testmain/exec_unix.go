//go:build unix

package testmain

import "syscall"

// reexec replaces this process's image with exe: the same process id, open
// files and standard streams, so that `go test` reads the tests' output and
// exit status as before.
func reexec(exe string, args, env []string) error { return syscall.Exec(exe, args, env) }
