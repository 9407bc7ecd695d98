package httpload

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/forgeload/forgeload/internal/pkg/load"
	"github.com/forgeload/forgeload/internal/pkg/load/feeder"
	"github.com/forgeload/forgeload/internal/pkg/load/vars"
)

// seen is what the target received for one request.
type seen struct{ uri, role, body, ua string }

func seenServer(t *testing.T) (*httptest.Server, func() []seen) {
	t.Helper()
	var mu sync.Mutex
	var got []seen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, seen{r.RequestURI, r.Header.Get("X-Role"), string(b), r.Header.Get("User-Agent")})
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	return srv, func() []seen { mu.Lock(); defer mu.Unlock(); return append([]seen(nil), got...) }
}

func TestPlaceholdersFromFeeder(t *testing.T) {
	t.Parallel()
	for _, netHTTP := range []bool{false, true} {
		t.Run(map[bool]string{false: "fast path", true: "net/http"}[netHTTP], func(t *testing.T) {
			t.Parallel()
			srv, got := seenServer(t)
			rows, err := feeder.Parse("users.csv", "csv", []byte("id,role\n101,admin\n102,user\n"))
			if err != nil {
				t.Fatal(err)
			}
			var stopped error
			src := &vars.Source{Feed: rows, OnExhausted: func(err error) { stopped = err }}
			d, err := New(Options{NetHTTP: netHTTP, Vars: src, Endpoints: []Endpoint{{
				URL: srv.URL + "/users/{{id}}?tok={{token|none}}", Method: "POST",
				Headers: map[string]string{"X-Role": "{{role}}"}, Body: []byte(`{"id": {{id}}, "x": "{{missing}}"}`)}}})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			var s load.Sample
			for range 2 {
				s.Reset()
				if err := d.DoSample(context.Background(), &s); err != nil {
					t.Fatal(err)
				}
			}
			s.Reset()
			if err := d.DoSample(context.Background(), &s); !errors.Is(err, vars.ErrExhausted) || stopped == nil {
				t.Fatalf("third request: err %v, stopped %v; want the feeder exhausted", err, stopped)
			}
			g := got()
			want := []seen{
				{"/users/101?tok=none", "admin", `{"id": 101, "x": "{{missing}}"}`, ""},
				{"/users/102?tok=none", "user", `{"id": 102, "x": "{{missing}}"}`, ""},
			}
			if len(g) != 2 {
				t.Fatalf("server saw %d requests, want 2: %+v", len(g), g)
			}
			for i := range want {
				g[i].ua = ""
				if g[i] != want[i] {
					t.Errorf("request %d = %+v, want %+v", i+1, g[i], want[i])
				}
			}
		})
	}
}

func TestPlaceholderDefaultsWithoutFeeder(t *testing.T) {
	t.Parallel()
	srv, got := seenServer(t)
	d, err := New(Options{Endpoints: []Endpoint{{URL: srv.URL + "/a", Headers: map[string]string{"X-Role": "Bearer {{token|no-auth}}"}}}})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Do(context.Background()); err != nil {
		t.Fatal(err)
	}
	if g := got(); len(g) != 1 || g[0].role != "Bearer no-auth" || g[0].ua != "forgeload" {
		t.Errorf("server saw %+v", g)
	}
}

func TestPlaceholderValueCannotSplitTheRequest(t *testing.T) {
	t.Parallel()
	srv, got := seenServer(t)
	rows, _ := feeder.Parse("f.json", "json", []byte(`[{"p": "a b"}, {"h": "x\r\nX-Evil: 1"}]`))
	d, err := New(Options{Vars: &vars.Source{Feed: rows}, Endpoints: []Endpoint{{URL: srv.URL + "/{{p|ok}}", Headers: map[string]string{"X-Role": "{{h|ok}}"}}}})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for i := range 2 {
		var s load.Sample
		if err := d.DoSample(context.Background(), &s); err == nil || !strings.Contains(err.Error(), "placeholder's value") {
			t.Errorf("request %d: err = %v, want the bad value refused", i+1, err)
		}
	}
	if g := got(); len(g) != 0 {
		t.Errorf("server saw %+v", g)
	}
}

func TestStaticRequestsStillAllocateNothing(t *testing.T) { //nolint:paralleltest // AllocsPerRun
	d, err := New(Options{Endpoints: []Endpoint{{URL: rawOKServer(t) + "/plain"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ctx := context.Background()
	var s load.Sample
	_ = d.DoSample(ctx, &s)
	if n := testing.AllocsPerRun(200, func() { s.Reset(); _ = d.DoSample(ctx, &s) }); n != 0 {
		t.Errorf("a request without placeholders allocates %v times, want 0", n)
	}
}

// BenchmarkHTTPPathTemplated is BenchmarkHTTPPath with two placeholders
// filled from a recycled feeder.
func BenchmarkHTTPPathTemplated(b *testing.B) {
	url := rawOKServer(b)
	rows, err := feeder.Parse("b.csv", "csv", []byte("id,role\n1,a\n2,b\n3,c\n"))
	if err != nil {
		b.Fatal(err)
	}
	rows.SetRecycle(true)
	d, err := New(Options{Vars: &vars.Source{Feed: rows}, Endpoints: []Endpoint{{URL: url + "/u/{{id}}", Headers: map[string]string{"X-Role": "{{role}}"}}}, Connections: 8})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	benchRun(b, d)
}
