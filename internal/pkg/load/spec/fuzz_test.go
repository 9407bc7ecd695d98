package spec

import (
	"errors"
	"os"
	"path/filepath"
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
		"distributed: null\nauth: {scopes: x}\ngrpc: {metadata: {a: [b]}}",
		"? !!binary aGk=\n: 1",
		"{",
		"---\n---\n",
		"\xef\xbb\xbf{}",
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
			return
		}
		_ = c.Validate()
		_ = c.Override(map[string]string{"rate": "5", "vus": "2", "distributed.workers": "3"})
		_ = c.Validate()
	})
}
