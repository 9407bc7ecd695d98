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
	// A host name has no empty label: "name..", ".name" and "a..b" would
	// be accepted as globs that match nothing.
	if g == "" || strings.HasPrefix(g, ".") || strings.HasSuffix(g, ".") || strings.Contains(g, "..") {
		return TargetRule{}, fmt.Errorf("parse target rule %q: not a host name: a label between dots is empty (want e.g. *.staging.example.com, with at most one trailing dot)", s)
	}
	if numericGlob(g) {
		return TargetRule{}, fmt.Errorf("parse target rule %q: looks like an IP address or range written as a name, which never matches a resolved address; write an IP in dotted decimal or a range as a CIDR, e.g. 127.0.0.2 or 10.0.0.0/24", s)
	}
	return TargetRule{Glob: g}, nil
}

// numericGlob reports whether a glob is an address in disguise: its last
// label is a number (decimal, octal or 0x hex, so no host name can end in
// it), or every label is digits and wildcards ("10.0.*").
func numericGlob(g string) bool {
	labels := strings.Split(g, ".")
	if numericLabel(labels[len(labels)-1]) {
		return true
	}
	digit := false
	for _, l := range labels {
		if strings.Trim(l, "0123456789*?") != "" {
			return false
		}
		digit = digit || strings.ContainsAny(l, "0123456789")
	}
	return digit
}

// numericLabel reports whether a DNS label is a number in one of the forms
// inet_aton accepts: decimal, octal (leading 0) or hex (0x).
func numericLabel(l string) bool {
	if h, ok := strings.CutPrefix(l, "0x"); ok {
		return strings.Trim(h, "0123456789abcdef") == ""
	}
	return l != "" && strings.Trim(l, "0123456789") == ""
}

// NumericHost reports whether host (a name from a URL, lower-cased, not a
// valid IP address) ends in a numeric label, as "2130706434", "0x7f000002",
// "127.2" and "0177.0.0.1" do. No DNS name ends in a number; the system
// resolver reads such names as IPv4 addresses, so a policy must refuse them
// before any lookup rather than guess what they mean.
func NumericHost(host string) bool {
	h := strings.TrimSuffix(strings.ToLower(host), ".")
	if h == "" {
		return false
	}
	labels := strings.Split(h, ".")
	return numericLabel(labels[len(labels)-1])
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
