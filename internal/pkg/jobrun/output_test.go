package jobrun

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// gatedWriter blocks its first Write until open is closed.
type gatedWriter struct {
	open   chan struct{}
	waited bool
	buf    bytes.Buffer
}

func (g *gatedWriter) Write(p []byte) (int, error) {
	if !g.waited {
		<-g.open
		g.waited = true
	}
	return g.buf.Write(p)
}

// TestOutputPipesReadAllTheStepWrote: output the step wrote before it
// exited is read in full even when handling it takes longer than the
// drain bound after the exit (masking 10,000 ::add-mask:: lines on a busy
// machine), while the bound still ends the reading of a background child
// that never goes quiet.
func TestOutputPipesReadAllTheStepWrote(t *testing.T) {
	t.Parallel()
	out := &gatedWriter{open: make(chan struct{})}
	var errOut bytes.Buffer
	p, err := newOutputPipes(out, &errOut)
	if err != nil {
		t.Fatal(err)
	}
	p.idle, p.most = 50*time.Millisecond, 200*time.Millisecond // long enough for a starved reader to take the line already in the pipe
	const size = 60 << 10                                      // fits in the pipe: the step exits at once
	// The background child touches wrote once its first line is in the
	// pipe, so that the line is there when the exit is handled (once only:
	// touching it in the loop raced with the removal of the test's
	// directory).
	wrote := filepath.Join(t.TempDir(), "wrote")
	cmd := exec.Command("sh", "-c", "head -c 61440 /dev/zero | tr '\\0' x; (echo bg >&2; touch "+wrote+"; while :; do echo bg >&2; sleep 0.01; done) &")
	cmd.Stdout, cmd.Stderr = p.w[0], p.w[1]
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p.start()
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if _, err := os.Stat(wrote); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the background child wrote nothing within 10 s")
		}
	}
	p.exited()
	time.Sleep(2 * p.most) // the handling of the output outlasts the bound
	close(out.open)
	p.wait() // returns although the background child still writes
	if got := out.buf.String(); len(got) != size || strings.Trim(got, "x") != "" {
		t.Fatalf("read %d of the %d bytes the step wrote", len(got), size)
	}
	if !strings.Contains(errOut.String(), "bg") {
		t.Fatalf("stderr = %q, want the background child's first lines", errOut.String())
	}
}
