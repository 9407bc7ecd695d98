//go:build faults

package guard

import (
	"strings"
	"sync"
)

// Faults reports whether fault injection is compiled in ("faults" tag).
const Faults = true

var fired sync.Map // point → struct{}: each point panics once per process

// Fault panics, once per point per process, when data contains
// "forgeload-fault-panic:<point>". Tests build the binary with -tags
// faults and put that text into a job to make a goroutine the job starts
// panic at that point.
func Fault(point, data string) {
	if !strings.Contains(data, "forgeload-fault-panic:"+point) {
		return
	}
	if _, done := fired.LoadOrStore(point, struct{}{}); done {
		return
	}
	panic("injected fault at " + point)
}
