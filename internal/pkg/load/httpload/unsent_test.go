package httpload

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/forgeload/forgeload/internal/pkg/load"
)

// TestCancelledBeforeWriteIsUnsent: a request whose context was cancelled
// before a byte of it was written (the run stopping) is reported unsent,
// so that the engine counts it as a dropped arrival, not a request; the
// target saw nothing. Both paths: the HTTP/1.1 fast path on a warm
// connection and on a dial, and net/http.
func TestCancelledBeforeWriteIsUnsent(t *testing.T) {
	t.Parallel()
	var saw atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { saw.Add(1) }))
	defer srv.Close()
	for _, tc := range []struct {
		name    string
		netHTTP bool
		warm    bool
	}{{"fast path, warm connection", false, true}, {"fast path, dial", false, false}, {"net/http", true, false}} {
		d, err := New(Options{Endpoints: []Endpoint{{URL: srv.URL + "/"}}, NetHTTP: tc.netHTTP})
		if err != nil {
			t.Fatal(err)
		}
		if tc.warm {
			if err := d.Warm(t.Context(), 1); err != nil {
				t.Fatal(err)
			}
		}
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		var s load.Sample
		err = d.DoSample(ctx, &s)
		if err == nil || s.Unsent != load.DropCanceled || s.BytesOut != 0 {
			t.Errorf("%s: err %v, unsent %v, bytes out %d; want an error, canceled_before_send, 0 bytes", tc.name, err, s.Unsent, s.BytesOut)
		}
		s.Reset()
		if err := d.DoSample(t.Context(), &s); err != nil || s.Unsent != load.UnsentNone {
			t.Errorf("%s: a request sent after: err %v, unsent %v", tc.name, err, s.Unsent)
		}
		d.Close()
	}
	if saw.Load() != 3 {
		t.Errorf("the target saw %d requests, want 3 (only those sent)", saw.Load())
	}
}
