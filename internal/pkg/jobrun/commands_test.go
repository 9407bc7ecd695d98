package jobrun

import (
	"strings"
	"testing"
)

// recordWriter keeps every Write as it came.
type recordWriter struct{ writes []string }

// TestLineWriterLongLines: a long text line reaches out in pieces without
// a newline (out cuts it), while a workflow command longer than
// maxCommandLine is dropped with an error, and an ::add-mask:: that long
// fails the step.
func TestLineWriterLongLines(t *testing.T) {
	t.Parallel()
	out := &recordWriter{}
	cmds := newCommands(&recordSink{}, false)
	w := newLineWriter(out, cmds)
	text := strings.Repeat("x", 3*maxTextHold)
	for i := 0; i < len(text); i += 32 << 10 {
		w.Write([]byte(text[i : i+32<<10]))
	}
	w.Write([]byte("end\nnext\n"))
	got := strings.Join(out.writes, "")
	if got != text+"end\nnext\n" {
		t.Fatalf("out got %d bytes, want the line and the next", len(got))
	}
	for _, p := range out.writes[:len(out.writes)-2] {
		if strings.Contains(p, "\n") {
			t.Fatalf("a piece of the long line ended a row early")
		}
	}

	out.writes = nil
	secret := strings.Repeat("s", maxCommandLine)
	w.Write([]byte("::add-mask::" + secret[:maxCommandLine/2]))
	w.Write([]byte(secret[maxCommandLine/2:] + "\nafter\n"))
	got = strings.Join(out.writes, "")
	if strings.Contains(got, "sss") || !strings.Contains(got, "::error::::add-mask:: refused") || !strings.HasSuffix(got, "after\n") {
		t.Fatalf("out = %.200q", got)
	}
	if cmds.MaskErr() == nil {
		t.Fatal("an over-long ::add-mask:: did not fail the step")
	}
}

func (r *recordWriter) Write(p []byte) (int, error) {
	r.writes = append(r.writes, string(p))
	return len(p), nil
}
