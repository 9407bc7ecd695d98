package feeder

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/forgeload/forgeload/internal/pkg/load/vars"
)

func values(t *testing.T, r *Rows, col string, n int) []string {
	t.Helper()
	var out []string
	for range n {
		row, err := r.Next(t.Context())
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		v, _ := row.Lookup(col)
		out = append(out, v)
	}
	return out
}

func TestCSVInOrderThenExhausted(t *testing.T) {
	t.Parallel()
	r, err := Parse("users.csv", "csv", []byte("user_id, email\n101, alice@example.com\n102,\"bob, jr@example.com\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := values(t, r, "email", 2); strings.Join(got, "|") != "alice@example.com|bob, jr@example.com" {
		t.Errorf("emails = %q", got)
	}
	_, err = r.Next(t.Context())
	if !errors.Is(err, vars.ErrExhausted) || !strings.Contains(err.Error(), "users.csv has 2 rows and all were used") {
		t.Fatalf("third Next = %v, want exhaustion naming the file", err)
	}
}

func TestRecycle(t *testing.T) {
	t.Parallel()
	r, err := Parse("p.json", "json", []byte(`[{"id": "a", "price": 49.990}, {"id": "b", "ok": true}]`))
	if err != nil {
		t.Fatal(err)
	}
	r.SetRecycle(true)
	if got := strings.Join(values(t, r, "id", 5), ""); got != "ababa" {
		t.Errorf("ids = %q, want ababa", got)
	}
	row, _ := r.Next(t.Context()) // b
	if _, ok := row.Lookup("price"); ok {
		t.Error("record b has no price, but Lookup found one")
	}
	row, _ = r.Next(t.Context()) // a
	if v, ok := row.Lookup("price"); !ok || v != "49.990" {
		t.Errorf("price = %q %v: a JSON number keeps its text", v, ok)
	}
}

func TestEveryRowOnceAcrossWorkers(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("n\n")
	for i := range 1000 {
		b.WriteString(strings.Repeat("x", i%3) + string(rune('a'+i%26)) + "\n")
	}
	r, err := Parse("n.csv", "csv", []byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	got := 0
	for range 8 {
		wg.Go(func() {
			for {
				if _, err := r.Next(t.Context()); err != nil {
					return
				}
				mu.Lock()
				got++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if got != 1000 {
		t.Errorf("rows handed out = %d, want each of the 1000 once", got)
	}
}

func TestErrors(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ typ, data, want string }{
		{"csv", "", "is empty"},
		{"csv", "a,b\n", "has no rows"},
		{"csv", "a,b\n1\n", "as many fields as the header (2)"},
		{"csv", "a,a\n1,2\n", `column "a" appears twice`},
		{"json", `{"a": 1}`, "JSON array of objects"},
		{"json", `[{}]`, "record 1 is empty"},
		{"json", `[{"a": {"b": 1}}]`, `field "a": a map[string]interface {} is not a value`},
		{"json", `[{"a": 1}] [{"a": 2}]`, "data after the JSON array"},
		{"xml", `x`, `type "xml" is unknown`},
	} {
		if _, err := Parse("f", tt.typ, []byte(tt.data)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Parse(%s, %q) = %v, want %q", tt.typ, tt.data, err, tt.want)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add("csv", "a,b\n1,2\n")
	f.Add("json", `[{"a": 1, "b": "x"}, {"c": false}]`)
	f.Fuzz(func(t *testing.T, typ, data string) {
		r, err := Parse("f", typ, []byte(data))
		if err != nil {
			return
		}
		for range r.Len() {
			row, err := r.Next(t.Context())
			if err != nil {
				t.Fatalf("Next before the end: %v", err)
			}
			for name := range r.cols {
				_, _ = row.Lookup(name)
			}
		}
		if _, err := r.Next(t.Context()); !errors.Is(err, vars.ErrExhausted) {
			t.Fatalf("Next after %d rows = %v", r.Len(), err)
		}
	})
}
