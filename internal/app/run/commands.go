package run

import (
	"bytes"
	"io"
	"strings"
	"sync"
)

// commandSink receives what workflow commands in step output ask for.
type commandSink interface {
	AddMask(v string)
	SetOutput(name, value string) // the deprecated ::set-output::
}

// lineWriter splits step output into lines, acts on workflow commands and
// writes the lines that should be shown to out, one Write per line with the
// newline. A partial line is held until its newline or Flush, so a secret
// split across two writes is masked whole by out. It is safe for concurrent
// use (stdout and stderr share one).
type lineWriter struct {
	mu      sync.Mutex
	out     io.Writer
	sink    commandSink
	debug   bool   // show ::debug:: lines (ACTIONS_STEP_DEBUG)
	stopTok string // non-empty while ::stop-commands:: is in force
	buf     []byte
}

func newLineWriter(out io.Writer, sink commandSink, debug bool) *lineWriter {
	return &lineWriter{out: out, sink: sink, debug: debug}
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		line := strings.TrimSuffix(string(w.buf[:i]), "\r")
		w.buf = w.buf[i+1:]
		if err := w.line(line); err != nil {
			return len(p), err
		}
	}
	// Bound a runaway partial line: emit it as a row of its own.
	if len(w.buf) > 64*1024 {
		line := string(w.buf)
		w.buf = w.buf[:0]
		return len(p), w.line(line)
	}
	return len(p), nil
}

// Flush emits a held partial line.
func (w *lineWriter) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) == 0 {
		return nil
	}
	line := string(w.buf)
	w.buf = w.buf[:0]
	return w.line(line)
}

func (w *lineWriter) emit(s string) error {
	_, err := io.WriteString(w.out, s+"\n")
	return err
}

// line handles one complete line.
func (w *lineWriter) line(l string) error {
	cmd, props, msg, ok := parseCommand(l)
	if !ok {
		return w.emit(l)
	}
	if w.stopTok != "" {
		if cmd == w.stopTok {
			w.stopTok = ""
			return nil
		}
		return w.emit(l)
	}
	switch cmd {
	case "add-mask":
		// Register the mask first so the echo of it is masked too.
		w.sink.AddMask(strings.TrimSpace(msg))
		return nil
	case "debug":
		if w.debug {
			return w.emit("::debug::" + msg)
		}
		return nil
	case "error", "warning", "notice":
		return w.emit("::" + cmd + "::" + annotate(props, msg))
	case "group", "endgroup":
		return w.emit(l)
	case "set-output":
		w.sink.SetOutput(props["name"], msg)
		return nil
	case "stop-commands":
		w.stopTok = msg
		return nil
	case "echo", "save-state", "add-matcher", "remove-matcher", "add-path", "set-env":
		// Accepted and ignored, as GitHub ignores the disabled ones.
		return nil
	}
	return w.emit(l)
}

// annotate renders file=,line=,col=,title= properties in front of the
// message the way the forge UI shows them: file:line:col: title: msg.
func annotate(props map[string]string, msg string) string {
	var b strings.Builder
	if f := props["file"]; f != "" {
		b.WriteString(f)
		if l := props["line"]; l != "" {
			b.WriteString(":" + l)
			if c := props["col"]; c != "" {
				b.WriteString(":" + c)
			}
		}
		b.WriteString(": ")
	}
	if t := props["title"]; t != "" {
		b.WriteString(t + ": ")
	}
	b.WriteString(msg)
	return b.String()
}

// parseCommand recognises "::name prop=v,prop=v::message".
func parseCommand(l string) (cmd string, props map[string]string, msg string, ok bool) {
	t := strings.TrimLeft(l, " \t")
	if !strings.HasPrefix(t, "::") {
		return "", nil, "", false
	}
	rest := t[2:]
	end := strings.Index(rest, "::")
	if end < 0 {
		return "", nil, "", false
	}
	head, msg := rest[:end], rest[end+2:]
	cmd, propText, _ := strings.Cut(head, " ")
	if cmd == "" || strings.ContainsAny(cmd, " \t") {
		return "", nil, "", false
	}
	props = map[string]string{}
	if propText != "" {
		for _, kv := range strings.Split(propText, ",") {
			k, v, _ := strings.Cut(kv, "=")
			props[strings.TrimSpace(k)] = unescapeProp(v)
		}
	}
	return cmd, props, unescapeData(msg), true
}

func unescapeData(s string) string {
	return strings.NewReplacer("%0D", "\r", "%0A", "\n", "%25", "%").Replace(s)
}

func unescapeProp(s string) string {
	return strings.NewReplacer("%0D", "\r", "%0A", "\n", "%3A", ":", "%2C", ",", "%25", "%").Replace(s)
}
