//go:build !linux

package load

import "time"

// threadCPU is not read outside Linux: the generator's CPU is then never
// deemed behind.
func threadCPU() (tid int, run, wait, at time.Duration, ok bool) { return 0, 0, 0, 0, false }
