//go:build !faults

package guard

// Faults reports whether fault injection is compiled in ("faults" tag).
const Faults = false

// Fault does nothing in a normal build; see fault_on.go.
func Fault(point, data string) {}
