package report

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"html/template"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestMaskEscapedAndEncodedForms: a secret quoted by %q or JSON (where "
// and \ are escaped), URL-encoded, or base64-encoded at any offset inside a
// longer text is masked as well as the plain value.
func TestMaskEscapedAndEncodedForms(t *testing.T) {
	t.Parallel()
	const secret = `pa"ss\wo rd/+?&=é<|>`
	r := New(newFakeForge(), 1, 0, Options{Masks: []string{secret}})
	raw, _ := json.Marshal(map[string]string{"password": secret})
	for name, text := range map[string]string{
		"plain":      "x " + secret + " y",
		"%q":         fmt.Sprintf("bad value %q for key", secret),
		"%+q":        fmt.Sprintf("bad value %+q for key", secret),
		"json":       string(raw),
		"query":      "https://h/?p=" + url.QueryEscape(secret) + "&x=1",
		"path":       "https://h/" + url.PathEscape(secret) + "/x",
		"base64 @0":  base64.StdEncoding.EncodeToString([]byte(secret + "tail")),
		"base64 @1":  base64.StdEncoding.EncodeToString([]byte("1" + secret + "tail")),
		"base64 @2":  base64.StdEncoding.EncodeToString([]byte("12" + secret + "tail")),
		"base64url":  base64.RawURLEncoding.EncodeToString([]byte("1" + secret)),
		"base64 raw": "Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte("user:"+secret)),
		"html":       "<td>" + html.EscapeString(secret) + "</td>",
		"md cell":    "| " + strings.NewReplacer("|", `\|`, "<", "&lt;", ">", "&gt;").Replace(secret) + " | 3 |",
	} {
		got := r.Mask(text)
		if !strings.Contains(got, "***") {
			t.Errorf("%s: %q is not masked in %q", name, secret, got)
		}
	}
	// The same in rows, through Logf with %q.
	r.Logf(-1, "config: unknown value %q", secret)
	if rows := storedRows(t, r); len(rows) != 1 || rows[0] != "config: unknown value \"***\"" {
		t.Fatalf("rows = %q", rows)
	}
}

// TestMaskOverlappingSecrets: where two secrets overlap, both are hidden
// whole (a left-to-right replacer masks the first and prints the rest of
// the second).
func TestMaskOverlappingSecrets(t *testing.T) {
	t.Parallel()
	m := newMasker("abcdef", "xab")
	for in, want := range map[string]string{
		"xabcdef!":      "***!",
		"abcdefxab":     "***",
		"1 xab 2abcdef": "1 *** 2***",
		"abcde xa":      "abcde xa",
	} {
		if got := m.apply(in); got != want {
			t.Errorf("apply(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestAddMaskIsIncremental: adding one more mask to a job that already has
// thousands costs a few allocations, not a rebuild of the whole masker
// (which made 20,000 ::add-mask:: lines take 14 s).
func TestAddMaskIsIncremental(t *testing.T) {
	r := New(newFakeForge(), 1, 0, Options{})
	for i := range 5000 {
		if err := r.AddJobMask(fmt.Sprintf("mask-value-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	allocs := testing.AllocsPerRun(100, func() {
		n++
		_ = r.AddJobMask(fmt.Sprintf("another-value-%d", n))
	})
	// Each value has about a dozen forms (escapes, encodings); a rebuild
	// allocates in proportion to the 5,000 values already there.
	if allocs > 200 {
		t.Fatalf("AddJobMask allocates %.0f times with 5,000 masks, want a cost independent of their number", allocs)
	}
	if got := r.Mask("x mask-value-4999 another-value-7 y"); got != "x *** *** y" {
		t.Fatalf("Mask = %q", got)
	}
}

// TestJobMaskCap: past MaxJobMasks values a job's ::add-mask:: is refused
// with an error that says the value is not masked; the values added before
// and the runner's own masks keep working.
func TestJobMaskCap(t *testing.T) {
	t.Parallel()
	r := New(newFakeForge(), 1, 0, Options{Masks: []string{"task-secret"}})
	for i := range MaxJobMasks {
		if err := r.AddJobMask(fmt.Sprintf("v%04d", i)); err != nil {
			t.Fatalf("mask %d: %v", i, err)
		}
	}
	if err := r.AddJobMask("v0001"); err != nil {
		t.Fatalf("a value masked already counts again: %v", err)
	}
	err := r.AddJobMask("one-too-many")
	if err == nil || !strings.Contains(err.Error(), "NOT masked") || !strings.Contains(err.Error(), fmt.Sprint(MaxJobMasks)) {
		t.Fatalf("AddJobMask past the cap = %v, want an error naming the limit", err)
	}
	r.AddMask("runner-derived")
	if got := r.Mask("v0000 v9999 one-too-many task-secret runner-derived"); got != "*** *** one-too-many *** ***" {
		t.Fatalf("Mask = %q", got)
	}
	big := strings.Repeat("b", MaxJobMaskBytes+1)
	if err := New(newFakeForge(), 1, 0, Options{}).AddJobMask(big); err == nil {
		t.Fatal("a value over MaxJobMaskBytes was accepted")
	}
}

// TestLongLineKeepsCharacters: an endless line of multi-byte characters is
// cut between characters, never into two U+FFFD.
func TestLongLineKeepsCharacters(t *testing.T) {
	t.Parallel()
	for _, limit := range []int{7, 8, 9, 10} {
		r := New(newFakeForge(), 1, 0, Options{Masks: []string{"s3cret"}})
		r.lineLimit = limit
		w := r.Writer(-1)
		line := strings.Repeat("é€😀", 40) + "s3cret" + strings.Repeat("ü", 30)
		for i := 0; i < len(line); i += 5 {
			io.WriteString(w, line[i:min(i+5, len(line))])
		}
		io.WriteString(w, "\n")
		rows := storedRows(t, r)
		if got, want := strings.Join(rows, ""), strings.Replace(line, "s3cret", "***", 1); got != want {
			t.Fatalf("limit %d: rows %q, want them to join to %q", limit, rows, want)
		}
		if len(rows) < 2 {
			t.Fatalf("limit %d: the line was not cut: %q", limit, rows)
		}
	}
}

// FuzzMaskForms checks that a secret inside a longer text is masked in
// every form maskForms promises.
func FuzzMaskForms(f *testing.F) {
	f.Add(`pa"ss\word`, "pre ", " post")
	f.Add("tok-123456", "", "")
	f.Add("a\tb\x01c€", "{\"k\":", "}")
	f.Fuzz(func(t *testing.T, secret, before, after string) {
		secret = strings.TrimSpace(secret)
		if len(secret) < 6 || strings.Contains(secret, "\n") || strings.ContainsAny(before+after, "\n") {
			t.Skip("a one-line secret of at least 6 bytes")
		}
		m := newMasker(secret)
		quoted := quoteInner(before + secret + after)
		if got := m.apply(quoted); strings.Contains(got, quoteInner(secret)) {
			t.Fatalf("%%q form not masked: %q", got)
		}
		for off := range 3 {
			pre := strings.Repeat("p", off)
			enc := base64.StdEncoding.EncodeToString([]byte(pre + secret + after))
			got := m.apply(enc)
			if !strings.Contains(got, maskText) {
				t.Fatalf("base64 at offset %d not masked: %q", off, got)
			}
		}
		if got := m.apply(before + url.QueryEscape(secret) + after); strings.Contains(got, url.QueryEscape(secret)) {
			t.Fatalf("query form not masked: %q", got)
		}
	})
}

// quoteInner is the inside of %q.
func quoteInner(s string) string {
	q := fmt.Sprintf("%q", s)
	return q[1 : len(q)-1]
}

// FuzzLongLineCut writes an unfinished line with two secrets through a
// Writer with a small line limit, in pieces, and checks what the forced
// cuts must keep: no row, and no two rows joined, show a secret; every row
// is valid UTF-8; and, for valid UTF-8 input, the rows join to exactly the
// masked line (no byte lost, no character split into two U+FFFD).
func FuzzLongLineCut(f *testing.F) {
	f.Add("xx€é", "s3cret", "tok-9", "yyy😀", uint8(5), uint8(7))
	f.Add("", "aaa", "aaaa", "aaaaaaaaaaaa", uint8(1), uint8(3))
	f.Add("é", "éé", "ééé", "éééééééé", uint8(2), uint8(4))
	f.Fuzz(func(t *testing.T, filler, s1, s2, tail string, chunk, limit uint8) {
		s1, s2 = strings.TrimSpace(s1), strings.TrimSpace(s2)
		for _, s := range []string{s1, s2} {
			if len(s) < MinMaskLen || strings.ContainsAny(s, "*\n\r") || !utf8.ValidString(s) || strings.ContainsRune(s, utf8.RuneError) {
				t.Skip("not a maskable secret")
			}
		}
		if strings.ContainsAny(filler+tail, "\n\r") {
			t.Skip("one line")
		}
		r := New(newFakeForge(), 1, 0, Options{Masks: []string{s1, s2}})
		r.lineLimit = int(limit%32) + 1
		line := strings.Repeat(filler+s1+filler+s2, 4) + tail
		w := r.Writer(-1)
		step := int(chunk%13) + 1
		for i := 0; i < len(line); i += step {
			io.WriteString(w, line[i:min(i+step, len(line))])
		}
		w.(*lineWriter).flush()
		rows := storedRows(t, r)
		joined := strings.Join(rows, "")
		for _, s := range []string{s1, s2} {
			if strings.Contains(joined, s) {
				t.Fatalf("secret %q readable across rows %q", s, rows)
			}
		}
		for _, row := range rows {
			if !utf8.ValidString(row) {
				t.Fatalf("row %q is not valid UTF-8", row)
			}
		}
		if utf8.ValidString(line) && !strings.ContainsRune(line, utf8.RuneError) && strings.ContainsRune(joined, utf8.RuneError) {
			t.Fatalf("a character was split: rows %q", rows)
		}
	})
}

// jwtLike returns n distinct secrets that share their first 36 bytes, as
// JSON Web Tokens signed with one algorithm do.
func jwtLike(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkw%06d", i)
	}
	return out
}

// BenchmarkAddMaskSharedPrefix: adding the 5,001st of many values with one
// prefix. Its cost should not grow with the values already there.
func BenchmarkAddMaskSharedPrefix(b *testing.B) {
	m := newMasker(jwtLike(5000)...)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		m.add(fmt.Sprintf("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJhZG1pbiJ9%09d", i))
	}
}

// BenchmarkMaskSharedPrefix: masking a log line with two tokens, one of
// them a secret, in a job with 5,000 secrets that share the tokens' prefix.
func BenchmarkMaskSharedPrefix(b *testing.B) {
	m := newMasker(jwtLike(5000)...)
	line := []byte("Authorization: Bearer eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkw004999 and eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJub2JvZHkifQ")
	b.ReportAllocs()
	for b.Loop() {
		if rows := cleanLine(m, line); len(rows) != 1 || !strings.Contains(rows[0], "Bearer *** and eyJ") {
			b.Fatalf("rows %q", rows)
		}
	}
}

// TestMaskHTMLTemplateAndHeaderForms: a secret is masked where html/template
// wrote it ('+' as &#43;, which html.EscapeString leaves alone) and inside
// a header name net/http canonicalised.
func TestMaskHTMLTemplateAndHeaderForms(t *testing.T) {
	t.Parallel()
	const secret = "ep+S3cr3t-name"
	m := newMasker(secret)
	var page strings.Builder
	if err := template.Must(template.New("").Parse(`<td data-v="{{.}}">{{.}}</td>`)).Execute(&page, secret); err != nil {
		t.Fatal(err)
	}
	h := http.Header{}
	h.Set("x-"+secret, "v")
	h.Set(secret+"-x", "v")
	for _, s := range []string{page.String(), fmt.Sprint(h)} {
		if got := m.apply(s); strings.Contains(strings.ToLower(got), "s3cr3t") {
			t.Errorf("apply(%q) = %q, want the secret masked", s, got)
		}
	}
}
