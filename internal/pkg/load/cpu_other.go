//go:build !unix

package load

import "time"

// processCPU is 0 where the CPU time is not read: the generator's CPU is
// then never deemed busy.
func processCPU() time.Duration { return 0 }
