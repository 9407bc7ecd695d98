package har

import (
	"encoding/json"
	"fmt"
	"net/url"
	"path"
	"strings"
)

// MaxSize is the largest HAR file read (64 MiB).
const MaxSize = 64 << 20

// Request is one imported request.
type Request struct {
	// Name is "METHOD /path", made unique with #2, #3… when repeated.
	Name, Method, URL, Body string
	Headers                 map[string]string
}

// Filter selects entries: by host (any of Hosts, case-insensitive) and by
// method (any of Methods); an empty list selects all.
type Filter struct {
	Hosts, Methods []string
}

// ParseFilter reads Crankfire's filter syntax: "host:a.example.com,b;method:GET,POST".
func ParseFilter(s string) (Filter, error) {
	var f Filter
	for part := range strings.SplitSeq(s, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		key, vals, ok := strings.Cut(part, ":")
		if !ok {
			return f, fmt.Errorf("har_filter %q: %q is not key:values (want e.g. host:api.example.com;method:GET,POST)", s, part)
		}
		var list []string
		for v := range strings.SplitSeq(vals, ",") {
			if v = strings.TrimSpace(v); v != "" {
				list = append(list, v)
			}
		}
		switch strings.ToLower(strings.TrimSpace(key)) {
		case "host":
			f.Hosts = append(f.Hosts, list...)
		case "method":
			for _, m := range list {
				f.Methods = append(f.Methods, strings.ToUpper(m))
			}
		default:
			return f, fmt.Errorf("har_filter %q: %q is not a filter (want host or method)", s, key)
		}
	}
	return f, nil
}

// dropped are the headers never replayed (lower case).
var dropped = map[string]bool{
	"connection": true, "keep-alive": true, "proxy-authenticate": true, "proxy-authorization": true,
	"te": true, "trailer": true, "trailers": true, "transfer-encoding": true, "upgrade": true,
	"host": true, "content-length": true,
	"authorization": true, "cookie": true, "x-api-key": true, "x-auth-token": true, "x-csrf-token": true, "x-xsrf-token": true,
}

// static are the file extensions of static assets, skipped as in Crankfire.
var static = map[string]bool{
	".js": true, ".map": true, ".css": true, ".png": true, ".jpg": true, ".jpeg": true, ".gif": true,
	".svg": true, ".ico": true, ".woff": true, ".woff2": true, ".ttf": true, ".eot": true,
}

type archive struct {
	Log struct {
		Entries []struct {
			Request struct {
				Method  string `json:"method"`
				URL     string `json:"url"`
				Headers []struct {
					Name  string `json:"name"`
					Value string `json:"value"`
				} `json:"headers"`
				PostData *struct {
					Text string `json:"text"`
				} `json:"postData"`
			} `json:"request"`
		} `json:"entries"`
	} `json:"log"`
}

// Parse reads a HAR document and returns the requests f selects, in
// recorded order. It fails when the document is not a HAR or when nothing
// is left after filtering; removed is how many sensitive headers were
// dropped, so the caller can say so.
func Parse(b []byte, f Filter) (reqs []Request, removed int, err error) {
	var a archive
	if err := json.Unmarshal(b, &a); err != nil {
		return nil, 0, fmt.Errorf("har_file: %w: export the recording as HAR (JSON with log.entries)", err)
	}
	seen := map[string]int{}
	for i, e := range a.Log.Entries {
		r := e.Request
		u, err := url.Parse(r.URL)
		if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
			continue // data:, blob:, ws: and broken entries are not replayable requests
		}
		method := strings.ToUpper(strings.TrimSpace(r.Method))
		if method == "" {
			return nil, 0, fmt.Errorf("har_file: entry %d has no method", i+1)
		}
		if static[strings.ToLower(path.Ext(u.Path))] || !match(f.Hosts, u.Hostname(), true) || !match(f.Methods, method, false) {
			continue
		}
		q := Request{Method: method, URL: r.URL, Headers: map[string]string{}}
		u.User = nil
		q.URL = u.String()
		for _, h := range r.Headers {
			name := strings.TrimSpace(h.Name)
			if name == "" || strings.HasPrefix(name, ":") {
				continue // HTTP/2 pseudo-headers
			}
			if dropped[strings.ToLower(name)] {
				if !hopByHop(name) {
					removed++
				}
				continue
			}
			q.Headers[name] = h.Value
		}
		if r.PostData != nil {
			q.Body = r.PostData.Text
		}
		name := method + " " + u.EscapedPath()
		if u.EscapedPath() == "" {
			name += "/"
		}
		seen[name]++
		if n := seen[name]; n > 1 {
			name = fmt.Sprintf("%s #%d", name, n)
		}
		q.Name = name
		reqs = append(reqs, q)
	}
	if len(reqs) == 0 {
		return nil, removed, fmt.Errorf("har_file: no request is left after filtering (%d entries; static assets and non-HTTP entries are skipped): check har_filter", len(a.Log.Entries))
	}
	return reqs, removed, nil
}

func hopByHop(name string) bool {
	switch strings.ToLower(name) {
	case "authorization", "cookie", "x-api-key", "x-auth-token", "x-csrf-token", "x-xsrf-token", "proxy-authorization":
		return false
	}
	return true
}

func match(list []string, v string, fold bool) bool {
	if len(list) == 0 {
		return true
	}
	for _, x := range list {
		if x == v || fold && strings.EqualFold(x, v) {
			return true
		}
	}
	return false
}
