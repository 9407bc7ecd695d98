package check

import (
	"errors"
	"net/http"
	"strings"
	"testing"
)

func ptr[T any](v T) *T { return &v }

func TestCompileRefusesBadChecksNamingTheKey(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		spec    Spec
		key     string
		contain string
	}{
		{Spec{}, "", "needs one of status"},
		{Spec{Status: []int{200}, JSON: ptr("$.a")}, "", "status and json are set in one check"},
		{Spec{Status: []int{}}, "status", "the list is empty"},
		{Spec{Status: []int{2000}}, "status", "2000 is not a status code"},
		{Spec{Status: []int{-1}}, "status", "-1 is not a status code"},
		{Spec{BodyContains: ptr("")}, "body_contains", "the text is empty"},
		{Spec{JSON: ptr("$.a[")}, "json", "[ without ]"},
		{Spec{JSON: ptr("$.")}, "json", "selects nothing"},
		{Spec{Header: ptr("Content Type")}, "header", "is not a header name"},
		{Spec{Header: ptr("X"), Matches: ptr("(")}, "matches", "is not a regular expression"},
		{Spec{Status: []int{200}, Equals: ptr("1")}, "equals", "only a json check takes equals"},
		{Spec{JSON: ptr("$.a"), Matches: ptr("x")}, "matches", "only a header check takes matches"},
		{Spec{BodyContains: ptr("x"), Exists: ptr(true)}, "exists", "only a json or header check"},
		{Spec{JSON: ptr("$.a"), Exists: ptr(true), Equals: ptr("1")}, "exists", "keep one"},
	} {
		_, err := Compile("checks[0]", tc.spec)
		var se *SpecError
		if !errors.As(err, &se) {
			t.Errorf("Compile(%+v) = %v, want a *SpecError", tc.spec, err)
			continue
		}
		if se.Key != tc.key || !strings.Contains(se.Msg, tc.contain) {
			t.Errorf("Compile(%+v) = key %q, %q; want key %q and %q", tc.spec, se.Key, se.Msg, tc.key, tc.contain)
		}
	}
}

func TestChecksPassAndFail(t *testing.T) {
	t.Parallel()
	body := []byte(`{"items": [{"id": 7, "name": "a"}], "ok": true, "msg": "fine"}`)
	hdr := http.Header{"Content-Type": {"application/json; charset=utf-8"}}
	ok := &Response{Status: 200, Header: hdr, Body: body}
	for _, tc := range []struct {
		spec Spec
		name string
		r    *Response
		pass bool
	}{
		{Spec{Status: []int{200, 201}}, "status in [200, 201]", ok, true},
		{Spec{Status: []int{201}}, "status in [201]", ok, false},
		{Spec{BodyContains: ptr(`"ok"`)}, `body contains "\"ok\""`, ok, true},
		{Spec{BodyNotContains: ptr("error")}, `body does not contain "error"`, ok, true},
		// The bug of issue 28: a 200 whose body is an error.
		{Spec{BodyNotContains: ptr("error")}, `body does not contain "error"`, &Response{Status: 200, Body: []byte(`{"error": "db down"}`)}, false},
		{Spec{JSON: ptr("$.items[0].id")}, "json $.items[0].id exists", ok, true},
		{Spec{JSON: ptr("$.items[1].id")}, "json $.items[1].id exists", ok, false},
		{Spec{JSON: ptr("$.items[1].id"), Exists: ptr(false)}, "json $.items[1].id is absent", ok, true},
		{Spec{JSON: ptr("$.items[0].id"), Equals: ptr("7")}, `json $.items[0].id == "7"`, ok, true},
		{Spec{JSON: ptr("$.msg"), Equals: ptr("fine")}, `json $.msg == "fine"`, ok, true},
		{Spec{JSON: ptr("$.ok"), Equals: ptr("false")}, `json $.ok == "false"`, ok, false},
		// A body that is not JSON has no value at any path.
		{Spec{JSON: ptr("$.a")}, "json $.a exists", &Response{Status: 200, Body: []byte(`a: 1`)}, false},
		{Spec{JSON: ptr("$")}, "json $ exists", ok, true},
		{Spec{Header: ptr("content-type"), Matches: ptr("^application/json")}, `header Content-Type matches "^application/json"`, ok, true},
		{Spec{Header: ptr("Content-Type"), Matches: ptr("^text/")}, `header Content-Type matches "^text/"`, ok, false},
		{Spec{Header: ptr("X-Trace")}, "header X-Trace exists", ok, false},
		{Spec{Header: ptr("X-Trace"), Exists: ptr(false)}, "header X-Trace is absent", ok, true},
	} {
		c, err := Compile("checks[3]", tc.spec)
		if err != nil {
			t.Fatalf("Compile(%+v): %v", tc.spec, err)
		}
		if want := "checks[3] " + tc.name; c.Name() != want {
			t.Errorf("Compile(%+v).Name() = %q, want %q", tc.spec, c.Name(), want)
		}
		err = List{c}.Run(tc.r)
		if (err == nil) != tc.pass {
			t.Errorf("%s on %s: Run = %v, want pass %v", c.Name(), tc.r.Body, err, tc.pass)
		}
		if p, f := c.Counts(); (tc.pass && (p != 1 || f != 0)) || (!tc.pass && (p != 0 || f != 1)) {
			t.Errorf("%s: counts %d passed %d failed after one run, want pass %v", c.Name(), p, f, tc.pass)
		}
		var ce *Error
		if err != nil && (!errors.As(err, &ce) || ce.Check != c.Name()) {
			t.Errorf("%s: error %v does not name the check", c.Name(), err)
		}
	}
}

// TestRunCountsEveryCheck: one response is counted by every check, and
// the error is the first failed one's.
func TestRunCountsEveryCheck(t *testing.T) {
	t.Parallel()
	s, err := New([]Spec{{Status: []int{200}}, {BodyNotContains: ptr("error")}},
		[]EndpointSpecs{{Prefix: "endpoints[0].checks", Specs: []Spec{{BodyContains: ptr("id")}}}, {Prefix: "endpoints[1].checks"}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(s.Endpoint(0)); got != 3 {
		t.Fatalf("endpoint 0 has %d checks, want the 2 top-level ones and its own", got)
	}
	if got := len(s.Endpoint(1)); got != 2 {
		t.Fatalf("endpoint 1 has %d checks, want the 2 top-level ones", got)
	}
	err = s.Endpoint(0).Run(&Response{Status: 200, Body: []byte(`{"error": "x"}`)})
	if err == nil || !strings.Contains(err.Error(), `checks[1] body does not contain "error"`) {
		t.Errorf("Run = %v, want the body_not_contains check's error", err)
	}
	_ = s.Endpoint(1).Run(&Response{Status: 500})
	got := s.Stats()
	want := []struct {
		name         string
		passed, fail int64
	}{
		{"checks[0] status in [200]", 1, 1},
		{`checks[1] body does not contain "error"`, 1, 1},
		{`endpoints[0].checks[0] body contains "id"`, 0, 1},
	}
	if len(got) != len(want) {
		t.Fatalf("Stats = %+v, want %d checks", got, len(want))
	}
	for i, w := range want {
		if got[i].Name != w.name || got[i].Passed != w.passed || got[i].Failed != w.fail {
			t.Errorf("Stats[%d] = %+v, want %+v", i, got[i], w)
		}
	}
	if s.MaxBody() != DefaultMaxBody {
		t.Errorf("MaxBody() = %d, want the default %d", s.MaxBody(), DefaultMaxBody)
	}
}

func TestNewWithoutChecksIsNil(t *testing.T) {
	t.Parallel()
	s, err := New(nil, []EndpointSpecs{{Prefix: "endpoints[0].checks"}}, 0)
	if err != nil || s != nil {
		t.Fatalf("New(no checks) = %v, %v; want nil, nil", s, err)
	}
	if s.Endpoint(0) != nil || s.Stats() != nil {
		t.Error("a nil Suite checks something")
	}
}

// TestStatusChecksDoNotAllocate: checks that need no body run on the
// engine's allocation-free path.
func TestStatusChecksDoNotAllocate(t *testing.T) { //nolint:paralleltest // AllocsPerRun
	s, err := New([]Spec{{Status: []int{200, 204}}}, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	l := s.Endpoint(0)
	if n := testing.AllocsPerRun(100, func() { _ = l.Run(&Response{Status: 204}) }); n != 0 {
		t.Errorf("a status check allocates %v times per response, want 0", n)
	}
	if n := testing.AllocsPerRun(100, func() { _ = l.Run(&Response{Status: 500}) }); n != 0 {
		t.Errorf("a failing status check allocates %v times per response, want 0", n)
	}
}

// FuzzCheck compiles checks from arbitrary text and runs them on
// arbitrary bodies: nothing panics, and a compiled check's name starts
// with its place.
func FuzzCheck(f *testing.F) {
	for _, s := range [][3]string{
		{"$.items[0].id", "^application/json", `{"items": [{"id": 1}]}`},
		{"$", "", "not json"},
		{"$['a'][\"b\"]", "(", `{"a": {"b": null}}`},
		{"a.b.#", "[", `[1,2,3]`},
		{"$.a|@reverse", "x*", `{"a": [1]}`},
		{"$..x", "\\", "{\"x\":\"\xff\"}"},
	} {
		f.Add(s[0], s[1], []byte(s[2]))
	}
	f.Fuzz(func(t *testing.T, path, re string, body []byte) {
		var l List
		for _, sp := range []Spec{{JSON: &path}, {JSON: &path, Equals: &re}, {Header: ptr("X"), Matches: &re}, {BodyContains: &path}} {
			c, err := Compile("checks[0]", sp)
			if err != nil {
				var se *SpecError
				if !errors.As(err, &se) {
					t.Fatalf("Compile(%+v) = %T %v, want a *SpecError", sp, err, err)
				}
				continue
			}
			if !strings.HasPrefix(c.Name(), "checks[0] ") {
				t.Fatalf("name %q does not start with the check's place", c.Name())
			}
			l = append(l, c)
		}
		_ = l.Run(&Response{Status: 200, Header: http.Header{"X": {string(body)}}, Body: body})
	})
}
