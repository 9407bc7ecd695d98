package httpload

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/forgeload/forgeload/internal/pkg/load"
	"github.com/forgeload/forgeload/internal/pkg/load/vars"
)

// dynamic is the templated form of an endpoint whose URL, header values or
// body hold {{placeholders}}. Endpoints without any keep their prebuilt
// request and allocate nothing per request.
type dynamic struct {
	// origin is scheme://host of the URL when it has no placeholder; then
	// path is the templated request URI and the fast path can write it.
	origin  string
	path    *vars.Template
	url     *vars.Template // the whole URL
	headers []dynHeader
	body    *vars.Template
	method  string
	host    string // Host header, "" for the URL's host
	hasUA   bool
	auth    bool // add the user's Authorization header
}

type dynHeader struct {
	name  string
	value *vars.Template
}

// newDynamic returns the templated form of e, or nil when e has no
// placeholder.
func newDynamic(e Endpoint, method, host string, authed bool) *dynamic {
	templated := authed || vars.Has(e.URL) || vars.Has(string(e.Body))
	for _, v := range e.Headers {
		templated = templated || vars.Has(v)
	}
	if !templated {
		return nil
	}
	d := &dynamic{url: vars.Parse(e.URL), body: vars.Parse(string(e.Body)), method: method, host: host, auth: authed}
	if scheme, rest, ok := strings.Cut(e.URL, "://"); ok {
		hostPart, path, _ := strings.Cut(rest, "/")
		if !vars.Has(hostPart) {
			d.origin = scheme + "://" + hostPart
			d.path = vars.Parse("/" + path)
		}
	}
	for k, v := range e.Headers {
		switch {
		case strings.EqualFold(k, "Host"), strings.EqualFold(k, "Content-Length"):
			continue
		case strings.EqualFold(k, "User-Agent"):
			d.hasUA = true
		}
		d.headers = append(d.headers, dynHeader{name: k, value: vars.Parse(v)})
	}
	return d
}

// wireBufs are the buffers requests are rendered into.
var wireBufs = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// errBadValue is the error of a request whose placeholders put a space or
// a control character where the request line or a header cannot hold it.
var errBadValue = errors.New("a placeholder's value put a space, line break or control character into the request line or a header; fix the feeder row or extracted value")

// clean reports whether b holds no control character (and, unless
// spaceOK, no space).
func clean(b []byte, spaceOK bool) bool {
	for _, c := range b {
		if c < ' ' && c != '\t' || c == 0x7f || c == ' ' && !spaceOK {
			return false
		}
	}
	return true
}

// wire renders the HTTP/1.1 request for the fast path into dst.
func (d *dynamic) wire(dst []byte, hostHeader string, u *vars.User) ([]byte, error) {
	var l vars.Lookup = u
	dst = append(dst, d.method...)
	dst = append(dst, ' ')
	start := len(dst)
	dst = d.path.Append(dst, l)
	if i := bytes.IndexByte(dst[start:], '#'); i >= 0 {
		dst = dst[:start+i] // a fragment is not sent
	}
	if !clean(dst[start:], false) {
		return dst, errBadValue
	}
	dst = append(dst, " HTTP/1.1\r\nHost: "...)
	dst = append(dst, hostHeader...)
	dst = append(dst, "\r\n"...)
	for _, h := range d.headers {
		dst = append(dst, h.name...)
		dst = append(dst, ": "...)
		vs := len(dst)
		dst = h.value.Append(dst, l)
		if !clean(dst[vs:], true) {
			return dst, errBadValue
		}
		dst = append(dst, "\r\n"...)
	}
	if !d.hasUA {
		dst = append(dst, "User-Agent: forgeload\r\n"...)
	}
	if d.auth && u.Auth != "" {
		dst = append(dst, "Authorization: "...)
		dst = append(dst, u.Auth...)
		dst = append(dst, "\r\n"...)
	}
	if u.TraceParent != "" {
		dst = append(dst, "traceparent: "...)
		dst = append(dst, u.TraceParent...)
		dst = append(dst, "\r\n"...)
	}
	// The body is rendered after the headers; its length is patched in.
	bodyStart := -1
	if !d.body.Static() || len(d.body.Raw()) > 0 || d.method == "POST" || d.method == "PUT" || d.method == "PATCH" {
		dst = append(dst, "Content-Length: "...)
		bodyStart = len(dst)
		dst = append(dst, "0000000000\r\n\r\n"...) // room for the length
	} else {
		dst = append(dst, "\r\n"...)
	}
	if bodyStart < 0 {
		return dst, nil
	}
	bodyAt := len(dst)
	dst = d.body.Append(dst, l)
	n := strconv.AppendInt(nil, int64(len(dst)-bodyAt), 10) // ≤ 10 digits; small, on the stack
	// Shift the body left over the unused digits of the placeholder.
	pad := 10 - len(n)
	copy(dst[bodyStart:], n)
	copy(dst[bodyStart+len(n):], dst[bodyStart+10:])
	return dst[:len(dst)-pad], nil
}

// doDynamic sends a templated request.
func (d *Driver) doDynamic(ctx context.Context, ep *endpoint, u *vars.User, s *load.Sample) error {
	dy := ep.dyn
	var l vars.Lookup = u
	if ep.fast && dy.path != nil {
		bp := wireBufs.Get().(*[]byte)
		w, err := dy.wire((*bp)[:0], ep.hostHeader, u)
		if err == nil {
			req := h1Request{addr: ep.h1.addr, head: ep.h1.head, wire: w}
			s.BytesOut = 0
			err = statusChecks(ep.checks, s, d.h1.do(ctx, &req, d.timeout, s))
		} else {
			s.Class = load.ClassOther
			err = fmt.Errorf("http request %s: %w", ep.name, err)
		}
		*bp = w
		wireBufs.Put(bp)
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	var body io.Reader
	b := dy.body.Append(nil, l)
	if len(b) > 0 {
		body = bytes.NewReader(b)
	}
	target := dy.url.Render(l)
	req, err := http.NewRequestWithContext(ctx, dy.method, target, body)
	if err != nil {
		s.Class = load.ClassOther
		return fmt.Errorf("http request %s: the URL rendered from the endpoint's placeholders is not valid: %w", ep.name, err)
	}
	if dy.host != "" {
		req.Host = dy.host
	}
	for _, h := range dy.headers {
		req.Header.Set(h.name, h.value.Render(l))
	}
	if dy.auth && u.Auth != "" {
		req.Header.Set("Authorization", u.Auth)
	}
	if u.TraceParent != "" {
		req.Header.Set("Traceparent", u.TraceParent)
	}
	return d.send(req, ep, int64(len(b)+len(target)), s, u)
}
