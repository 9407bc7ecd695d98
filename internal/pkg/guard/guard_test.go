package guard

import (
	"errors"
	"io"
	"strings"
	"testing"
)

func TestRunTurnsPanicIntoError(t *testing.T) {
	t.Parallel()
	done := make(chan error)
	go func() {
		done <- Run(func() error {
			i := func() int { return 3 }()
			_ = []int{1}[i] // a real runtime panic
			return nil
		})
	}()
	err := <-done
	var pe *PanicError
	if !errors.As(err, &pe) {
		t.Fatalf("Run(panicking fn) = %v, want a *PanicError", err)
	}
	if !strings.Contains(pe.Error(), "index out of range [3] with length 1") || !strings.Contains(string(pe.Stack), "guard_test.go") {
		t.Fatalf("PanicError = %q with stack\n%s\nwant the panic value and the panicking frame", pe.Error(), pe.Stack)
	}
	if err := Run(func() error { return io.EOF }); err != io.EOF {
		t.Fatalf("Run(fn returning EOF) = %v, want EOF", err)
	}
	if err := Run(func() error { panic(io.ErrUnexpectedEOF) }); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("Run(panic(err)) = %v, want errors.Is the panic value", err)
	}
}

func TestRecoverLeavesErrorWithoutPanic(t *testing.T) {
	t.Parallel()
	f := func() (err error) {
		defer Recover(&err)
		return io.EOF
	}
	if err := f(); err != io.EOF {
		t.Fatalf("f() = %v, want EOF", err)
	}
}
