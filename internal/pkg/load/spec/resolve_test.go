package spec

import (
	"testing"
)

func TestMix(t *testing.T) {
	t.Parallel()
	c := mustParse(t, `
target: https://api.example.com/v1/
method: PUT
headers: {Accept: application/json, X-Env: ci}
body: '{"top":1}'
rate: 1
duration: 1s
endpoints:
  - {name: list, path: '/users?limit=5'}
  - {name: root}
  - {name: post, method: post, url: https://other.example.com/x, headers: {X-Env: prod}, body_file: b.json}
`)
	got := c.Mix()
	want := []Endpoint{
		{Name: "list", Weight: 1, Method: "PUT", URL: "https://api.example.com/v1/users?limit=5", Path: "/users?limit=5",
			Headers: map[string]string{"Accept": "application/json", "X-Env": "ci"}, Body: `{"top":1}`},
		{Name: "root", Weight: 1, Method: "PUT", URL: "https://api.example.com/v1/",
			Headers: map[string]string{"Accept": "application/json", "X-Env": "ci"}, Body: `{"top":1}`},
		{Name: "post", Weight: 1, Method: "POST", URL: "https://other.example.com/x",
			Headers: map[string]string{"Accept": "application/json", "X-Env": "prod"}, BodyFile: "b.json"},
	}
	eq(t, "Mix", got, want)
	// The endpoints' maps are copies: changing one changes nothing else.
	got[0].Headers["Accept"] = "x"
	eq(t, "config headers after edit", c.Headers["Accept"], "application/json")

	single := mustParse(t, "target: https://x.example.com\nrate: 1\nduration: 1s\n").Mix()
	eq(t, "Mix without endpoints", single, []Endpoint{{Weight: 1, Method: "GET", URL: "https://x.example.com"}})
}

func TestParsedThresholds(t *testing.T) {
	t.Parallel()
	c := mustParse(t, base+"thresholds: |\n  http_req_duration:p99 < 300ms\n  http_req_failed:rate < 1%\n")
	ts, err := c.ParsedThresholds()
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 2 || ts[0].Value != 0.3 || ts[1].Value != 0.01 {
		t.Errorf("ParsedThresholds = %+v, want p99 0.3s and rate 0.01", ts)
	}
}
