package har

import (
	"strings"
	"testing"
)

const rec = `{"log": {"version": "1.2", "entries": [
 {"request": {"method": "GET", "url": "https://api.example.com/users?page=1", "headers": [
   {"name": ":authority", "value": "api.example.com"}, {"name": "Accept", "value": "application/json"},
   {"name": "Cookie", "value": "sid=secret"}, {"name": "Authorization", "value": "Bearer secret"}, {"name": "Connection", "value": "keep-alive"}]}},
 {"request": {"method": "POST", "url": "https://api.example.com/users", "headers": [{"name": "Content-Type", "value": "application/json"}],
   "postData": {"mimeType": "application/json", "text": "{\"name\": \"a\"}"}}},
 {"request": {"method": "GET", "url": "https://cdn.example.com/app.js", "headers": []}},
 {"request": {"method": "GET", "url": "https://other.example.com/users", "headers": []}},
 {"request": {"method": "GET", "url": "data:image/png;base64,xx", "headers": []}},
 {"request": {"method": "GET", "url": "https://api.example.com/users?page=2", "headers": []}}
]}}`

func TestParse(t *testing.T) {
	t.Parallel()
	f, err := ParseFilter("host:API.example.com; method:get,post")
	if err != nil {
		t.Fatal(err)
	}
	reqs, removed, err := Parse([]byte(rec), f)
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs) != 3 || removed != 2 {
		t.Fatalf("got %d requests, %d removed: %+v", len(reqs), removed, reqs)
	}
	r := reqs[0]
	if r.Name != "GET /users" || r.URL != "https://api.example.com/users?page=1" || len(r.Headers) != 1 || r.Headers["Accept"] != "application/json" {
		t.Errorf("first = %+v", r)
	}
	if reqs[1].Method != "POST" || reqs[1].Body != `{"name": "a"}` || reqs[2].Name != "GET /users #2" {
		t.Errorf("second/third = %+v %+v", reqs[1], reqs[2])
	}
	all, _, _ := Parse([]byte(rec), Filter{})
	if len(all) != 4 {
		t.Errorf("unfiltered: %d requests, want 4 (no static asset, no data:)", len(all))
	}
}

func TestErrors(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ filter, data, want string }{
		{"", "not json", "export the recording as HAR"},
		{"method:DELETE", rec, "no request is left after filtering (6 entries"},
		{"path:/x", rec, `"path" is not a filter`},
		{"hostapi", rec, "is not key:values"},
	} {
		f, err := ParseFilter(tt.filter)
		if err == nil {
			_, _, err = Parse([]byte(tt.data), f)
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q/%q: err = %v, want %q", tt.filter, tt.data, err, tt.want)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add(rec, "host:api.example.com;method:GET")
	f.Add(`{"log": {"entries": [{"request": {"method": "", "url": "http://x/"}}]}}`, "")
	f.Fuzz(func(t *testing.T, data, filter string) {
		fl, err := ParseFilter(filter)
		if err != nil {
			return
		}
		reqs, _, err := Parse([]byte(data), fl)
		if err != nil {
			return
		}
		for _, r := range reqs {
			for k := range r.Headers {
				if dropped[strings.ToLower(k)] || strings.HasPrefix(k, ":") {
					t.Fatalf("header %q was replayed", k)
				}
			}
			if !strings.HasPrefix(r.URL, "http://") && !strings.HasPrefix(r.URL, "https://") {
				t.Fatalf("URL %q", r.URL)
			}
		}
	})
}
