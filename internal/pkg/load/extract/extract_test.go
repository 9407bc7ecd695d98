package extract

import (
	"strings"
	"testing"

	"github.com/forgeload/forgeload/internal/pkg/load/vars"
)

const body = `{"id": 42, "user": {"token": "t0k", "tags": ["a", "b"]}, "items": [{"sku": "X1"}], "ok": true}`

func TestExtract(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ path, re, want string }{
		{path: "id", want: "42"},
		{path: "$.user.token", want: "t0k"},
		{path: "items.0.sku", want: "X1"},
		{path: "$.items[0].sku", want: "X1"},
		{path: "user.tags", want: `["a", "b"]`},
		{path: "ok", want: "true"},
		{path: "$", want: body},
		{re: `"token": "([^"]+)"`, want: "t0k"},
		{re: `\d+`, want: "42"},
	} {
		e, err := New(tt.path, tt.re, "v", false)
		if err != nil {
			t.Fatalf("New(%q, %q): %v", tt.path, tt.re, err)
		}
		if got, ok := e.Extract([]byte(body)); !ok || got != tt.want {
			t.Errorf("Extract(%q, %q) = %q, %v; want %q", tt.path, tt.re, got, ok, tt.want)
		}
	}
}

func TestApply(t *testing.T) {
	t.Parallel()
	id, _ := New("id", "", "id", false)
	code, _ := New("", `code=(\w+)`, "code", true)
	missing, _ := New("nope", "", "nope", false)
	u := &vars.User{}
	u.Set("nope", "earlier")
	Apply([]*Extractor{id, code, missing}, 200, []byte(`{"id": "7"} code=abc`), u)
	if u.Vars["id"] != "7" || u.Vars["code"] != "abc" || u.Vars["nope"] != "earlier" {
		t.Errorf("vars = %v", u.Vars)
	}
	Apply([]*Extractor{id, code}, 500, []byte(`{"id": "8"} code=err`), u)
	if u.Vars["id"] != "7" || u.Vars["code"] != "err" {
		t.Errorf("after a 500: vars = %v, want id kept and code (on_error) taken", u.Vars)
	}
}

func TestNewErrors(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ path, re, name, want string }{
		{"a", "", "", "var is required"},
		{"a", "b", "v", "both set"},
		{"", "", "v", "one of jsonpath or regex"},
		{"", "(", "v", "missing closing )"},
		{"a[0", "", "v", "[ without ]"},
		{"$.", "", "v", "selects nothing"},
	} {
		if _, err := New(tt.path, tt.re, tt.name, false); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("New(%q, %q, %q) = %v, want %q", tt.path, tt.re, tt.name, err, tt.want)
		}
	}
}

func FuzzExtract(f *testing.F) {
	f.Add("$.a[0].b", `x(\d)`, []byte(`{"a": [{"b": 1}]} x5`))
	f.Add("$", "", []byte(`[1, 2]`))
	f.Fuzz(func(t *testing.T, path, re string, b []byte) {
		if len(b) > MaxBody {
			return
		}
		for _, args := range [][2]string{{path, ""}, {"", re}} {
			e, err := New(args[0], args[1], "v", true)
			if err != nil {
				continue
			}
			u := &vars.User{}
			Apply([]*Extractor{e}, 200, b, u)
			if v, ok := u.Vars["v"]; ok && len(v) > len(b) && args[1] != "" {
				t.Fatalf("a regex extracted more than the body: %q", v)
			}
		}
	})
}
