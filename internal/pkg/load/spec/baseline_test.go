package spec

import (
	"strings"
	"testing"
)

func TestBaselineTarget(t *testing.T) {
	t.Parallel()
	c := mustParse(t, base+"endpoints: [{name: a, path: '/a?x=1'}, {name: b, url: 'http://u:p@other:9/b'}]\nbaseline_target: http://base:8080/\nbaseline_limits: [p99=10, error_rate=0.5%]\n")
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	mix := c.BaselineMix()
	if got := []string{mix[0].URL, mix[1].URL}; got[0] != "http://base:8080/a?x=1" || got[1] != "http://base:8080/b" {
		t.Errorf("BaselineMix URLs = %q, want the same paths on http://base:8080", got)
	}
	if c.Mix()[0].URL != "https://api.example.com/a?x=1" {
		t.Errorf("Mix changed: %q", c.Mix()[0].URL)
	}
	lim, err := c.ParsedBaselineLimits()
	if err != nil || lim["p99"] != 0.10 || lim["error_rate"] != 0.005 {
		t.Errorf("ParsedBaselineLimits = %v, %v; want p99 10%%, error_rate 0.5%%", lim, err)
	}
	if mustParse(t, base).BaselineMix() != nil {
		t.Error("BaselineMix without baseline_target is not nil")
	}
}

func TestBaselineTargetInvalid(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ src, want string }{
		{base + "baseline_target: base:8080\n", "baseline_target"},
		{base + "baseline_target: ftp://base\n", "baseline_target"},
		{base + "baseline_target: http://base/v1\n", "give the origin only"},
		{base + "baseline_target: http://base?x=1\n", "give the origin only"},
		{base + "baseline_limits: [p99=10]\n", "baseline_target is not set"},
		{base + "baseline_target: http://base\nbaseline_limits: [p42=10]\n", "baseline_limits[0]"},
		{"protocol: websocket\ntarget: ws://x/ws\nrate: 1\nbaseline_target: http://base\n", "protocol http only"},
		{base + "distributed: {workers: 2}\nbaseline_target: http://base\n", "one host"},
		{base + "baseline_targets: http://base\n", "baseline_targets"},
	} {
		c, err := Parse("t.yaml", []byte(tt.src))
		if err == nil {
			err = c.Validate()
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: error %v, want one containing %q", tt.src, err, tt.want)
		}
	}
}
