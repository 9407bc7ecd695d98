package jobrun

import (
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

const (
	// drainIdle is how long a step's output may stay silent, once its
	// process has exited, before forgeload stops reading it: a background
	// child the step left holds the pipes open.
	drainIdle = time.Second
	// drainMax bounds how long output beyond what was in the pipes at the
	// exit is read, however busy a background child keeps it.
	drainMax = 10 * time.Second
)

// outputPipes carry a step's stdout and stderr to their line writers. The
// copying is forgeload's own rather than os/exec's, so that the output the
// step wrote before it exited is always read in full, however long the
// masking of it takes: what the pipes held at the exit is read whatever
// the time; after it, silence (drainIdle) or drainMax since the exit ends
// the reading.
type outputPipes struct {
	r, w     [2]*os.File
	dst      [2]io.Writer
	exitedAt atomic.Int64    // unix nanoseconds; 0 while the process runs
	left     [2]atomic.Int64 // bytes the pipes held at the exit, not read yet
	wg       sync.WaitGroup

	idle, most time.Duration // drainIdle and drainMax, shorter in tests
}

func newOutputPipes(stdout, stderr io.Writer) (*outputPipes, error) {
	p := &outputPipes{dst: [2]io.Writer{stdout, stderr}, idle: drainIdle, most: drainMax}
	for i := range p.r {
		r, w, err := os.Pipe()
		if err != nil {
			p.close()
			return nil, err
		}
		p.r[i], p.w[i] = r, w
	}
	return p, nil
}

// start closes forgeload's copies of the write ends (the child has its
// own) and starts copying.
func (p *outputPipes) start() {
	for i := range p.w {
		_ = p.w[i].Close()
		p.w[i] = nil
	}
	for i := range p.r {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.copy(i)
		}()
	}
}

func (p *outputPipes) copy(i int) {
	buf := make([]byte, 32<<10)
	for {
		// A read that starts after the exit takes from what the pipe held
		// then (or from a background child's output).
		afterExit := p.exitedAt.Load() != 0
		n, err := p.r[i].Read(buf)
		if n > 0 {
			_, _ = p.dst[i].Write(buf[:n])
		}
		if err != nil {
			return // EOF, or silent past drainIdle after the exit
		}
		if at := p.exitedAt.Load(); at != 0 {
			now := time.Now()
			left := p.left[i].Load()
			if afterExit {
				left = p.left[i].Add(-int64(n))
			}
			if left <= 0 && now.Sub(time.Unix(0, at)) > p.most {
				return
			}
			_ = p.r[i].SetReadDeadline(now.Add(p.idle))
		}
	}
}

// exited says the step's process has exited: what is left in the pipes is
// read, then reading stops at the first drainIdle of silence.
func (p *outputPipes) exited() {
	for i, r := range p.r {
		p.left[i].Store(int64(unread(r)))
	}
	now := time.Now()
	p.exitedAt.Store(now.UnixNano())
	for _, r := range p.r {
		_ = r.SetReadDeadline(now.Add(p.idle))
	}
}

// wait waits for the copying to end and closes the pipes.
func (p *outputPipes) wait() {
	p.wg.Wait()
	p.close()
}

func (p *outputPipes) close() {
	for _, f := range append(p.r[:], p.w[:]...) {
		if f != nil {
			_ = f.Close()
		}
	}
}
