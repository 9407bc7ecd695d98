package resultview

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/forgeload/forgeload/internal/pkg/load"
	"github.com/forgeload/forgeload/internal/pkg/load/outcome/summary"
)

// Dashboard is the live page of a running test: the report's page, built
// from the seconds measured so far and updated in the browser through
// Server-Sent Events at every new second, then from the final result.
// Feed it with [Dashboard.Second] (an [load.Options.OnSecond] hook) and
// [Dashboard.Finish]; serve it with [Dashboard.Serve]. The zero value is
// not usable; create one with [NewDashboard]. Its methods are safe for
// concurrent use.
type Dashboard struct {
	mu      sync.Mutex
	live    load.Result
	info    *summary.RunInfo
	checks  []load.Check
	running bool
	page    []byte // the rendered <main> fragment of the latest state
	subs    map[chan struct{}]struct{}
	now     func() time.Time
	points  int                 // MaxPoints; smaller in tests
	mask    func(string) string // applied to every page and update served
	// planned is the sum of the planned rates of the seconds so far, so
	// that the headline's asked rate is the plan's mean over the same
	// window as the achieved rate (during a ramp the current rate is
	// higher than any average of it).
	planned float64
	// plannedTime is how long the run is planned to last; 0: unknown.
	plannedTime time.Duration
}

// SetPlannedDuration gives the run's planned length, which the live page
// shows beside the elapsed time; 0 (the default) shows none.
func (d *Dashboard) SetPlannedDuration(t time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.plannedTime = t
}

// NewDashboard returns an empty, running dashboard for a run described by
// info (which may be nil).
func NewDashboard(info *summary.RunInfo) *Dashboard { return newDashboard(info, nil) }

// newDashboard is NewDashboard whose every page and update goes through
// mask (nil: none) before it is served.
func newDashboard(info *summary.RunInfo, mask func(string) string) *Dashboard {
	if mask == nil {
		mask = func(s string) string { return s }
	}
	d := &Dashboard{running: true, subs: map[chan struct{}]struct{}{}, now: time.Now, points: MaxPoints, mask: mask}
	d.info = info
	if info != nil && len(info.Phases) > 0 {
		d.live.SetPhases(info.Phases)
	}
	d.live.Start = d.now()
	d.renderLocked()
	return d
}

// Second adds one second's snapshot; the browsers update. It does not keep
// s.
func (d *Dashboard) Second(s *load.Snapshot) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.running {
		return
	}
	d.live.AddSnapshot(s)
	d.live.Elapsed = time.Duration(s.Second+1) * time.Second
	d.live.Open = d.live.Open || s.TargetRPS > 0
	d.planned += s.TargetRPS
	d.live.TargetRPS = d.planned / float64(s.Second+1)
	d.live.Finish()
	// Past MaxPoints seconds a drawn point covers several seconds, and each
	// render merges their histograms: redraw once per point, not per second.
	if n := len(d.live.Seconds); n > d.points && n%((n+d.points-1)/d.points) != 0 {
		return
	}
	d.renderLocked()
}

// Finish shows the final result and its threshold checks; the page keeps
// them until the server stops.
func (d *Dashboard) Finish(r *load.Result, checks []load.Check) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.live = *r
	d.checks, d.running = checks, false
	d.renderLocked()
}

func (d *Dashboard) view() *View {
	s := summary.Of(&d.live, d.checks)
	s.Run = d.info
	v := buildFrom(&d.live, &s, d.points)
	v.Live, v.Running = true, d.running
	if d.running {
		v.liveCards(d.plannedTime)
	}
	v.Updated = d.now().UTC().Format("15:04:05")
	return v
}

// renderLocked renders the fragment and wakes the event streams.
func (d *Dashboard) renderLocked() {
	d.page = []byte(d.mask(string(mainHTML(d.view()))))
	for ch := range d.subs {
		select {
		case ch <- struct{}{}:
		default: // an update is already pending for this stream
		}
	}
}

// ServeHTTP serves the page at / and its event stream at /events.
func (d *Dashboard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/":
		d.mu.Lock()
		v := d.view()
		d.mu.Unlock()
		var b bytes.Buffer
		if err := v.Render(&b); err != nil {
			http.Error(w, "the page could not be rendered", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		_, _ = io.WriteString(w, d.mask(b.String()))
	case "/events":
		d.events(w, r)
	default:
		http.NotFound(w, r)
	}
}

// events streams the page fragment: once at once, then at every change,
// and a final "done" event after the run's result.
func (d *Dashboard) events(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	ch := make(chan struct{}, 1)
	ch <- struct{}{}
	d.mu.Lock()
	d.subs[ch] = struct{}{}
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		delete(d.subs, ch)
		d.mu.Unlock()
	}()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	// A server's write timeout (the daemon's metrics server has one) must
	// not cut a stream that lasts as long as the run.
	_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
	for {
		select {
		case <-r.Context().Done():
			return
		case <-ch:
		}
		d.mu.Lock()
		page, running := d.page, d.running
		d.mu.Unlock()
		var b bytes.Buffer
		b.WriteString("event: update\n")
		for line := range strings.SplitSeq(string(page), "\n") {
			b.WriteString("data: " + line + "\n")
		}
		b.WriteString("\n")
		if !running {
			b.WriteString("event: done\ndata: done\n\n")
		}
		if _, err := w.Write(b.Bytes()); err != nil {
			return
		}
		fl.Flush()
		if !running {
			return
		}
	}
}

// ListenLoopback listens on addr, which must name a loopback address
// (127.0.0.1:0 picks a free port): the dashboard shows the load config and
// results, so it is never served beyond this machine.
func ListenLoopback(addr string) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("dashboard address %q: %w: want HOST:PORT such as 127.0.0.1:8089", addr, err)
	}
	ip := net.ParseIP(host)
	if host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("dashboard address %q is not a loopback address: the dashboard serves on 127.0.0.1, ::1 or localhost only", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("dashboard: %w: pick another port", err)
	}
	return ln, nil
}

// Serve serves the dashboard on ln until ctx ends, then closes every
// stream and returns nil. It closes ln.
func (d *Dashboard) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           d,
		ReadHeaderTimeout: 10 * time.Second,
		// Requests (and so the event streams) end when ctx ends.
		BaseContext: func(net.Listener) context.Context { return ctx },
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("dashboard: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("dashboard: %w", err)
	}
	return nil
}
