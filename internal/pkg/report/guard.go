package report

import (
	"errors"

	"github.com/forgeload/forgeload/internal/pkg/guard"
)

// runLoop runs one of the Reporter's loops (name is "log" or "state"). A
// panic in it is logged with its stack and fails the job: the job context
// is cancelled, the final result is FAILURE, and Close still delivers the
// rows and the result on its own.
func (r *Reporter) runLoop(name string, loop func()) {
	err := guard.Run(func() error { loop(); return nil })
	var pe *guard.PanicError
	if !errors.As(err, &pe) {
		return
	}
	r.log.WithField("stack", string(pe.Stack)).Errorf("report: the %s loop panicked: %v; the job fails, the runner keeps serving", name, pe.Value)
	r.mu.Lock()
	r.loopPanic = true
	cancel := r.jobCancel
	r.mu.Unlock()
	r.Logf(-1, "::error::forgeload hit an internal error reporting this job (%v); the job fails, the runner keeps serving. Please report it.", pe)
	if cancel != nil {
		cancel()
	}
}
