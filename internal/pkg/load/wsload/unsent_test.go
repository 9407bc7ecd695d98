package wsload

import (
	"context"
	"net"
	"testing"

	"github.com/forgeload/forgeload/internal/pkg/load"
)

// TestCancelledHandshakeIsUnsent: a session whose run is cancelled while
// its connection is still being made (here a TLS handshake the target
// never answers) never left the process: it is reported unsent, so the
// engine counts a dropped arrival, not a request.
func TestCancelledHandshakeIsUnsent(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			accepted <- c // held open, never answered
		}
	}()
	d, err := New(Options{URL: "wss://" + ln.Addr().String() + "/", Messages: []string{"x"}})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		c := <-accepted
		cancel() // the handshake has begun and will never be answered
		<-t.Context().Done()
		_ = c.Close()
	}()
	var s load.Sample
	if err := d.DoSample(ctx, &s); err == nil || s.Unsent != load.DropCanceled {
		t.Errorf("err %v, unsent %v; want an error and canceled_before_send", err, s.Unsent)
	}
}
