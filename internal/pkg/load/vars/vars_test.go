package vars

import (
	"context"
	"fmt"
	"testing"

	"github.com/forgeload/forgeload/internal/pkg/load"
)

type mapLookup map[string]string

func (m mapLookup) Lookup(k string) (string, bool) { v, ok := m[k]; return v, ok }

func TestRender(t *testing.T) {
	t.Parallel()
	l := mapLookup{"user_id": "101", "empty": ""}
	for _, tt := range []struct{ in, want string }{
		{"/users/{{user_id}}", "/users/101"},
		{"/users/{{ user_id }}/x", "/users/101/x"},
		{"Bearer {{token|no-auth}}", "Bearer no-auth"},
		{"{{token|}}!", "!"},
		{"{{missing}}", "{{missing}}"},
		{"{{empty|d}}", ""},
		{"{{}} {{ }} {{a{b}} {{user_id", "{{}} {{ }} {{a{b}} {{user_id"},
		{"{{{user_id}}}", "{101}"},
		{`{"amount": {{amount|0}}}`, `{"amount": 0}`},
		{"no placeholders", "no placeholders"},
	} {
		if got := Parse(tt.in).Render(l); got != tt.want {
			t.Errorf("Render(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if Has("plain {{") || !Has("a {{b}}") {
		t.Error("Has is wrong")
	}
}

func TestAppendAllocatesNothing(t *testing.T) {
	tp := Parse("/users/{{user_id}}?q={{q|x}}")
	l := mapLookup{"user_id": "101"}
	buf := make([]byte, 0, 64)
	if n := testing.AllocsPerRun(100, func() { buf = tp.Append(buf[:0], l) }); n != 0 {
		t.Errorf("Append allocates %v times", n)
	}
}

type feed struct{ rows []Row }

func (f *feed) Next(context.Context) (Row, error) {
	if len(f.rows) == 0 {
		return nil, ErrExhausted
	}
	r := f.rows[0]
	f.rows = f.rows[1:]
	return r, nil
}

func TestSourceUserVarsWinAndRetryKeepsRow(t *testing.T) {
	t.Parallel()
	var stopped error
	src := &Source{Feed: &feed{rows: []Row{mapLookup{"id": "1", "tok": "row"}, mapLookup{"id": "2"}}}, OnExhausted: func(err error) { stopped = err }}
	var s load.Sample
	u, err := src.Begin(t.Context(), &s)
	if err != nil {
		t.Fatal(err)
	}
	u.Set("tok", "extracted")
	if v, _ := u.Lookup("tok"); v != "extracted" {
		t.Errorf("tok = %q: a user's variable wins over the row", v)
	}
	s.Reset()
	s.Attempts = 2
	if u, _ = src.Begin(t.Context(), &s); u.Row.(mapLookup)["id"] != "1" {
		t.Error("a retry took a new row")
	}
	s.Reset()
	if u, _ = src.Begin(t.Context(), &s); u.Row.(mapLookup)["id"] != "2" {
		t.Error("the next request did not take the next row")
	}
	s.Reset()
	if _, err := src.Begin(t.Context(), &s); err == nil || stopped == nil || s.Class != load.ClassCanceled {
		t.Errorf("exhaustion: err %v, stopped %v, class %s", err, stopped, s.Class)
	}
}

func FuzzParse(f *testing.F) {
	f.Add("/u/{{id}}?x={{a|b}}{{")
	f.Add("{{{{x}}}}")
	f.Fuzz(func(t *testing.T, s string) {
		tp := Parse(s)
		if got := tp.Render(nil); tp.Static() && got != s {
			t.Fatalf("a static template rendered %q from %q", got, s)
		}
		// With every name missing and no defaults, rendering gives back the input.
		lits := 0
		for _, p := range tp.parts {
			if p.name != "" && p.hasDefault {
				lits++
			}
		}
		if lits == 0 && tp.Render(nil) != s {
			t.Fatalf("Render(nil) = %q, want the input %q", tp.Render(nil), s)
		}
	})
}

// TestTraceParent: each request gets new ids, written into its
// traceparent with the sampler's flag; TraceQuiet keeps the ids without
// the header; a request stopped in Begin (rows gone) is not traced.
func TestTraceParent(t *testing.T) {
	t.Parallel()
	odd := func(id *[16]byte) bool { return id[15]&1 == 1 }
	src := &Source{Trace: true, Sample: odd, Feed: &feed{rows: []Row{mapLookup{}, mapLookup{}, mapLookup{}}}}
	var s load.Sample
	seen := map[string]bool{}
	for range 3 {
		s.Reset()
		u, err := src.Begin(t.Context(), &s)
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("00-%x-%x-0%d", u.TraceID, u.SpanID, u.TraceID[15]&1)
		if u.TraceParent != want || !u.Traced || u.Sampled != odd(&u.TraceID) || seen[u.TraceParent] {
			t.Errorf("traceparent %q (traced %v, sampled %v), want a new %q", u.TraceParent, u.Traced, u.Sampled, want)
		}
		seen[u.TraceParent] = true
	}
	s.Reset()
	if u, err := src.Begin(t.Context(), &s); err == nil || s.User.(*User).Traced {
		t.Errorf("Begin after the rows ran out = %v, %v; want an error and no trace", u, err)
	}
	quiet := &Source{TraceQuiet: true}
	s.Reset()
	if u, _ := quiet.Begin(t.Context(), &s); u.TraceParent != "" || !u.Traced || u.TraceID == [16]byte{} {
		t.Errorf("TraceQuiet: traceparent %q, traced %v, id %x; want ids and no header", u.TraceParent, u.Traced, u.TraceID)
	}
}
