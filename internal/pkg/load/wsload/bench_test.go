package wsload

import (
	"context"
	"testing"
	"time"

	"github.com/forgeload/forgeload/internal/pkg/load"
	"github.com/forgeload/forgeload/internal/pkg/load/loadtarget"
)

// BenchmarkSession measures one pooled session of two messages against
// a loopback target, with and without awaited replies: the driver's
// per-session cost, allocations included (compare allocs/op before and
// after a change to DoSample).
func BenchmarkSession(b *testing.B) {
	b.Run("replies", func(b *testing.B) {
		benchSession(b, "/echo", Options{Messages: []string{"one", "two"}, ExpectReplies: true, ReceiveTimeout: 10 * time.Second})
	})
	b.Run("send", func(b *testing.B) { benchSession(b, "/silent", Options{Messages: []string{"one", "two"}}) })
}

func benchSession(b *testing.B, path string, o Options) {
	srv := loadtarget.StartWebSocket(b)
	o.URL, o.Connections = srv.URL+path, 1
	d, err := New(o)
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		var s load.Sample
		if err := d.DoSample(ctx, &s); err != nil {
			b.Fatal(err)
		}
	}
}
