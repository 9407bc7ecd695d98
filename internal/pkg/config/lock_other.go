//go:build !unix

package config

import "fmt"

// LockRegistration is not supported on this platform: it always fails.
func LockRegistration(path string) (unlock func() error, err error) {
	return nil, fmt.Errorf("lock registration %q: file locking is only supported on unix systems", path)
}
