package spec

import (
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

func mustParse(t *testing.T, src string) *Config {
	t.Helper()
	c, err := Parse("test.yaml", []byte(src))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return c
}

// TestParseCrankfireSpellings checks the spellings Crankfire accepts through
// viper: any case, '_' or '-', arrival as a string, url as target, and a
// single threshold string.
func TestParseCrankfireSpellings(t *testing.T) {
	t.Parallel()
	c := mustParse(t, `
Target: https://x.example.com
bodyFile: body.json
Load-Patterns:
  - {type: SPIKE, rps: 5, duration: 10}
arrival: Poisson
endpoints:
  - {name: a, target: https://y.example.com/a}
thresholds: "http_req_failed:rate < 0.01"
HTML_OUTPUT: report.html
dashboard: true
har_filter: "host:example.com"
`)
	eq(t, "Target", c.Target, "https://x.example.com")
	eq(t, "BodyFile", c.BodyFile, "body.json")
	eq(t, "Patterns", c.Patterns, []Pattern{{Type: PatternSpike, RPS: 5, Duration: 10 * time.Second}})
	eq(t, "Arrival", c.Arrival.Model, ArrivalPoisson)
	eq(t, "Endpoints[0].URL", c.Endpoints[0].URL, "https://y.example.com/a")
	eq(t, "Thresholds", c.Thresholds, []string{"http_req_failed:rate < 0.01"})
	eq(t, "HTMLOutput", c.HTMLOutput, "report.html")
	eq(t, "Dashboard", c.Dashboard, true)
	eq(t, "HARFilter", c.HARFilter, "host:example.com")
	eq(t, "Has(load_patterns[0].rps)", c.Has("load_patterns[0].rps"), true)
	eq(t, "Has(seed)", c.Has("seed"), false)
}

func TestParseValues(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		src   string
		check func(t *testing.T, c *Config)
	}{
		{"defaults", "target: https://x.example.com", func(t *testing.T, c *Config) {
			eq(t, "Method", c.Method, DefaultMethod)
			eq(t, "Timeout", c.Timeout, DefaultTimeout)
			eq(t, "Arrival", c.Arrival.Model, ArrivalUniform)
			eq(t, "Protocol", c.Protocol, ProtocolHTTP)
			eq(t, "Concurrency", c.Concurrency, 0)
		}},
		{"explicit zero timeout", "timeout: 0", func(t *testing.T, c *Config) { eq(t, "Timeout", c.Timeout, time.Duration(0)) }},
		{"plain seconds", "duration: 90\ntimeout: 1.5", func(t *testing.T, c *Config) {
			eq(t, "Duration", c.Duration, 90*time.Second)
			eq(t, "Timeout", c.Timeout, 1500*time.Millisecond)
		}},
		{"quoted seconds", `duration: "45"`, func(t *testing.T, c *Config) { eq(t, "Duration", c.Duration, 45*time.Second) }},
		{"go durations", "duration: 1h2m3s\ntimeout: 250ms", func(t *testing.T, c *Config) {
			eq(t, "Duration", c.Duration, time.Hour+2*time.Minute+3*time.Second)
			eq(t, "Timeout", c.Timeout, 250*time.Millisecond)
		}},
		{"fractional rate", "rate: 0.5", func(t *testing.T, c *Config) { eq(t, "Rate", c.Rate, 0.5) }},
		{"underscored total", "total: 1_000_000", func(t *testing.T, c *Config) { eq(t, "Total", c.Total, int64(1000000)) }},
		{"integral float concurrency", "concurrency: 10.0", func(t *testing.T, c *Config) { eq(t, "Concurrency", c.Concurrency, 10) }},
		{"null is absent", "body:\nrate: ~", func(t *testing.T, c *Config) {
			eq(t, "Body", c.Body, "")
			eq(t, "Rate", c.Rate, 0.0)
		}},
		{"body keeps spaces", "body: \"  {\\\"a\\\": 1}\\n\"", func(t *testing.T, c *Config) { eq(t, "Body", c.Body, "  {\"a\": 1}\n") }},
		{"headers canonical", "headers: {content-type: text/plain, x-empty: }", func(t *testing.T, c *Config) {
			eq(t, "Headers", c.Headers, map[string]string{"Content-Type": "text/plain", "X-Empty": ""})
		}},
		{"vus number", "vus: 25\nthink_time: 1", func(t *testing.T, c *Config) {
			eq(t, "VUs", c.VUs, VUs{Count: 25})
			eq(t, "ThinkTime", c.ThinkTime, ThinkTime{Min: time.Second, Max: time.Second})
		}},
		{"think time min only", "think_time: {min: 2s}", func(t *testing.T, c *Config) {
			eq(t, "ThinkTime", c.ThinkTime, ThinkTime{Min: 2 * time.Second, Max: 2 * time.Second})
		}},
		{"vus start counts", "vus: {start: 30, stages: [{duration: 1m, target: 10}]}", func(t *testing.T, c *Config) {
			eq(t, "VUs.Count", c.VUs.Count, 30)
		}},
		{"distributed defaults", "distributed: {workers: 3}", func(t *testing.T, c *Config) {
			eq(t, "Distributed", *c.Distributed, Distributed{Workers: 3, JoinTimeout: DefaultJoinTimeout, OnWorkerLoss: LossReassign})
			eq(t, "Min", c.Distributed.Min(), 3)
		}},
		{"thresholds block", "thresholds: |\n  # budget\n  http_req_duration:p99 < 1s\n\n  http_req_failed:rate < 1%  # errors\n", func(t *testing.T, c *Config) {
			eq(t, "Thresholds", c.Thresholds, []string{"http_req_duration:p99 < 1s", "http_req_failed:rate < 1%"})
		}},
		{"crankfire blocks", `
protocol: GRPC
grpc: {proto_file: a.proto, service: s.S, method: M, message: '{}', metadata: {X-Tenant: a}, timeout: 2s, tls: yes, insecure: false}
websocket: {messages: [hi, there], message_interval: 1s, receive_timeout: 2s, handshake_timeout: 3s}
sse: {read_timeout: 5s, max_events: 10}
auth: {type: oauth2_client_credentials, token_url: https://idp/t, client_id: c, client_secret: s3cret, scopes: [a, b], refresh_before_expiry: 45s}
feeder: {path: users.csv, type: CSV}
`, func(t *testing.T, c *Config) {
			eq(t, "Protocol", c.Protocol, ProtocolGRPC)
			eq(t, "GRPC", *c.GRPC, GRPC{ProtoFile: "a.proto", Service: "s.S", Method: "M", Message: "{}", Metadata: map[string]string{"X-Tenant": "a"}, Timeout: 2 * time.Second, TLS: true})
			eq(t, "WebSocket", *c.WebSocket, WebSocket{Messages: []string{"hi", "there"}, MessageInterval: time.Second, ReceiveTimeout: 2 * time.Second, HandshakeTimeout: 3 * time.Second})
			eq(t, "SSE", *c.SSE, SSE{ReadTimeout: 5 * time.Second, MaxEvents: 10})
			eq(t, "Auth", *c.Auth, Auth{Type: "oauth2_client_credentials", TokenURL: "https://idp/t", ClientID: "c", ClientSecret: "s3cret", Scopes: []string{"a", "b"}, RefreshBeforeExpiry: 45 * time.Second})
			eq(t, "Feeder", *c.Feeder, Feeder{Path: "users.csv", Type: "csv", Recycle: true})
		}},
		{"yaml anchors", "x: &h {Accept: text/html}\n", nil},
		{"anchor reuse", "headers: &h {Accept: text/html}\nendpoints: [{name: a, headers: *h}]", func(t *testing.T, c *Config) {
			eq(t, "Endpoints[0].Headers", c.Endpoints[0].Headers, map[string]string{"Accept": "text/html"})
		}},
		{"yaml flow mapping", "{target: https://x.example.com, rate: 5}", func(t *testing.T, c *Config) { eq(t, "Rate", c.Rate, 5.0) }},
		{"json with tabs", "{\n\t\"target\": \"https://x.example.com\",\n\t\"rate\": 7\n}", func(t *testing.T, c *Config) { eq(t, "Rate", c.Rate, 7.0) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := Parse("test.yaml", []byte(tt.src))
			if tt.check == nil {
				if err == nil {
					t.Fatalf("Parse(%q) succeeded, want an error", tt.src)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.src, err)
			}
			tt.check(t, c)
		})
	}
}

// TestParseErrors pins every parse-time message: each names the file:line,
// the key, what was given and what is expected.
func TestParseErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		file string
		src  string
		want string
	}{
		{"empty", "api.yaml", "", `api.yaml: config is empty: want a YAML or JSON mapping, e.g. target: https://api.example.com`},
		{"comments only", "api.yaml", "# nothing\n", `api.yaml: config is empty: want a YAML or JSON mapping, e.g. target: https://api.example.com`},
		{"not a mapping", "api.yaml", "- a\n- b\n", `api.yaml: not a load config: its top level is a list; a load config is a mapping of keys (target, rate, duration, ...)`},
		{"unknown key with suggestion", "api.yaml", "target: https://x\nconcurency: 5\n",
			`api.yaml:2: unknown key "concurency"; did you mean "concurrency"? known keys: ` + strings.Join(knownKeys(), ", ")},
		{"unknown key without suggestion", "api.yaml", "\nscenario: x\n",
			`api.yaml:2: unknown key "scenario"; known keys: ` + strings.Join(knownKeys(), ", ")},
		{"unknown nested key", "api.yaml", "load_patterns:\n  - type: ramp\n    form_rps: 1\n",
			`api.yaml:3: load_patterns[0]: unknown key "form_rps"; did you mean "from_rps"? known keys: duration, from_rps, name, rps, steps, to_rps, type`},
		{"unknown distributed key", "api.yaml", "distributed:\n  workers: 2\n  min_worker: 1\n",
			`api.yaml:3: distributed: unknown key "min_worker"; did you mean "min_workers"? known keys: join_timeout, min_workers, on_worker_loss, workers`},
		{"duplicate key", "api.yaml", "rate: 1\nbody_file: a\nbodyFile: b\n", `api.yaml:3: body_file: set twice (first on line 2); keep one`},
		{"rate not a number", "api.yaml", "target: https://x\n\n\n\n\n\nrate: fast\n", `api.yaml:7: rate: "fast" is not a number of requests per second (want e.g. 500)`},
		{"rate nan", "api.yaml", "rate: NaN\n", `api.yaml:1: rate: "NaN" is not a number of requests per second (want e.g. 500)`},
		{"concurrency fraction", "api.yaml", "concurrency: 2.5\n", `api.yaml:1: concurrency: "2.5" is not a whole number of workers (want e.g. 50)`},
		{"concurrency huge", "api.yaml", "concurrency: 99999999999\n", `api.yaml:1: concurrency: 99999999999 is out of range for a whole number of workers (want e.g. 50)`},
		{"total word", "api.yaml", "total: lots\n", `api.yaml:1: total: "lots" is not a whole number of requests (want e.g. 10000)`},
		{"duration word", "api.yaml", "duration: forever\n", `api.yaml:1: duration: "forever" is not a duration (want e.g. 30s, 5m, 1m30s, or a number of seconds)`},
		{"duration days", "api.yaml", "duration: 1d\n", `api.yaml:1: duration: "1d" is not a duration (want e.g. 30s, 5m, 1m30s, or a number of seconds)`},
		{"duration overflow", "api.yaml", "duration: 1e300\n", `api.yaml:1: duration: "1e300" is not a duration (want e.g. 30s, 5m, 1m30s, or a number of seconds)`},
		{"bool word", "api.yaml", "dashboard: maybe\n", `api.yaml:1: dashboard: "maybe" is not true or false`},
		{"target list", "api.yaml", "target: [a, b]\n", `api.yaml:1: target: want a string, got a list`},
		{"headers list", "api.yaml", "headers: [a]\n", `api.yaml:1: headers: want a mapping of names to values (e.g. Content-Type: application/json), got a list`},
		{"header value map", "api.yaml", "headers:\n  Authorization: {token: x}\n", `api.yaml:2: headers.Authorization: want a string value, got a mapping`},
		{"header duplicate", "api.yaml", "headers:\n  accept: a\n  Accept: b\n", `api.yaml:3: headers.Accept: set twice (first on line 2); keep one`},
		{"patterns not list", "api.yaml", "load_patterns: {type: ramp}\n", `api.yaml:1: load_patterns: want a list of patterns ({name, type, ...}), got a mapping`},
		{"pattern not mapping", "api.yaml", "load_patterns: [ramp]\n", `api.yaml:1: load_patterns[0]: want a mapping of keys (duration, from_rps, name, rps, steps, to_rps, type), got "ramp"`},
		{"step rps bad", "api.yaml", "load_patterns:\n  - type: step\n    steps:\n      - {rps: high, duration: 1m}\n", `api.yaml:4: load_patterns[0].steps[0].rps: "high" is not a number of requests per second (want e.g. 500)`},
		{"endpoint weight bad", "api.yaml", "endpoints:\n  - {path: /a, weight: heavy}\n", `api.yaml:2: endpoints[0].weight: "heavy" is not a whole number weight (want e.g. 60)`},
		{"endpoint url and target", "api.yaml", "endpoints:\n  - {url: https://a, target: https://b}\n", `api.yaml:2: endpoints[0]: url and target are both set; they are one key (Crankfire accepts both spellings), keep url`},
		{"vus word", "api.yaml", "vus: many\n", `api.yaml:1: vus: "many" is not a whole number of virtual users (want e.g. 50), or {start, stages}`},
		{"vus stage key", "api.yaml", "vus:\n  stages:\n    - {duration: 1m, users: 5}\n", `api.yaml:3: vus.stages[0]: unknown key "users"; known keys: duration, name, target`},
		{"think time list", "api.yaml", "think_time: [1s]\n", `api.yaml:1: think_time: want a mapping of keys (max, min), got a list`},
		{"secret not echoed", "api.yaml", "auth:\n  client_secret: [hunter2]\n", `api.yaml:2: auth.client_secret: want a string (the value is secret and not shown)`},
		{"thresholds map", "api.yaml", "thresholds: {a: b}\n", `api.yaml:1: thresholds: want a list of strings, got a mapping`},
		{"key not scalar", "api.yaml", "? [a]\n: b\n", `api.yaml:1: a key must be a plain name, got a list`},
		{"two documents", "api.yaml", "rate: 1\n---\nrate: 2\n", `api.yaml:2: more than one YAML document (a second '---'): put one load test in each file`},
		{"yaml syntax", "api.yaml", "target: x\n  rate: 5\n", `api.yaml:2: invalid YAML: mapping values are not allowed in this context`},
		{"yaml syntax line", "api.yaml", "rate: 5\nduration: 10s\n- x\n", `api.yaml:3: invalid YAML: did not find expected key`},
		{"yaml unclosed list", "api.yaml", "rate: 5\nthresholds: [a\nduration: 10s\n", `api.yaml:2: invalid YAML: did not find expected ',' or ']'`},
		{"json syntax", "api.json", "{\n  \"target\": \"https://x\",\n  \"rate\": 5,\n}\n", `api.json:4:1: invalid JSON: invalid character '}' looking for beginning of object key string`},
		{"json missing comma", "cfg", "{\"target\": \"https://x\"\n \"rate\": 5}", `cfg:2:2: invalid JSON: invalid character '"' after object key:value pair`},
		{"json truncated", "api.json", "{\"target\": ", `api.json:1:11: invalid JSON: unexpected end of JSON input`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := Parse(tt.file, []byte(tt.src))
			if err == nil {
				t.Fatalf("Parse(%q) = %+v, want error %q", tt.src, c, tt.want)
			}
			if c != nil {
				t.Errorf("Parse(%q) returned a config with an error", tt.src)
			}
			if err.Error() != tt.want {
				t.Errorf("Parse(%q) error =\n  %s\nwant\n  %s", tt.src, err, tt.want)
			}
			var se *Error
			if !errors.As(err, &se) {
				t.Errorf("Parse error %T is not a *spec.Error", err)
			}
		})
	}
}

func TestParseManyErrors(t *testing.T) {
	t.Parallel()
	// Every bad key is reported at once, capped so a broken file stays
	// readable.
	_, err := Parse("a.yaml", []byte("rate: x\ntotal: y\nbogus: 1\n"))
	if err == nil {
		t.Fatal("Parse succeeded, want errors")
	}
	for _, w := range []string{"a.yaml:1: rate:", "a.yaml:2: total:", `a.yaml:3: unknown key "bogus"`} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not contain %q", err, w)
		}
	}
	var b strings.Builder
	b.WriteString("target: http://127.0.0.1/\n") // a load config, with 30 bad keys
	for i := range 30 {
		b.WriteString("k")
		b.WriteString(strings.Repeat("x", i+1))
		b.WriteString(": 1\n")
	}
	_, err = Parse("a.yaml", []byte(b.String()))
	if err == nil || !strings.HasSuffix(err.Error(), "and 10 more problems") {
		t.Errorf("Parse(30 bad keys) error ends %q, want it to end with the dropped count", err)
	}
}

func TestLoad(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sub := filepath.Join(dir, "perf")
	if err := os.MkdirAll(filepath.Join(sub, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, s string) string {
		t.Helper()
		p := filepath.Join(sub, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("data/body.json", `{"a":1}`)
	cfg := write("api.yaml", "target: https://x.example.com\nbody_file: data/body.json\nduration: 1s\nfeeder: {path: users.csv, type: csv}\ngrpc: {proto_file: /abs/a.proto}\n")
	c, err := Load(cfg)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	eq(t, "BodyFile", c.BodyFile, filepath.Join(sub, "data", "body.json"))
	eq(t, "Feeder.Path", c.Feeder.Path, filepath.Join(sub, "users.csv"))
	eq(t, "GRPC.ProtoFile", c.GRPC.ProtoFile, "/abs/a.proto")

	missing := write("missing.yaml", "target: https://x.example.com\n\nendpoints:\n  - {path: /a, body_file: nope.json}\n")
	_, err = Load(missing)
	want := missing + `:4: endpoints[0].body_file: "` + filepath.Join(sub, "nope.json") + `" is not a readable file (relative paths are from the config file's directory)`
	if err == nil || err.Error() != want {
		t.Errorf("Load(missing body) error =\n  %v\nwant\n  %s", err, want)
	}

	_, err = Load(filepath.Join(dir, "absent.yaml"))
	if err == nil || !strings.Contains(err.Error(), "read load config") || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load(absent) error = %v, want a wrapped not-exist error", err)
	}
}

// TestDocsListEveryKey keeps docs/load-config.md in step with the parser.
func TestDocsListEveryKey(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../../../docs/load-config.md")
	if err != nil {
		t.Fatalf("read docs: %v", err)
	}
	for _, k := range knownKeys() {
		if !strings.Contains(string(doc), "`"+k+"`") {
			t.Errorf("docs/load-config.md does not document key `%s`", k)
		}
	}
}

// TestParseAliasBomb checks that a small document whose aliases expand to
// millions of nodes is refused quickly instead of walked.
func TestParseAliasBomb(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("target: https://x.example.com\nload_patterns:\n  - type: step\n    steps: &big [")
	for i := range 1000 {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("{rps: 1, duration: 1}")
	}
	b.WriteString("]\n")
	for range 1000 {
		b.WriteString("  - {type: step, steps: *big}\n")
	}
	start := time.Now()
	_, err := Parse("bomb.yaml", []byte(b.String()))
	if err == nil || !strings.Contains(err.Error(), "expands to more than 200000 YAML nodes") {
		t.Fatalf("Parse(alias bomb) error = %v, want the node limit", err)
	}
	// Generous: an exponential walk takes hours; a loaded CI machine with
	// -race takes seconds for the bounded one.
	if el := time.Since(start); el > 60*time.Second {
		t.Errorf("Parse(alias bomb) took %v", el)
	}
}

// TestNotALoadConfigIsNotQuoted: a file that is not a load config (a
// password file, a registration file) is refused without quoting its
// lines or values.
func TestNotALoadConfigIsNotQuoted(t *testing.T) {
	t.Parallel()
	for name, data := range map[string]string{
		"shadow":  "root:*:19000:0:99999:7:::\ndaemon:*:19000:0:99999:7:::\nsecretuser:$6$salt$hash:19000:0:99999:7:::\n",
		".runner": `{"id": 1, "uuid": "u-1234", "name": "r", "token": "tok-s3cret-value", "address": "http://x", "labels": ["a"]}`,
		"list":    "- tok-s3cret-value\n- b\n",
		"keyish":  "? |\n  tok-s3cret-value\n  more text\n: 1\ntarget: http://127.0.0.1/\n",
	} {
		_, err := Parse(name, []byte(data))
		if err == nil {
			t.Fatalf("Parse(%s) = nil error", name)
		}
		for _, leak := range []string{"tok-s3cret-value", "root:", "$6$", "u-1234", "secretuser"} {
			if strings.Contains(err.Error(), leak) {
				t.Errorf("Parse(%s) error quotes the file (%q): %v", name, leak, err)
			}
		}
		if name != "keyish" && !strings.Contains(err.Error(), "not a load config") {
			t.Errorf("Parse(%s) = %v, want \"not a load config\"", name, err)
		}
	}
}

// TestConfigSizeBounded: a config over MaxConfigBytes, or a device, is
// refused before it is parsed, naming the limit; a config of many nodes
// without aliases is not blamed on aliases.
func TestConfigSizeBounded(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	big := filepath.Join(dir, "big.yaml")
	var b strings.Builder
	b.WriteString("target: http://127.0.0.1/\nendpoints:\n")
	for b.Len() <= MaxConfigBytes {
		b.WriteString("  - {url: http://127.0.0.1/a, weight: 1}\n")
	}
	if err := os.WriteFile(big, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(big); err == nil || !strings.Contains(err.Error(), "more than the 1 MiB limit") {
		t.Fatalf("Load(%d-byte config) = %v, want the 1 MiB limit", b.Len(), err)
	}
	if _, err := Load("/dev/zero"); err == nil || !strings.Contains(err.Error(), "is a device") {
		t.Fatalf("Load(/dev/zero) = %v, want a refusal of the device", err)
	}
	// Each endpoint is five nodes (its mapping, two keys, two values), so
	// maxNodes/5+1 of them and the root's six nodes are just over the
	// limit (200,011 nodes), with no alias. Parsing is this test's cost
	// under -race: maxNodes/3 endpoints (333,341 nodes) took 2.1 s of CPU.
	var many strings.Builder
	many.WriteString("target: http://127.0.0.1/\nendpoints:\n")
	for range maxNodes/5 + 1 {
		many.WriteString("- {url: u, weight: 1}\n")
	}
	_, err := Parse("many.yaml", []byte(many.String()))
	if err == nil || strings.Contains(err.Error(), "alias") || !strings.Contains(err.Error(), "split the test") {
		t.Fatalf("Parse(many nodes, no aliases) = %v, want a size error that does not blame aliases", err)
	}
}

// TestLoadInConfines: a job's config and its body files are read inside
// the workspace only.
func TestLoadInConfines(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	outside := t.TempDir()
	write := func(p, data string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(outside, "body.json"), "outside")
	write(filepath.Join(outside, "api.yaml"), "target: http://127.0.0.1/\n")
	write(filepath.Join(ws, "perf", "body.json"), "{}")
	write(filepath.Join(ws, "perf", "api.yaml"), "target: http://127.0.0.1/\nbody_file: body.json\n")
	write(filepath.Join(ws, "perf", "esc.yaml"), "target: http://127.0.0.1/\nbody_file: "+filepath.Join(outside, "body.json")+"\n")
	if err := os.Symlink(filepath.Join(outside, "api.yaml"), filepath.Join(ws, "link.yaml")); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(ws)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	c, err := LoadIn(root, "perf/api.yaml")
	if err != nil {
		t.Fatalf("LoadIn(perf/api.yaml) = %v", err)
	}
	if body, err := c.ReadFile("body_file", c.BodyFile); err != nil || string(body) != "{}" {
		t.Fatalf("ReadFile(%s) = %q, %v; want the workspace body", c.BodyFile, body, err)
	}
	if !strings.Contains(string(c.Raw()), "body_file: body.json") {
		t.Fatalf("Raw() = %q, want the file's text", c.Raw())
	}
	for _, p := range []string{filepath.Join(outside, "api.yaml"), "link.yaml", "../" + filepath.Base(outside) + "/api.yaml", "/dev/zero", "perf/esc.yaml"} {
		if _, err := LoadIn(root, p); err == nil || !strings.Contains(err.Error(), "workspace") {
			t.Errorf("LoadIn(%s) = %v, want a refusal naming the workspace", p, err)
		}
	}
	inline, err := Parse("with", []byte("{}"))
	if err != nil {
		t.Fatal(err)
	}
	inline.ConfineTo(root)
	for _, p := range []string{"/dev/zero", filepath.Join(outside, "body.json")} {
		if _, err := inline.ReadFile("body_file", p); err == nil || !strings.Contains(err.Error(), "outside the workspace") {
			t.Errorf("confined ReadFile(%s) = %v, want a refusal", p, err)
		}
	}
}

// knownKeys returns the top-level key names, as the docs and errors must list them.
func knownKeys() []string {
	d := &decoder{c: &Config{}}
	fs := d.topFields()
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.name
	}
	sort.Strings(out)
	return out
}
