package jobrun

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/forgeload/forgeload/internal/pkg/guard"
	"github.com/forgeload/forgeload/internal/pkg/report"
)

type panicWriter struct{ n int }

func (w *panicWriter) Write(p []byte) (int, error) {
	if w.n++; w.n == 2 {
		panic("masker bug")
	}
	return len(p), nil
}

// TestGuardedWriterTrapsPanic: the writer os/exec's copier goroutine calls
// turns a panic into an error, and fails every later write with it.
func TestGuardedWriterTrapsPanic(t *testing.T) {
	t.Parallel()
	g := &guardedWriter{w: &panicWriter{}}
	if n, err := g.Write([]byte("a\n")); n != 2 || err != nil {
		t.Fatalf("first Write = %d, %v", n, err)
	}
	_, err := g.Write([]byte("b\n"))
	var pe *guard.PanicError
	if !errors.As(err, &pe) || pe.Value != "masker bug" || g.panicked() != pe {
		t.Fatalf("second Write = %v, want the recovered panic", err)
	}
	if _, err := g.Write([]byte("c\n")); !errors.Is(err, pe) && err != pe {
		t.Fatalf("Write after the panic = %v, want the panic again", err)
	}
}

// TestRunShellSurvivesCopierPanic runs a real process whose output goes
// through a writer that panics in the copier goroutine: the step fails with
// the panic, and the test process (the daemon) lives on.
func TestRunShellSurvivesCopierPanic(t *testing.T) {
	t.Parallel()
	cfg := Config{}.WithDefaults()
	j := &job{deps: &cfg, rep: report.New(nil, 1, 0, report.Options{})}
	cmds := newCommands(&stepOutput{j: j, outputs: map[string]string{}}, false)
	lw := newLineWriter(&panicWriter{}, cmds)
	err := j.runProcess(context.Background(), []string{"sh", "-c", "echo one; echo two; echo three"}, nil, t.TempDir(), lw, newLineWriter(io.Discard, cmds))
	var pe *guard.PanicError
	if !errors.As(err, &pe) || pe.Value != "masker bug" {
		t.Fatalf("runProcess with a panicking writer = %v, want the recovered panic", err)
	}
}
