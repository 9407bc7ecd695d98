package extract

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/forgeload/forgeload/internal/pkg/load/vars"
)

// MaxBody is how much of a response body extractors see (1 MiB).
const MaxBody = 1 << 20

// Extractor takes one value from a response. Create it with [New]; it is
// immutable and safe for concurrent use.
type Extractor struct {
	// Var is the variable the value is stored in.
	Var string
	// OnError also extracts from 4xx and 5xx responses.
	OnError bool
	path    string // gjson path; "" with whole for $
	whole   bool
	re      *regexp.Regexp
}

// New checks an extractor's fields and compiles it. Exactly one of
// jsonpath and regex must be set.
func New(jsonpath, regex, name string, onError bool) (*Extractor, error) {
	if strings.TrimSpace(name) == "" {
		return nil, errors.New("var is required: the name later requests use as {{name}}")
	}
	e := &Extractor{Var: name, OnError: onError}
	switch {
	case jsonpath != "" && regex != "":
		return nil, errors.New("jsonpath and regex are both set: keep one")
	case jsonpath != "":
		p, err := Path(jsonpath)
		if err != nil {
			return nil, err
		}
		e.path, e.whole = p, p == ""
	case regex != "":
		re, err := regexp.Compile(regex)
		if err != nil {
			return nil, fmt.Errorf("regex %q: %w", regex, err)
		}
		e.re = re
	default:
		return nil, errors.New("one of jsonpath or regex is required")
	}
	return e, nil
}

// Path turns a Crankfire JSON path into gjson syntax: "$" is the whole
// body (""), "$.a.b" and "a.b" are the same, and "items[0].id" is
// "items.0.id".
func Path(p string) (string, error) {
	p = strings.TrimSpace(p)
	switch {
	case p == "$":
		return "", nil
	case strings.HasPrefix(p, "$."):
		p = p[2:]
	case strings.HasPrefix(p, "$["):
		p = p[1:]
	}
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c != '[' {
			b.WriteByte(c)
			continue
		}
		j := strings.IndexByte(p[i:], ']')
		if j < 0 {
			return "", fmt.Errorf("jsonpath %q: [ without ]", p)
		}
		idx := strings.Trim(p[i+1:i+j], `'"`)
		if idx == "" {
			return "", fmt.Errorf("jsonpath %q: empty []", p)
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(idx)
		i += j
	}
	out := strings.TrimPrefix(b.String(), ".")
	if out == "" {
		return "", fmt.Errorf("jsonpath %q selects nothing: write e.g. $.user.id", p)
	}
	return out, nil
}

// Extract returns the value in body, and false when there is none.
func (e *Extractor) Extract(body []byte) (string, bool) {
	if e.re != nil {
		m := e.re.FindSubmatch(body)
		switch {
		case m == nil:
			return "", false
		case len(m) > 1:
			return string(m[1]), true
		}
		return string(m[0]), true
	}
	if e.whole {
		if !gjson.ValidBytes(body) {
			return "", false
		}
		return strings.TrimSpace(string(body)), true
	}
	r := gjson.GetBytes(body, e.path)
	if !r.Exists() {
		return "", false
	}
	return r.String(), true
}

// Apply runs exs on a response with the given status and stores what they
// find in u. A value that is not found leaves the variable as it was, so a
// placeholder keeps its earlier value or its default.
func Apply(exs []*Extractor, status int, body []byte, u *vars.User) {
	failed := status >= 400
	for _, e := range exs {
		if failed && !e.OnError {
			continue
		}
		if v, ok := e.Extract(body); ok {
			u.Set(e.Var, v)
		}
	}
}
