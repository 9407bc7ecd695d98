package config

import (
	"fmt"
	"net/netip"
	"path"
	"strings"
)

// TargetRule is one entry of load.allow_targets or load.deny_targets: either
// an address prefix or a host glob. The zero value matches nothing.
type TargetRule struct {
	// Prefix is set for a CIDR ("10.0.0.0/8") or a single IP (as /32 or
	// /128).
	Prefix netip.Prefix
	// Glob is set for a host name pattern, lower-cased. '*' matches any run
	// of characters (dots included) and '?' one character.
	Glob string
}

// ParseTargetRule parses a CIDR, an IP address or a host glob such as
// *.staging.example.com.
func ParseTargetRule(s string) (TargetRule, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return TargetRule{}, fmt.Errorf("parse target rule: it is empty (want a CIDR, IP or host glob, e.g. 10.0.0.0/8, 192.0.2.7 or *.staging.example.com)")
	}
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return TargetRule{}, fmt.Errorf("parse target rule %q: not a CIDR (want e.g. 10.0.0.0/8 or fd00::/8): %w", s, err)
		}
		return TargetRule{Prefix: p.Masked()}, nil
	}
	if a, err := netip.ParseAddr(s); err == nil {
		if a.Zone() != "" {
			return TargetRule{}, fmt.Errorf("parse target rule %q: an IPv6 zone is not allowed; drop the %%%s", s, a.Zone())
		}
		return TargetRule{Prefix: netip.PrefixFrom(a, a.BitLen())}, nil
	}
	g := strings.TrimSuffix(strings.ToLower(s), ".")
	for _, r := range g {
		ok := r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_' || r == '*' || r == '?'
		if !ok {
			return TargetRule{}, fmt.Errorf("parse target rule %q: %q is not allowed in a host glob (want a CIDR, an IP, or a host name with * and ?, e.g. *.staging.example.com; no scheme, port or path)", s, r)
		}
	}
	if g == "" || strings.Contains(g, "..") {
		return TargetRule{}, fmt.Errorf("parse target rule %q: not a host name (want e.g. *.staging.example.com)", s)
	}
	return TargetRule{Glob: g}, nil
}

// Match reports whether the rule covers a target with host name host and
// resolved address addr. Either may be empty or invalid: a prefix rule looks
// only at addr (IPv4-mapped IPv6 addresses count as IPv4), a glob rule only
// at host (case-insensitive, trailing dot ignored).
func (r TargetRule) Match(host string, addr netip.Addr) bool {
	if r.Prefix.IsValid() {
		return addr.IsValid() && r.Prefix.Contains(addr.Unmap().WithZone(""))
	}
	if r.Glob == "" || host == "" {
		return false
	}
	ok, _ := path.Match(r.Glob, strings.TrimSuffix(strings.ToLower(host), "."))
	return ok
}

// String returns the rule in the form ParseTargetRule accepts.
func (r TargetRule) String() string {
	if r.Prefix.IsValid() {
		return r.Prefix.String()
	}
	return r.Glob
}
