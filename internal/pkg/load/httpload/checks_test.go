package httpload

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/forgeload/forgeload/internal/pkg/load"
	"github.com/forgeload/forgeload/internal/pkg/load/check"
)

// checkTarget answers 200 with an error in the body on /err, a good JSON
// body on /ok, and plain text on /text.
func checkTarget(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/err":
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"error": "database is down"}`)
		case "/ok":
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"ok": true, "items": [{"id": 7}]}`)
		default:
			_, _ = io.WriteString(w, "plain text")
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func checks(t testing.TB, specs ...check.Spec) check.List {
	t.Helper()
	s, err := check.New(specs, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	return s.Endpoint(0)
}

func str(s string) *string { return &s }

// TestChecksFailResponsesThatLookSuccessful: before checks, a 200 whose
// body is an error counted as a success (issue 28).
func TestChecksFailResponsesThatLookSuccessful(t *testing.T) {
	t.Parallel()
	url := checkTarget(t)
	for _, tc := range []struct {
		path   string
		spec   check.Spec
		netOpt bool // NetHTTP
		fail   bool
	}{
		{"/err", check.Spec{BodyNotContains: str("error")}, false, true},
		{"/ok", check.Spec{BodyNotContains: str("error")}, false, false},
		{"/ok", check.Spec{BodyContains: str(`"ok"`)}, true, false},
		{"/err", check.Spec{JSON: str("$.items[0].id")}, false, true},
		{"/ok", check.Spec{JSON: str("$.items[0].id"), Equals: str("7")}, false, false},
		{"/text", check.Spec{Header: str("Content-Type"), Matches: str("^application/json")}, false, true},
		{"/ok", check.Spec{Header: str("Content-Type"), Matches: str("^application/json")}, false, false},
		// Status checks run on the fast HTTP/1.1 path too.
		{"/ok", check.Spec{Status: []int{201}}, false, true},
		{"/ok", check.Spec{Status: []int{200}}, false, false},
		{"/ok", check.Spec{Status: []int{201}}, true, true},
	} {
		cl := checks(t, tc.spec)
		d, err := New(Options{Endpoints: []Endpoint{{URL: url + tc.path, Checks: cl}}, NetHTTP: tc.netOpt})
		if err != nil {
			t.Fatal(err)
		}
		var s load.Sample
		err = d.DoSample(context.Background(), &s)
		d.Close()
		name := fmt.Sprintf("%s on %s (net/http %v)", cl[0].Name(), tc.path, tc.netOpt)
		var ce *check.Error
		switch {
		case tc.fail && (!errors.As(err, &ce) || s.Class != load.ClassCheck):
			t.Errorf("%s: err %v, class %v; want a check error of class check", name, err, s.Class)
		case !tc.fail && err != nil:
			t.Errorf("%s: err %v, want success", name, err)
		case s.Status != 200 || s.BytesIn == 0:
			t.Errorf("%s: status %d, %d bytes in; want the 200 and its body counted", name, s.Status, s.BytesIn)
		}
		p, f := cl[0].Counts()
		if want := map[bool][2]int64{true: {0, 1}, false: {1, 0}}[tc.fail]; p != want[0] || f != want[1] {
			t.Errorf("%s: counted %d passed, %d failed; want %v", name, p, f, want)
		}
	}
}

// TestChecksInTheEngine: failed checks are failed requests of class check
// in the engine's result, and a 5xx keeps its own class.
func TestChecksInTheEngine(t *testing.T) {
	t.Parallel()
	url := checkTarget(t)
	cl := checks(t, check.Spec{BodyNotContains: str("error")})
	d, err := New(Options{Endpoints: []Endpoint{{Name: "err", URL: url + "/err", Checks: cl}, {Name: "ok", URL: url + "/ok", Checks: cl}}})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	res, err := load.Run(t.Context(), load.Options{Requester: d, Concurrency: 2, Total: 100, Endpoints: d.Names()})
	if err != nil {
		t.Fatal(err)
	}
	p, f := cl[0].Counts()
	if res.Requests != 100 || p+f != 100 || res.Errors != f || res.Classes["check"] != f || f == 0 || p == 0 {
		t.Errorf("requests %d, errors %d, classes %v; check passed %d, failed %d; want every failed check a failed request of class check",
			res.Requests, res.Errors, res.Classes, p, f)
	}
}

// TestBodyChecksReadAtMostTheLimit: a body longer than CheckMaxBody is
// counted whole, but checks see only its start.
func TestBodyChecksReadAtMostTheLimit(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, strings.Repeat("a", 1000)+"needle")
	}))
	defer srv.Close()
	for limit, found := range map[int64]bool{100: false, 2000: true} {
		cl := checks(t, check.Spec{BodyContains: str("needle")})
		d, err := New(Options{Endpoints: []Endpoint{{URL: srv.URL, Checks: cl}}, CheckMaxBody: limit})
		if err != nil {
			t.Fatal(err)
		}
		var s load.Sample
		err = d.DoSample(context.Background(), &s)
		d.Close()
		if (err == nil) != found || s.BytesIn != 1006 {
			t.Errorf("limit %d: err %v, %d bytes in; want found %v and all 1006 bytes counted", limit, err, s.BytesIn, found)
		}
	}
}

// TestChecksWithoutBodyDoNotAllocate: without checks, and with checks of
// the status alone, a request on the fast path allocates nothing.
func TestChecksWithoutBodyDoNotAllocate(t *testing.T) { //nolint:paralleltest // AllocsPerRun
	url := rawOKServer(t)
	for name, cl := range map[string]check.List{
		"no checks":    nil,
		"status check": checks(t, check.Spec{Status: []int{200}}),
		"failing":      checks(t, check.Spec{Status: []int{201}}),
	} {
		d, err := New(Options{Endpoints: []Endpoint{{URL: url, Checks: cl}}})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		var s load.Sample
		_ = d.DoSample(ctx, &s)
		if n := testing.AllocsPerRun(200, func() { s.Reset(); _ = d.DoSample(ctx, &s) }); n != 0 {
			t.Errorf("%s: a request allocates %v times, want 0", name, n)
		}
		d.Close()
	}
}

// benchBody is a 1 KiB JSON response, for the body-check benchmarks.
var benchBody = `{"status": "ok", "items": [` + strings.Repeat(`{"id": 12345, "name": "widget"},`, 30) + `{"id": 1}]}`

func benchServer(b *testing.B) string {
	b.Helper()
	return fixedServer(b, []byte(fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(benchBody), benchBody)))
}

// BenchmarkCheckNone, BenchmarkCheckStatus, BenchmarkCheckNoneNetHTTP and
// BenchmarkCheckBody drive the engine against the same 1 KiB JSON
// response: without checks (fast path), with a status check (fast path),
// without checks through net/http, and with a body_not_contains check
// (which sends through net/http and keeps the body). docs/benchmarks.md
// records their ratios.
func BenchmarkCheckNone(b *testing.B) { benchChecks(b, nil, false) }

func BenchmarkCheckStatus(b *testing.B) {
	benchChecks(b, checks(b, check.Spec{Status: []int{200}}), false)
}

func BenchmarkCheckNoneNetHTTP(b *testing.B) { benchChecks(b, nil, true) }

func BenchmarkCheckBody(b *testing.B) {
	benchChecks(b, checks(b, check.Spec{BodyNotContains: str("error")}), false)
}

func BenchmarkCheckJSON(b *testing.B) {
	benchChecks(b, checks(b, check.Spec{JSON: str("$.items[30].id"), Equals: str("1")}), false)
}

func benchChecks(b *testing.B, cl check.List, netHTTP bool) {
	d, err := New(Options{Endpoints: []Endpoint{{URL: benchServer(b), Checks: cl}}, Connections: 8, NetHTTP: netHTTP})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	benchRun(b, d)
}

// TestTruncatedResponseIsNotChecked: a response whose body did not arrive
// whole is a failed request of its own class on the fast path, as on
// net/http, and no check counts it; a 5xx is checked and keeps its class.
func TestTruncatedResponseIsNotChecked(t *testing.T) {
	t.Parallel()
	for resp, class := range map[string]load.ErrorClass{
		"HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\nshort":                           load.ClassNetwork,
		"HTTP/1.1 503 Unavailable\r\nContent-Length: 2\r\nConnection: close\r\n\r\nno": load.ClassHTTP5xx,
	} {
		url := rawServer(t, func(c net.Conn, r *bufio.Reader) {
			if _, err := readRequest(r); err == nil {
				_, _ = io.WriteString(c, resp)
			}
		})
		cl := checks(t, check.Spec{Status: []int{201}})
		d, err := New(Options{Endpoints: []Endpoint{{URL: url, Checks: cl}}, Timeout: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		var s load.Sample
		err = d.DoSample(t.Context(), &s)
		d.Close()
		p, f := cl[0].Counts()
		checked := class == load.ClassHTTP5xx
		if err == nil || s.Class != class || (p+f == 1) != checked {
			t.Errorf("%q: err %v, class %v, check counted %d; want class %v, checked %v", resp, err, s.Class, p+f, class, checked)
		}
	}
}
