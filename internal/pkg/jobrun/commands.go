package jobrun

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/forgeload/forgeload/internal/pkg/guard"
)

// commandSink receives what workflow commands in step output ask for.
type commandSink interface {
	// AddMask masks v from now on; an error means v is not masked.
	AddMask(v string) error
	SetOutput(name, value string) // the deprecated ::set-output::
}

const (
	// maxTextHold is the longest unfinished line held before its bytes are
	// passed on as they come: out (the reporter) masks and cuts long lines
	// itself, without cutting a secret or a character.
	maxTextHold = 64 << 10
	// maxCommandLine is the longest workflow-command line acted on; a
	// longer one is dropped with an error row (an ::add-mask:: that long
	// masks nothing).
	maxCommandLine = 1 << 20
)

// commands is the workflow-command state of one step, shared by the line
// writers of its stdout and stderr.
type commands struct {
	mu      sync.Mutex
	sink    commandSink
	debug   bool   // show ::debug:: lines (ACTIONS_STEP_DEBUG)
	stopTok string // non-empty while ::stop-commands:: is in force
	maskErr error  // the first ::add-mask:: that masked nothing
}

func newCommands(sink commandSink, debug bool) *commands {
	return &commands{sink: sink, debug: debug}
}

// lineWriter splits one output stream of a step into lines, acts on
// workflow commands (through the step's shared commands) and writes the
// lines that should be shown to out, one Write per line with the newline.
// A partial line is held until its newline or Flush, so a secret split
// across two writes is masked whole by out; each stream has its own
// lineWriter (and out), so stderr output cannot split a line of stdout. A
// line longer than maxTextHold that is not a workflow command is passed to
// out in pieces without a newline until it ends: out cuts it. It is safe
// for concurrent use.
type lineWriter struct {
	mu   sync.Mutex
	cmds *commands
	out  io.Writer
	buf  []byte
	// passing: the current line is long text whose bytes go straight to
	// out; dropping: it is a workflow command over maxCommandLine.
	passing, dropping bool
	hold              int // maxTextHold, smaller in tests
}

func newLineWriter(out io.Writer, cmds *commands) *lineWriter {
	return &lineWriter{out: out, cmds: cmds, hold: maxTextHold}
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if w.passing || w.dropping {
			end := len(p)
			if i >= 0 {
				end = i + 1
			}
			if w.passing {
				if _, err := w.out.Write(p[:end]); err != nil {
					return n, err
				}
			}
			p = p[end:]
			if i >= 0 {
				w.passing, w.dropping = false, false
			}
			continue
		}
		if i < 0 {
			w.buf = append(w.buf, p...)
			break
		}
		w.buf = append(w.buf, p[:i]...)
		p = p[i+1:]
		if len(w.buf) > maxCommandLine && w.isCommand(w.buf) {
			if err := w.dropCommand(); err != nil {
				return n, err
			}
			continue
		}
		line := strings.TrimSuffix(string(w.buf), "\r")
		w.buf = w.buf[:0]
		if err := w.line(line); err != nil {
			return n, err
		}
	}
	return n, w.bound()
}

// bound keeps the held partial line within maxTextHold (text) or
// maxCommandLine (a workflow command).
func (w *lineWriter) bound() error {
	if len(w.buf) <= w.hold {
		return nil
	}
	if w.isCommand(w.buf) {
		if len(w.buf) <= maxCommandLine {
			return nil
		}
		w.dropping = true
		return w.dropCommand()
	}
	w.passing = true
	_, err := w.out.Write(w.buf)
	w.buf = w.buf[:0]
	return err
}

// dropCommand drops the held workflow-command line, longer than
// maxCommandLine, with an error row; an ::add-mask:: fails the step.
func (w *lineWriter) dropCommand() error {
	head := bytes.TrimLeft(w.buf, " \t")[2:]
	name := string(head[:bytes.IndexAny(head, " :")])
	w.buf = w.buf[:0]
	err := fmt.Errorf("workflow command ::%.40s:: ignored: its line is longer than %d bytes", name, maxCommandLine)
	if name == "add-mask" {
		err = fmt.Errorf("::add-mask:: refused: its line is longer than %d bytes, so the value is NOT masked", maxCommandLine)
		w.cmds.mu.Lock()
		w.cmds.maskRefused(err)
		w.cmds.mu.Unlock()
	}
	return w.emit("::error::" + err.Error())
}

// isCommand reports whether the partial line b will be acted on as a
// workflow command when it ends (rather than shown).
func (w *lineWriter) isCommand(b []byte) bool {
	t := bytes.TrimLeft(b, " \t")
	if !bytes.HasPrefix(t, []byte("::")) || !bytes.Contains(t[2:], []byte("::")) {
		return false
	}
	w.cmds.mu.Lock()
	defer w.cmds.mu.Unlock()
	if w.cmds.stopTok != "" {
		return bytes.HasPrefix(t[2:], []byte(w.cmds.stopTok+"::"))
	}
	return true
}

// Flush emits a held partial line.
func (w *lineWriter) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.passing {
		w.passing = false
		return w.emit("")
	}
	w.dropping = false
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

// maskRefused records that an ::add-mask:: masked nothing. c.mu must be
// held.
func (c *commands) maskRefused(err error) {
	if c.maskErr == nil {
		c.maskErr = err
	}
}

// MaskErr returns the first ::add-mask:: refusal of the step, or nil: a
// value the job asked to hide is not hidden, so the step fails.
func (c *commands) MaskErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.maskErr
}

// line handles one complete line.
func (w *lineWriter) line(l string) error {
	guard.Fault("copier", l)
	cmd, props, msg, ok := parseCommand(l)
	if !ok {
		return w.emit(l)
	}
	c := w.cmds
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopTok != "" {
		if cmd == c.stopTok {
			c.stopTok = ""
			return nil
		}
		return w.emit(l)
	}
	switch cmd {
	case "add-mask":
		// Register the mask first so the echo of it is masked too.
		if err := c.sink.AddMask(strings.TrimSpace(msg)); err != nil {
			c.maskRefused(err)
			return w.emit("::error::" + err.Error())
		}
		return nil
	case "debug":
		if c.debug {
			return w.emit("::debug::" + msg)
		}
		return nil
	case "error", "warning", "notice":
		return w.emit("::" + cmd + "::" + annotate(props, msg))
	case "group", "endgroup":
		return w.emit(l)
	case "set-output":
		c.sink.SetOutput(props["name"], msg)
		return nil
	case "stop-commands":
		c.stopTok = msg
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
