package guard

import (
	"fmt"
	"runtime/debug"
)

// PanicError is a recovered panic: the value passed to panic and the stack
// of the goroutine that panicked.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("internal error (a panic: %v)", e.Value)
}

// Unwrap returns the panic value when it is an error, so errors.Is and
// errors.As see through a panic(err).
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// Recover, deferred directly (defer guard.Recover(&err)), stops a panic in
// the deferring function and stores it in *errp as a *PanicError. Without
// a panic it leaves *errp alone.
func Recover(errp *error) {
	if v := recover(); v != nil {
		*errp = &PanicError{Value: v, Stack: debug.Stack()}
	}
}

// Run calls fn and returns its error, or, if fn panics, the panic as a
// *PanicError. Use it as the body of a goroutine:
//
//	go func() { errc <- guard.Run(work) }()
func Run(fn func() error) (err error) {
	defer Recover(&err)
	return fn()
}
