package config

import (
	"net/netip"
	"strings"
	"testing"
)

func TestTargetRule(t *testing.T) {
	t.Parallel()
	tests := []struct {
		rule  string
		host  string
		addr  string
		match bool
	}{
		{"10.0.0.0/8", "", "10.1.2.3", true},
		{"10.0.0.0/8", "", "11.0.0.1", false},
		{"10.0.0.0/8", "", "::ffff:10.0.0.1", true}, // mapped IPv4 counts as IPv4
		{"192.0.2.7", "", "192.0.2.7", true},
		{"192.0.2.7", "", "192.0.2.8", false},
		{"fe80::/10", "", "fe80::1", true},
		{"fd00:ec2::254", "", "fd00:ec2::254", true},
		{"*.example.com", "api.staging.example.com", "", true},
		{"*.example.com", "API.Example.COM.", "", true},
		{"*.example.com", "example.com", "", false},
		{"api-?.example.com", "api-1.example.com", "", true},
		{"*.example.com", "", "10.0.0.1", false}, // a glob never matches an address
		{"10.0.0.0/8", "10.0.0.1", "", false},    // a prefix looks only at the resolved address
	}
	for _, tt := range tests {
		t.Run(tt.rule+"/"+tt.host+tt.addr, func(t *testing.T) {
			t.Parallel()
			r, err := ParseTargetRule(tt.rule)
			if err != nil {
				t.Fatalf("ParseTargetRule(%q): %v", tt.rule, err)
			}
			var a netip.Addr
			if tt.addr != "" {
				a = netip.MustParseAddr(tt.addr)
			}
			if got := r.Match(tt.host, a); got != tt.match {
				t.Errorf("%q.Match(%q, %v) = %v, want %v", tt.rule, tt.host, a, got, tt.match)
			}
		})
	}
}

func TestParseTargetRuleErrors(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "10.0.0.0/33", "http://x", "x.example.com:80", "a..b", "fe80::1%eth0", "[x]", "name..", ".name", "0x7f000002", "2130706434", "127.2", "0177.0.0.1", "10.0.*", "a.0x1f"} {
		if r, err := ParseTargetRule(s); err == nil {
			t.Errorf("ParseTargetRule(%q) = %+v, nil; want an error", s, r)
		} else if !strings.HasPrefix(err.Error(), "parse target rule") {
			t.Errorf("ParseTargetRule(%q) error %q does not name the operation", s, err)
		}
	}
}

func FuzzParseTargetRule(f *testing.F) {
	for _, s := range []string{"10.0.0.0/8", "::1", "*.example.com", "a?b", "x:80", "name..", "0x7f.1", "10.*"} {
		f.Add(s, "api.example.com")
	}
	f.Fuzz(func(t *testing.T, s, host string) {
		r, err := ParseTargetRule(s)
		if err != nil {
			return
		}
		if r.Prefix.IsValid() == (r.Glob != "") {
			t.Fatalf("ParseTargetRule(%q) = %+v: want exactly one of prefix and glob", s, r)
		}
		again, err := ParseTargetRule(r.String())
		if err != nil || again != r {
			t.Fatalf("ParseTargetRule(%q).String() = %q parses as %+v, %v; want %+v", s, r.String(), again, err, r)
		}
		if g := r.Glob; g != "" && (strings.HasPrefix(g, ".") || strings.HasSuffix(g, ".") || strings.Contains(g, "..")) {
			t.Fatalf("ParseTargetRule(%q) = glob %q with an empty label, which matches nothing", s, g)
		}
		if r.Glob != "" && NumericHost(r.Glob) {
			t.Fatalf("ParseTargetRule(%q) = glob %q that ends in a number, which matches no resolved address", s, r.Glob)
		}
		_ = r.Match(host, netip.Addr{})
	})
}
