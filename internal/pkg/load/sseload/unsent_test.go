package sseload

import (
	"context"
	"net"
	"testing"

	"github.com/forgeload/forgeload/internal/pkg/load"
)

// TestCancelledConnectIsUnsent: a stream whose run is cancelled while its
// connection is still being made (here a TLS handshake the target never
// answers) never left the process: it is reported unsent, so the engine
// counts a dropped arrival, not a request.
func TestCancelledConnectIsUnsent(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		cancel() // the handshake has begun and will never be answered
		<-t.Context().Done()
	}()
	d, err := New(Options{URL: "https://" + ln.Addr().String() + "/events"})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var s load.Sample
	if err := d.DoSample(ctx, &s); err == nil || s.Unsent != load.DropCanceled {
		t.Errorf("err %v, unsent %v; want an error and canceled_before_send", err, s.Unsent)
	}
}
