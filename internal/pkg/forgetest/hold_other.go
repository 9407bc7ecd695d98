//go:build !linux

package forgetest

import "io"

// holdPort does not hold the port outside Linux: an outage only closes the
// listener.
func holdPort(string) (io.Closer, error) { return nil, nil }
