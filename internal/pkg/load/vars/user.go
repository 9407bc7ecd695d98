package vars

import (
	"context"
	"encoding/binary"
	"errors"
	"math/rand/v2"

	"github.com/forgeload/forgeload/internal/pkg/load"
)

// Row is one feeder record.
type Row interface {
	Lookup
}

// Feed hands out feeder rows, each to one request.
type Feed interface {
	// Next returns the next row, or an error wrapping ErrExhausted when
	// every row has been used. ctx is the request's: a feed shared with
	// other hosts may wait on it for its next rows.
	Next(ctx context.Context) (Row, error)
}

// ErrExhausted is wrapped by a Feed's error when its rows are used up.
var ErrExhausted = errors.New("feeder exhausted")

// User is one virtual user's state, kept in load.Sample.User between its
// requests. It is used by one goroutine at a time.
type User struct {
	// Vars are the values extracted from this user's earlier responses.
	Vars map[string]string
	// Row is the feeder row of the current request, nil without a feeder.
	Row Row
	// Auth is the Authorization value of the current request ("Bearer …",
	// "Basic …"), empty without Source.Auth. It is a secret: never log it.
	Auth string
	// TraceParent is the W3C traceparent header of the current request,
	// empty without Source.Trace. Traced says the request has trace ids
	// (Source.Trace or Source.TraceQuiet): TraceID and SpanID, and Sampled
	// its sampled flag.
	TraceParent string
	Traced      bool
	TraceID     [16]byte
	SpanID      [8]byte
	Sampled     bool
	trace       [55]byte
}

// Lookup resolves name from the user's variables, then the feeder row.
func (u *User) Lookup(name string) (string, bool) {
	if v, ok := u.Vars[name]; ok {
		return v, true
	}
	if u.Row != nil {
		return u.Row.Lookup(name)
	}
	return "", false
}

// Set stores an extracted variable.
func (u *User) Set(name, value string) {
	if u.Vars == nil {
		u.Vars = map[string]string{}
	}
	u.Vars[name] = value
}

// Source prepares the variables of each request. The zero value (no feed)
// gives every request its user's variables only.
type Source struct {
	// Feed, if set, gives each request a new row; a retry (Attempts > 1)
	// keeps the row of its first attempt.
	Feed Feed
	// OnExhausted, if set, is called once with the error when the feed
	// runs out; the plan stops the run there.
	OnExhausted func(error)
	// Auth, if set, gives each request its Authorization value, which
	// replaces the one the config's headers set. Its error fails the
	// request (class other) and must not contain the secret.
	Auth func(ctx context.Context) (string, error)
	// Trace gives each request a new W3C traceparent (a random trace and
	// span id).
	Trace bool
	// Sample, if set, decides from the trace id whether a traceparent is
	// sampled (its flags 01, else 00); nil samples every one.
	Sample func(traceID *[16]byte) bool
	// TraceQuiet gives each request trace ids, as Trace does, but sends
	// no traceparent (tracing.propagate: false with an exporter).
	TraceQuiet bool
}

// PerRequest reports whether every request needs Begin: with a feed or
// auth. It is false for a nil Source.
func (src *Source) PerRequest() bool {
	return src != nil && (src.Feed != nil || src.Auth != nil || src.Trace || src.TraceQuiet)
}

// Headers reports whether src adds headers to every request
// (Authorization, traceparent).
func (src *Source) Headers() bool { return src != nil && (src.Auth != nil || src.Trace) }

// Begin returns the state of the user owning s, with the row of this
// request. On feeder exhaustion it returns the error; the request must not
// be sent.
func (src *Source) Begin(ctx context.Context, s *load.Sample) (*User, error) {
	u, _ := s.User.(*User)
	if u == nil {
		u = &User{}
		s.User = u
	}
	if src == nil {
		return u, nil
	}
	// Traced only once the request will be sent: a request stopped here
	// (no token, no row) has no span.
	u.Traced = false
	if src.Auth != nil {
		a, err := src.Auth(ctx)
		if err != nil {
			s.Class = load.ClassOther
			s.Unsent = load.DropAuth
			if ctx.Err() != nil {
				s.Unsent = load.DropCanceled
			}
			return nil, err
		}
		u.Auth = a
	}
	traced := src.Trace || src.TraceQuiet
	if traced {
		u.newTraceParent(src.Sample)
		if !src.Trace {
			u.TraceParent = ""
		}
	}
	if src.Feed == nil || s.Attempts > 1 {
		u.Traced = traced
		return u, nil
	}
	row, err := src.Feed.Next(ctx)
	if err != nil {
		u.Row = nil
		s.Unsent = load.DropCanceled
		if errors.Is(err, ErrExhausted) {
			s.Unsent = load.DropFeeder
			if src.OnExhausted != nil {
				src.OnExhausted(err)
			}
		}
		s.Class = load.ClassCanceled
		return nil, err
	}
	u.Row = row
	u.Traced = traced
	return u, nil
}

// newTraceParent sets TraceParent to "00-<trace id>-<span id>-<flags>",
// with flags 01 when sample (nil: always) samples the trace id, else 00.
func (u *User) newTraceParent(sample func(*[16]byte) bool) {
	const hex = "0123456789abcdef"
	b := u.trace[:]
	copy(b, "00-")
	// Never all zeros; bytes 8-15 stay uniform, as ratio samplers read them.
	binary.LittleEndian.PutUint64(u.TraceID[0:], rand.Uint64()|1)
	binary.LittleEndian.PutUint64(u.TraceID[8:], rand.Uint64())
	binary.LittleEndian.PutUint64(u.SpanID[:], rand.Uint64()|1)
	for i, c := range u.TraceID {
		b[3+2*i], b[4+2*i] = hex[c>>4], hex[c&15]
	}
	b[35] = '-'
	for i, c := range u.SpanID {
		b[36+2*i], b[37+2*i] = hex[c>>4], hex[c&15]
	}
	u.Sampled = sample == nil || sample(&u.TraceID)
	if u.Sampled {
		copy(b[52:], "-01")
	} else {
		copy(b[52:], "-00")
	}
	u.TraceParent = string(b)
}
