package container_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/forgeload/forgeload/internal/pkg/container"
	"github.com/forgeload/forgeload/internal/pkg/container/containertest"
)

// TestRemoveOutlastsALostWait: Remove meets a removal already in progress,
// and the Engine never answers the wait for that removal, as Docker 20.10
// once did under load for two minutes after the other removal had
// finished. Remove still returns, within seconds, once the container is
// gone. The fault comes from a proxy in front of the local Engine: it has
// the Engine remove the container but answers the first removal with the
// Engine's "already in progress" conflict, and holds every wait.
func TestRemoveOutlastsALostWait(t *testing.T) {
	t.Parallel()
	direct := containertest.Engine(t)
	img := containertest.Image(t)
	ctx := ctxFor(t, time.Minute)
	if err := direct.EnsureImage(ctx, img, container.PullNever, nil); err != nil {
		t.Fatal(err)
	}
	const job = "lost-wait"
	id, err := direct.Start(ctx, container.Spec{Job: job, Image: img})
	if err != nil {
		t.Fatal(err)
	}
	px := startLostWaitProxy(t, id)
	e, err := container.New(ctx, container.Options{Host: "tcp://" + px.addr, Owner: direct.Owner()})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()

	rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	start := time.Now()
	if err := e.Remove(rctx, id); err != nil {
		t.Fatalf("Remove with the wait for removal never answered = %v after %s, want nil once the container is gone", err, time.Since(start).Round(time.Millisecond))
	}
	if px.held.Load() == 0 {
		t.Fatal("Remove never waited for the other removal: the fault was not met")
	}
	if objs, err := direct.Objects(ctx, job); err != nil || len(objs) != 0 {
		t.Fatalf("after Remove the job still has %v (%v), want nothing", objs, err)
	}
	t.Logf("Remove returned %s after the conflict, with %d waits held", time.Since(start).Round(time.Millisecond), px.held.Load())
}

// lostWaitProxy forwards the Docker API to the local Engine's socket,
// except for container id: its first removal is carried out but answered
// 409 "already in progress", and every wait on it is held until the
// client gives up.
type lostWaitProxy struct {
	addr     string
	held     atomic.Int64
	answered atomic.Bool
}

func startLostWaitProxy(t *testing.T, id string) *lostWaitProxy {
	t.Helper()
	sock := "/var/run/docker.sock"
	if h := os.Getenv("DOCKER_HOST"); h != "" {
		p, ok := strings.CutPrefix(h, "unix://")
		if !ok {
			t.Fatalf("this test fronts the Engine's unix socket; DOCKER_HOST is %s", h)
		}
		sock = p
	}
	fwd := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: "docker"})
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}
	t.Cleanup(tr.CloseIdleConnections)
	fwd.Transport = tr
	px := &lostWaitProxy{}
	ours := "/containers/" + id
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, ours+"/wait"):
			px.held.Add(1)
			w.WriteHeader(http.StatusOK) // as the Engine does before the body
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		case r.Method == http.MethodDelete && strings.HasSuffix(r.URL.Path, ours) && !px.answered.Swap(true):
			rec := &discard{header: http.Header{}}
			fwd.ServeHTTP(rec, r) // the other caller's removal, carried out
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusConflict)
			fmt.Fprintf(w, `{"message":"removal of container %s is already in progress"}`, id)
		default:
			fwd.ServeHTTP(w, r)
		}
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	})
	px.addr = ln.Addr().String()
	return px
}

// discard is a ResponseWriter that keeps nothing.
type discard struct{ header http.Header }

func (d *discard) Header() http.Header         { return d.header }
func (d *discard) Write(b []byte) (int, error) { return len(b), nil }
func (d *discard) WriteHeader(int)             {}
