package jobrun

import (
	"errors"
	"io"
	"sync"

	"github.com/forgeload/forgeload/internal/pkg/guard"
)

// guardedWriter is the step output writer os/exec's copier goroutines call:
// a panic in w.Write is recovered and kept, and every later Write fails
// with it, so the copier stops (closing the pipe) and the step fails.
type guardedWriter struct {
	w   io.Writer
	mu  sync.Mutex
	err *guard.PanicError
}

func (g *guardedWriter) Write(p []byte) (n int, err error) {
	if pe := g.panicked(); pe != nil {
		return 0, pe
	}
	defer func() {
		var pe *guard.PanicError
		if errors.As(err, &pe) {
			g.mu.Lock()
			if g.err == nil {
				g.err = pe
			}
			g.mu.Unlock()
			n = 0
		}
	}()
	defer guard.Recover(&err)
	return g.w.Write(p)
}

// panicked returns the first recovered panic, or nil.
func (g *guardedWriter) panicked() *guard.PanicError {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.err
}
