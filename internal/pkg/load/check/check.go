package check

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/tidwall/gjson"

	"github.com/forgeload/forgeload/internal/pkg/load"
	"github.com/forgeload/forgeload/internal/pkg/load/extract"
)

// DefaultMaxBody is how much of a response body checks read when the
// config does not say (4 MiB).
const DefaultMaxBody = 4 << 20

// Spec is one check as written in a load config. Exactly one of Status,
// BodyContains, BodyNotContains, JSON and Header is set; Exists and
// Equals qualify JSON, Exists and Matches qualify Header. The zero value
// is not a valid check.
type Spec struct {
	Status          []int   // key: status
	BodyContains    *string // key: body_contains
	BodyNotContains *string // key: body_not_contains
	JSON            *string // key: json (a JSON path such as $.items[0].id)
	Exists          *bool   // key: exists
	Equals          *string // key: equals
	Header          *string // key: header
	Matches         *string // key: matches (a regular expression)
}

// Kind is what a check looks at.
type Kind uint8

// The kinds of check.
const (
	KindStatus Kind = iota + 1
	KindBodyContains
	KindBodyNotContains
	KindJSON
	KindHeader
)

// Key returns the config key of the kind.
func (k Kind) Key() string {
	switch k {
	case KindStatus:
		return "status"
	case KindBodyContains:
		return "body_contains"
	case KindBodyNotContains:
		return "body_not_contains"
	case KindJSON:
		return "json"
	case KindHeader:
		return "header"
	}
	return "unknown"
}

// Kind returns the kind s sets, and an error naming the keys when it sets
// none or several.
func (s Spec) Kind() (Kind, error) {
	var set []Kind
	if s.Status != nil {
		set = append(set, KindStatus)
	}
	if s.BodyContains != nil {
		set = append(set, KindBodyContains)
	}
	if s.BodyNotContains != nil {
		set = append(set, KindBodyNotContains)
	}
	if s.JSON != nil {
		set = append(set, KindJSON)
	}
	if s.Header != nil {
		set = append(set, KindHeader)
	}
	switch len(set) {
	case 1:
		return set[0], nil
	case 0:
		return 0, specErr("", "a check needs one of status, body_contains, body_not_contains, json or header (e.g. - status: [200])")
	}
	keys := make([]string, len(set))
	for i, k := range set {
		keys[i] = k.Key()
	}
	return 0, specErr("", "%s are set in one check: write each as its own list item", strings.Join(keys, " and "))
}

// SpecError is a problem with one check's keys: Key is the key at fault
// ("json", "matches"), or "" for the check as a whole.
type SpecError struct {
	Key string
	Msg string
}

func (e *SpecError) Error() string {
	if e.Key == "" {
		return e.Msg
	}
	return e.Key + ": " + e.Msg
}

func specErr(key, format string, args ...any) error {
	return &SpecError{Key: key, Msg: fmt.Sprintf(format, args...)}
}

// Check is one compiled check with its counters. Create it with
// [Compile]; it is safe for concurrent use.
type Check struct {
	name   string
	kind   Kind
	status []int
	needle []byte
	path   string // gjson path; "" with whole
	src    string // the JSON path as written
	whole  bool
	exists bool // json or header: want the value present (else absent)
	equals *string
	header string
	re     *regexp.Regexp
	err    error
	pass   atomic.Int64
	fail   atomic.Int64
}

// Error is the error of a request that failed a check. It is built once
// per check, so returning it does not allocate.
type Error struct {
	// Check is the failed check's name.
	Check string
}

func (e *Error) Error() string { return "check failed: " + e.Check }

// Compile checks s and compiles it; prefix starts the check's name, e.g.
// "checks[0]" or "endpoints[1].checks[0]". Errors name the key and the
// fix.
func Compile(prefix string, s Spec) (*Check, error) {
	k, err := s.Kind()
	if err != nil {
		return nil, err
	}
	c := &Check{kind: k, exists: true}
	if err := c.qualifiers(s); err != nil {
		return nil, err
	}
	switch k {
	case KindStatus:
		if len(s.Status) == 0 {
			return nil, specErr("status", "the list is empty: write the expected codes, e.g. status: [200, 201]")
		}
		for _, code := range s.Status {
			if code < 0 || code > 999 {
				return nil, specErr("status", "%d is not a status code: use HTTP codes from 100 to 999 (gRPC: 0 to 16)", code)
			}
		}
		c.status = append([]int(nil), s.Status...)
	case KindBodyContains, KindBodyNotContains:
		t := s.BodyNotContains
		if k == KindBodyContains {
			t = s.BodyContains
		}
		if *t == "" {
			return nil, specErr(k.Key(), "the text is empty: write the text to look for")
		}
		c.needle = []byte(*t)
	case KindJSON:
		p, err := extract.Path(*s.JSON)
		if err != nil {
			return nil, specErr("json", "%v", err)
		}
		c.path, c.whole, c.src = p, p == "", strings.TrimSpace(*s.JSON)
	case KindHeader:
		h := strings.TrimSpace(*s.Header)
		if h == "" || strings.ContainsAny(h, " :\r\n") {
			return nil, specErr("header", "%q is not a header name: write e.g. header: Content-Type", h)
		}
		c.header = http.CanonicalHeaderKey(h)
	}
	c.name = prefix + " " + c.text()
	c.err = &Error{Check: c.name}
	return c, nil
}

// qualifiers reads exists, equals and matches into c, refusing them
// where they do not belong.
func (c *Check) qualifiers(s Spec) error {
	k := c.kind
	if s.Equals != nil && k != KindJSON {
		return specErr("equals", "only a json check takes equals: add json: $.path, or remove equals")
	}
	if s.Matches != nil && k != KindHeader {
		return specErr("matches", "only a header check takes matches: add header: NAME, or remove matches")
	}
	if s.Exists != nil && k != KindJSON && k != KindHeader {
		return specErr("exists", "only a json or header check takes exists: add json: $.path or header: NAME, or remove exists")
	}
	if s.Exists != nil && (s.Equals != nil || s.Matches != nil) {
		return specErr("exists", "exists is implied by equals and matches: keep one")
	}
	if s.Exists != nil {
		c.exists = *s.Exists
	}
	c.equals = s.Equals
	if s.Matches != nil {
		re, err := regexp.Compile(*s.Matches)
		if err != nil {
			return specErr("matches", "%q is not a regular expression (Go RE2 syntax): %v", *s.Matches, err)
		}
		c.re = re
	}
	return nil
}

// maxShown is the most characters of a text a check's name quotes.
const maxShown = 40

func quote(s string) string {
	if r := []rune(s); len(r) > maxShown {
		s = string(r[:maxShown]) + "…"
	}
	return strconv.Quote(s)
}

// text describes the check, for its name.
func (c *Check) text() string {
	switch c.kind {
	case KindStatus:
		parts := make([]string, len(c.status))
		for i, s := range c.status {
			parts[i] = strconv.Itoa(s)
		}
		return "status in [" + strings.Join(parts, ", ") + "]"
	case KindBodyContains:
		return "body contains " + quote(string(c.needle))
	case KindBodyNotContains:
		return "body does not contain " + quote(string(c.needle))
	case KindJSON:
		p := c.src
		switch {
		case c.equals != nil:
			return "json " + p + " == " + quote(*c.equals)
		case c.exists:
			return "json " + p + " exists"
		}
		return "json " + p + " is absent"
	default:
		switch {
		case c.re != nil:
			return "header " + c.header + " matches " + quote(c.re.String())
		case c.exists:
			return "header " + c.header + " exists"
		}
		return "header " + c.header + " is absent"
	}
}

// Name returns the check's stable name: its place in the config and what
// it checks, e.g. `checks[1] body does not contain "error"`.
func (c *Check) Name() string { return c.name }

// Kind returns what the check looks at.
func (c *Check) Kind() Kind { return c.kind }

// NeedsBody reports whether the check reads the response body.
func (c *Check) NeedsBody() bool {
	return c.kind == KindBodyContains || c.kind == KindBodyNotContains || c.kind == KindJSON
}

// Response is what a check sees of one response. Header may be nil when
// no check needs it, Body when none needs the body.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// ok reports whether r passes c.
func (c *Check) ok(r *Response) bool {
	switch c.kind {
	case KindStatus:
		for _, s := range c.status {
			if s == r.Status {
				return true
			}
		}
		return false
	case KindBodyContains:
		return bytes.Contains(r.Body, c.needle)
	case KindBodyNotContains:
		return !bytes.Contains(r.Body, c.needle)
	case KindJSON:
		return c.jsonOK(r.Body)
	default:
		vs, found := r.Header[c.header]
		switch {
		case c.re != nil:
			for _, v := range vs {
				if c.re.MatchString(v) {
					return true
				}
			}
			return false
		case c.exists:
			return found
		}
		return !found
	}
}

func (c *Check) jsonOK(body []byte) bool {
	if !gjson.ValidBytes(body) {
		return false // not JSON (or cut at the size limit): no value is there
	}
	var v gjson.Result
	if c.whole {
		v = gjson.ParseBytes(body)
	} else {
		v = gjson.GetBytes(body, c.path)
	}
	switch {
	case c.equals != nil:
		if !v.Exists() {
			return false
		}
		if v.Type == gjson.String {
			return v.Str == *c.equals
		}
		return v.Raw == *c.equals
	case c.exists:
		return v.Exists()
	}
	return !v.Exists()
}

// Counts returns how many responses passed and failed c so far.
func (c *Check) Counts() (passed, failed int64) { return c.pass.Load(), c.fail.Load() }

// List is the checks that apply to one endpoint, in order. A nil List
// checks nothing.
type List []*Check

// NeedsBody reports whether any check in l reads the body.
func (l List) NeedsBody() bool {
	for _, c := range l {
		if c.NeedsBody() {
			return true
		}
	}
	return false
}

// NeedsHeader reports whether any check in l reads a header.
func (l List) NeedsHeader() bool {
	for _, c := range l {
		if c.kind == KindHeader {
			return true
		}
	}
	return false
}

// Only returns an error naming the first check in l whose kind is not in
// kinds, for a driver that cannot see that part of a response; what
// names the protocol ("protocol websocket").
func (l List) Only(what string, kinds ...Kind) error {
	for _, c := range l {
		ok := false
		for _, k := range kinds {
			ok = ok || c.kind == k
		}
		if !ok {
			keys := make([]string, len(kinds))
			for i, k := range kinds {
				keys[i] = k.Key()
			}
			return fmt.Errorf("check %s: %s has no %s to check: use %s", c.name, what, c.kind.Key(), strings.Join(keys, ", "))
		}
	}
	return nil
}

// Run runs every check in l on r, counting each pass and failure, and
// returns the first failing check's [*Error], or nil. It does not
// allocate.
func (l List) Run(r *Response) error {
	var err error
	for _, c := range l {
		if c.ok(r) {
			c.pass.Add(1)
			continue
		}
		c.fail.Add(1)
		if err == nil {
			err = c.err
		}
	}
	return err
}

// Suite is every check of a config, each once, in config order: the
// top-level checks, then each endpoint's. Build it with [New].
type Suite struct {
	all  []*Check
	top  List
	eps  []List
	body int64
}

// EndpointSpecs are the checks one endpoint adds to the top-level ones.
type EndpointSpecs struct {
	// Prefix names the endpoint's checks, e.g. "endpoints[1].checks".
	Prefix string
	Specs  []Spec
}

// New compiles the top-level checks and each endpoint's; maxBody bounds
// the body checks read, 0 meaning DefaultMaxBody. Errors name the check
// ("checks[1]: ...") and the fix, all at once. A config without checks
// gives a nil Suite, which checks nothing.
func New(top []Spec, eps []EndpointSpecs, maxBody int64) (*Suite, error) {
	s := &Suite{body: maxBody}
	if s.body <= 0 {
		s.body = DefaultMaxBody
	}
	var errs []error
	compile := func(prefix string, specs []Spec) List {
		var l List
		for i, sp := range specs {
			p := fmt.Sprintf("%s[%d]", prefix, i)
			c, err := Compile(p, sp)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", p, err))
				continue
			}
			l = append(l, c)
			s.all = append(s.all, c)
		}
		return l
	}
	s.top = compile("checks", top)
	for _, e := range eps {
		s.eps = append(s.eps, compile(e.Prefix, e.Specs))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if len(s.all) == 0 {
		return nil, nil
	}
	return s, nil
}

// Endpoint returns the checks of endpoint i (0-based): the top-level ones
// and its own. A nil Suite returns nil.
func (s *Suite) Endpoint(i int) List {
	if s == nil {
		return nil
	}
	if i < 0 || i >= len(s.eps) || len(s.eps[i]) == 0 {
		return s.top
	}
	return append(append(List(nil), s.top...), s.eps[i]...)
}

// All returns every check once, in config order.
func (s *Suite) All() List {
	if s == nil {
		return nil
	}
	return s.all
}

// MaxBody is how many bytes of a body checks read.
func (s *Suite) MaxBody() int64 {
	if s == nil {
		return DefaultMaxBody
	}
	return s.body
}

// Stats returns each check's counts so far, in config order; nil for a
// nil Suite.
func (s *Suite) Stats() []load.CheckStats {
	if s == nil {
		return nil
	}
	out := make([]load.CheckStats, len(s.all))
	for i, c := range s.all {
		p, f := c.Counts()
		out[i] = load.CheckStats{Name: c.name, Passed: p, Failed: f}
	}
	return out
}

// Of returns the checks of l of the given kinds, in order: a driver that
// runs some checks per session and others per message splits its list.
func (l List) Of(kinds ...Kind) List {
	var out List
	for _, c := range l {
		for _, k := range kinds {
			if c.kind == k {
				out = append(out, c)
				break
			}
		}
	}
	return out
}

// BodyKinds are the kinds that read a body or a message.
var BodyKinds = []Kind{KindBodyContains, KindBodyNotContains, KindJSON}
