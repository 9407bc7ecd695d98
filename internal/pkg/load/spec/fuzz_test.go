package spec

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParseConfig checks that no input makes the parser, Validate or
// Override panic, and that Parse returns either a config or an error made
// of *Error values.
func FuzzParseConfig(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join(examplesDir, "*.*"))
	for _, p := range files {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
	for _, s := range []string{
		base,
		"{\"target\": \"https://x\", \"rate\": 1e309}",
		"a: &a [*a]",
		"x: &x {y: *x}\ntarget: *x",
		"endpoints: [{extractors: [{}]}, null, []]",
		"vus: {stages: [null, {target: -1}]}\nthink_time: {max: 1s}",
		"load_patterns: [{type: step, steps: [[]]}]\nthresholds: |\n  http_req_duration{endpoint:x}:p99 < 1s\n",
		"load_patterns: [{name: w, type: constant, rps: 1, duration: 1s}]\nthresholds:\n  - http_req_duration{phase:w}:p99 < 1s\n  - {expr: 'http_req_failed:rate < 1%', abort_on_fail: true, delay: 1s}\n",
		"vus: {stages: [{name: s, duration: 1s, target: 1}]}\nthresholds: [{expr: null}, {delay: 1s}, 'http_requests{phase:s}:count > 1']\n",
		"distributed: null\nauth: {scopes: x}\ngrpc: {metadata: {a: [b]}}",
		"? !!binary aGk=\n: 1",
		"target: http://x\nchecks: [{status: [200, 201]}, {body_not_contains: error}, {json: $.items[0].id, exists: true}]\n",
		"target: http://x\nchecks: [{header: Content-Type, matches: '^application/(json'}, {json: '$[', equals: 1}, {status: []}]\n",
		"endpoints: [{url: http://x, checks: [{status: 200, json: $.a}, {exists: false}, null, [1]]}]\nchecks_max_body: -1\n",
		"protocol: sse\ntarget: http://x\nchecks: {status: 200}\n",
		"target: http://x/a?b\nrate: 1\nbaseline_target: http://y:8080\nbaseline_limits: [p99=10%, error_rate=0.5]\n",
		"target: http://x\nbaseline_target: 'http://y/p?q#f'\nbaseline_limits: [nope=1, p99=-1, p50=x%]\n",
		"{",
		"---\n---\n",
		"\xef\xbb\xbf{}",
		// Mixed-protocol configs: one endpoint of each protocol, blocks of
		// the config and of endpoints; then blocks on the wrong endpoint.
		"target: http://x\nrate: 1\nwebsocket: {messages: [a]}\ngrpc: {proto_file: p, service: a.S, method: M}\nendpoints:\n  - {path: /a}\n  - {protocol: websocket, url: 'ws://x/c', websocket: {expect_replies: true}}\n  - {protocol: sse, path: /e, sse: {max_events: 2}}\n  - {protocol: grpc, target: 'x:1', grpc: {tls: true}}\nchecks: [{body_contains: a}]\n",
		"endpoints: [{protocol: GRPC, url: 'grpcs://x:1/'}, {protocol: websocket, sse: null, grpc: {metadata: {a: b}}, body: x}, {protocol: sse, extractors: [{}]}]\nbaseline_target: http://y\n",
		"root:*:19000:0:99999:7:::\nbin:*:19000:0:99999:7:::\n",
		`{"id": 1, "uuid": "u", "token": "s3cret-token-value", "address": "http://x"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse("fuzz.yaml", data)
		if err != nil {
			if c != nil {
				t.Fatalf("Parse returned a config and an error %v", err)
			}
			var se *Error
			if !errors.As(err, &se) {
				t.Fatalf("Parse error %T (%v) holds no *spec.Error", err, err)
			}
			if strings.Contains(err.Error(), "not a load config") {
				// Such a file may be anything: the error quotes none of it.
				for _, l := range strings.Split(string(data), "\n") {
					if l = strings.TrimSpace(l); len(l) >= 12 && strings.Contains(err.Error(), l) {
						t.Fatalf("Parse error %q quotes the line %q of a file that is not a load config", err, l)
					}
				}
			}
			return
		}
		if c.Validate() == nil {
			// What the build reads of a valid config.
			_ = c.Mix()
			_ = c.Protocols()
			_ = c.Mixed()
		}
		_, _ = c.CheckSuite()
		_ = c.Override(map[string]string{"rate": "5", "vus": "2", "distributed.workers": "3"})
		_ = c.Validate()
	})
}

// FuzzOverride checks inline keys and values, which come straight from a
// workflow's with: block or flags: never a panic, and errors are *Error.
func FuzzOverride(f *testing.F) {
	for _, kv := range [][2]string{
		{"rate", "500"}, {"duration", "1m"}, {"headers", "X-A: b"}, {"distributed.workers", "3"},
		{"load_patterns", "[{type: ramp, to_rps: 5, duration: 1s}]"}, {"vus", "{stages: [{duration: 1s, target: 2}]}"},
		{"thresholds", "http_req_duration:p99 < 1s\n# c\n"}, {"endpoints", "- {name: a, path: /a}"},
		{"arrival.model", "poisson"}, {"think_time", "{min: 1s}"}, {"bogus", "1"}, {"auth", "{client_secret: [x]}"},
		{"checks", "- status: [200]\n- json: $.a\n  equals: 1\n"}, {"checks", "{status: x}"}, {"checks_max_body", "1e3"},
		{"endpoints", "- {protocol: websocket, url: 'ws://x/c', websocket: {messages: [a]}}\n- {protocol: sse, path: /e}"},
	} {
		f.Add(kv[0], kv[1])
	}
	f.Fuzz(func(t *testing.T, key, value string) {
		c, err := Parse("f.yaml", []byte(base))
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Override(map[string]string{key: value}); err != nil {
			var se *Error
			if !errors.As(err, &se) {
				t.Fatalf("Override error %T (%v) holds no *spec.Error", err, err)
			}
			return
		}
		_ = c.Validate()
		_ = c.Mix()
		_, _ = c.CheckSuite()
	})
}
