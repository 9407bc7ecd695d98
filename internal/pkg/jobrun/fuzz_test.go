package jobrun

import (
	"strings"
	"testing"
)

// FuzzParseEnvData feeds arbitrary GITHUB_ENV/GITHUB_OUTPUT contents (a
// step's script writes them) to the parser: it must not panic, and every
// NAME=value line without a heredoc must come back as written.
func FuzzParseEnvData(f *testing.F) {
	for _, s := range []string{
		"A=1\nB=two words\n",
		"M<<EOF\nline1\nline2\nEOF\n",
		"M<<EOF\nunterminated\n",
		"=nokey\n",
		"X=a=b\r\n",
		"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data string) {
		m, err := parseEnvData("fuzz", []byte(data))
		if err != nil {
			return
		}
		for _, line := range strings.Split(data, "\n") {
			line = strings.TrimSuffix(line, "\r")
			if strings.Contains(line, "<<") || !strings.Contains(line, "=") || strings.HasPrefix(line, "=") {
				return // heredocs and odd lines make the simple check below unsound
			}
		}
		for _, line := range strings.Split(data, "\n") {
			line = strings.TrimSuffix(line, "\r")
			if strings.TrimSpace(line) == "" {
				continue
			}
			k, v, _ := strings.Cut(line, "=")
			if got, ok := m[k]; !ok || (got != v && !lastWins(data, k)) {
				t.Fatalf("parseEnvData(%q)[%q] = %q, %v; want %q", data, k, got, ok, v)
			}
		}
	})
}

// lastWins reports whether key is set more than once (the last value wins).
func lastWins(data, key string) bool {
	n := 0
	for _, line := range strings.Split(data, "\n") {
		if strings.HasPrefix(line, key+"=") {
			n++
		}
	}
	return n > 1
}

// FuzzWorkflowCommands feeds arbitrary step output to the workflow-command
// line writer: it must not panic, and a line it drops must be a command.
func FuzzWorkflowCommands(f *testing.F) {
	for _, s := range []string{
		"::add-mask::secret\nplain\n",
		"::error file=a.go,line=3,col=1,title=T::msg\n",
		"::stop-commands::tok\n::add-mask::x\n::tok::\n",
		"::set-output name=k::v\n",
		":: broken\n::\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, out string) {
		var sb strings.Builder
		sink := &recordSink{}
		w := newLineWriter(&sb, newCommands(sink, true))
		if _, err := w.Write([]byte(out)); err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		shown := strings.Count(sb.String(), "\n")
		lines := strings.Count(out, "\n")
		if !strings.HasSuffix(out, "\n") && out != "" {
			lines++
		}
		if shown > lines {
			t.Fatalf("%d lines in, %d shown", lines, shown)
		}
	})
}

type recordSink struct{ masks, outputs []string }

func (r *recordSink) AddMask(v string) error       { r.masks = append(r.masks, v); return nil }
func (r *recordSink) SetOutput(name, value string) { r.outputs = append(r.outputs, name+"="+value) }

// FuzzLineWriterText writes text that holds no workflow command, in
// pieces, through a line writer that holds at most a few bytes of an
// unfinished line: whether a line is held or passed on in pieces, out
// receives exactly the text, every line ended by its newline.
func FuzzLineWriterText(f *testing.F) {
	f.Add("short\nand a much longer line é€ than the hold\n", uint8(3), uint8(5))
	f.Add("no newline at the end, ::but not a command", uint8(1), uint8(1))
	f.Fuzz(func(t *testing.T, text string, chunk, hold uint8) {
		if strings.Contains(text, "::") || strings.Contains(text, "\r") {
			t.Skip("text only")
		}
		var sb strings.Builder
		w := newLineWriter(&sb, newCommands(&recordSink{}, false))
		w.hold = int(hold%16) + 1
		step := int(chunk%9) + 1
		for i := 0; i < len(text); i += step {
			if _, err := w.Write([]byte(text[i:min(i+step, len(text))])); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		want := text
		if text != "" && !strings.HasSuffix(text, "\n") {
			want += "\n"
		}
		if sb.String() != want {
			t.Fatalf("out = %q, want %q", sb.String(), want)
		}
	})
}
