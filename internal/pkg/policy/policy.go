package policy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/forgeload/forgeload/internal/pkg/config"
	"github.com/forgeload/forgeload/internal/pkg/redact"
)

// ErrDenied is wrapped by every refusal, so callers can tell a policy
// violation from a network error with errors.Is.
var ErrDenied = errors.New("target denied by the runner's load policy")

// Keys naming the built-in rules in a Violation.
const (
	keyBuiltin = "built-in deny"
	keyForge   = "the forge's own address (built-in)"
)

// builtinDeny are always denied: the unspecified addresses (Linux connects
// 0.0.0.0 and :: to the local host, past any rule written for 127.0.0.1),
// link-local ranges, and the cloud metadata and host-agent services that
// live outside them.
var builtinDeny = []string{
	"0.0.0.0/8",          // "this network"; 0.0.0.0 reaches the local host
	"::/128",             // the IPv6 unspecified address, likewise
	"169.254.0.0/16",     // link-local: AWS, GCP, Azure, OCI, DigitalOcean... metadata at 169.254.169.254
	"fe80::/10",          // IPv6 link-local
	"fd00:ec2::254/128",  // AWS metadata over IPv6
	"fd20:ce::254/128",   // GCP metadata over IPv6
	"100.100.100.200/32", // Alibaba Cloud metadata
	"168.63.129.16/32",   // Azure WireServer (host agent)
	"192.0.0.192/32",     // Oracle Cloud metadata (classic)
}

// Options configures [New]. The zero value is the default policy with no
// forge address and no limits.
type Options struct {
	Allow []string // load.allow_targets: CIDRs, IPs and host globs
	Deny  []string // load.deny_targets: CIDRs, IPs and host globs
	// Forge is the forge's instance URL; its host and port are denied, so a
	// job cannot load-test the forge that feeds it. Other ports of the same
	// host stay allowed.
	Forge string
	// Resolver resolves target hosts for the pre-flight check; nil uses
	// net.DefaultResolver.
	Resolver *net.Resolver
}

type rule struct {
	config.TargetRule
	text string // as the admin wrote it, for messages
	key  string // config key the rule came from
}

func (r rule) matchIP(ip netip.Addr) bool { return r.Match("", ip) }

func (r rule) matchHost(host string) bool { return r.Match(host, netip.Addr{}) }

// Policy decides whether a target may receive load. It is safe for
// concurrent use and immutable after [New].
type Policy struct {
	allow, deny []rule
	forgeIPs    []netip.Addr // unmapped, without zones
	forgeHost   string       // canonical: see canonHost
	forgePort   int
	// forgeLocal is set when the forge runs on this host: then the forge's
	// port on any local address (loopback, unspecified, or an interface
	// address) reaches it, whatever address the forge URL names.
	forgeLocal bool
	localIPs   []netip.Addr // this host's interface addresses, when forgeLocal
	resolver   *net.Resolver
	own        []netip.AddrPort // the job's own services, see [Policy.WithOwn]
}

// WithOwn returns a copy of p that also allows the given addresses (each an
// IP and port): the published ports of the job's own service containers.
// They are allowed whatever the admin's allow and deny lists say; only the
// built-in denies (link-local, metadata, the forge) still apply.
func (p *Policy) WithOwn(addrs []netip.AddrPort) *Policy {
	c := *p
	c.own = append(slices.Clone(p.own), addrs...)
	return &c
}

// isOwn reports whether ip:port is one of the job's own services.
func (p *Policy) isOwn(ip netip.Addr, port int) bool {
	for _, a := range p.own {
		if canonIP(a.Addr()) == ip && int(a.Port()) == port {
			return true
		}
	}
	return false
}

// New builds a policy and reports the first malformed rule, naming the
// config key and the accepted forms.
func New(ctx context.Context, o Options) (*Policy, error) {
	p := &Policy{resolver: o.Resolver}
	if p.resolver == nil {
		p.resolver = net.DefaultResolver
	}
	for _, s := range builtinDeny {
		r, _ := parseRule(s, keyBuiltin)
		p.deny = append(p.deny, r)
	}
	for _, s := range o.Deny {
		r, err := parseRule(s, "load.deny_targets")
		if err != nil {
			return nil, err
		}
		p.deny = append(p.deny, r)
	}
	for _, s := range o.Allow {
		r, err := parseRule(s, "load.allow_targets")
		if err != nil {
			return nil, err
		}
		p.allow = append(p.allow, r)
	}
	if o.Forge != "" {
		u, err := url.Parse(o.Forge)
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("policy: forge address %q is not a URL; fix the runner registration's address", o.Forge)
		}
		p.forgeHost = canonHost(u.Hostname())
		p.forgePort = portOf(u)
		if ip, err := netip.ParseAddr(p.forgeHost); err == nil {
			p.forgeIPs = []netip.Addr{ip}
		} else if ips, err := p.resolver.LookupNetIP(ctx, "ip", p.forgeHost); err == nil {
			for _, ip := range ips {
				p.forgeIPs = append(p.forgeIPs, canonIP(ip))
			}
		}
		p.localIPs = interfaceAddrs()
		for _, ip := range p.forgeIPs {
			if p.isLocal(ip) {
				p.forgeLocal = true
			}
		}
		if !p.forgeLocal {
			p.localIPs = nil
		}
	}
	return p, nil
}

// interfaceAddrs lists this host's interface addresses; an error leaves
// the loopback and unspecified checks of isLocal.
func interfaceAddrs() []netip.Addr {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	var out []netip.Addr
	for _, a := range addrs {
		if pn, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(pn.IP); ok {
				out = append(out, canonIP(ip))
			}
		}
	}
	return out
}

// isLocal reports whether a connection to ip stays on this host.
func (p *Policy) isLocal(ip netip.Addr) bool {
	if ip.IsLoopback() || ip.IsUnspecified() {
		return true
	}
	for _, l := range p.localIPs {
		if l == ip {
			return true
		}
	}
	return false
}

func parseRule(s, key string) (rule, error) {
	tr, err := config.ParseTargetRule(s)
	if err != nil {
		return rule{}, fmt.Errorf("%s: %w", key, err)
	}
	return rule{TargetRule: tr, text: strings.TrimSpace(s), key: key}, nil
}

// canonIP is ip as the policy compares addresses: IPv4-mapped IPv6 as
// IPv4, and without an IPv6 zone. A zone only picks the interface a
// link-local or loopback packet leaves by; fe80::1%eth0 and fe80::1%lo are
// the same address to every rule, and the forge's address with any zone
// (or none) is the forge.
func canonIP(ip netip.Addr) netip.Addr { return ip.Unmap().WithZone("") }

// canonHost is a URL's host as the policy compares host names: an IP
// address (brackets and zone, "%" or URL-escaped "%25", dropped) in its
// canonical form, IPv4-mapped IPv6 as IPv4; a name in lower case without
// its trailing dot. "[FD00::1%25lo]", "fd00::1%lo" and "fd00:0::1" are all
// "fd00::1"; "Forge.Example." is "forge.example".
func canonHost(host string) string {
	h := strings.ToLower(host)
	if ip, ok := parseIPHost(h); ok {
		return canonIP(ip).String()
	}
	if n := strings.TrimRight(h, "."); n != h {
		if _, ok := parseIPHost(n); !ok {
			return n
		}
		// "127.0.0.1." stays a name, as resolvers read it: CheckURL
		// refuses it as a number before any lookup.
	}
	return h
}

// parseIPHost parses an IP address host, bracketed or not, with or without
// a zone.
func parseIPHost(h string) (netip.Addr, bool) {
	if len(h) > 2 && h[0] == '[' && h[len(h)-1] == ']' {
		h = h[1 : len(h)-1]
	}
	if i := strings.IndexByte(h, '%'); i >= 0 && strings.Contains(h[:i], ":") {
		h = h[:i] // a zone: only IPv6 addresses have one
	}
	ip, err := netip.ParseAddr(h)
	return ip, err == nil
}

func portOf(u *url.URL) int {
	if p := u.Port(); p != "" {
		n, _ := strconv.Atoi(p)
		return n
	}
	switch u.Scheme {
	case "https", "wss", "grpcs":
		return 443
	default:
		return 80
	}
}

// Violation describes one refusal. It wraps [ErrDenied].
type Violation struct {
	Target string // what was refused: a URL or host:port; empty when only Addr is known
	Rule   string // the rule that refused it, as the admin wrote it
	Key    string // the config key that holds the rule
	// Addr is the resolved address refused at dial time ([Policy.Control]),
	// else empty. Whoever knows which target was dialled sets Target.
	Addr string
}

func (v *Violation) Error() string {
	target := redact.URL(v.Target)
	switch {
	case v.Target == "":
		target = "address " + v.Addr
	case v.Addr != "":
		target += " (address " + v.Addr + " at dial time)"
	}
	if v.builtin() {
		return fmt.Sprintf("load target %s is denied by %s rule %q, which no setting lifts: unspecified (0.0.0.0, ::), link-local, cloud-metadata and the forge's own address never receive load; point the test at another target", target, v.Key, v.Rule)
	}
	return fmt.Sprintf("load target %s is denied by %s rule %q; ask the runner admin to change %s in the daemon config", target, v.Key, v.Rule, v.Key)
}

// builtin reports whether the refusing rule is one of the built-in denies.
func (v *Violation) builtin() bool {
	return v.Key == keyBuiltin || v.Key == keyForge
}

// Unwrap makes errors.Is(err, ErrDenied) true.
func (v *Violation) Unwrap() error { return ErrDenied }

// CheckURL checks a target URL before any byte is sent: its host glob, and
// every address it resolves to now.
func (p *Policy) CheckURL(ctx context.Context, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return fmt.Errorf("load target %q is not an absolute URL; write it as http://host:port/path", raw)
	}
	host := strings.ToLower(u.Hostname())
	canon := canonHost(host)
	port := portOf(u)
	literal, litErr := netip.ParseAddr(canon)
	if litErr != nil && config.NumericHost(host) {
		// Refused before any lookup: the system resolver would read it as
		// an IPv4 address, the policy would see a name.
		return fmt.Errorf("load target %s: host %q is an IP address written as a number (hex, octal, a single integer or fewer than four parts); write it in dotted decimal, e.g. 127.0.0.2", redact.URL(raw), host)
	}
	if litErr == nil && p.isOwn(literal, port) && !p.builtinDenied(literal, port) {
		return nil
	}
	for _, r := range p.deny {
		if r.matchHost(host) {
			return &Violation{Target: raw, Rule: r.text, Key: r.key}
		}
	}
	var ips []netip.Addr
	if litErr == nil {
		ips = []netip.Addr{literal}
	} else {
		got, err := p.resolver.LookupNetIP(ctx, "ip", host)
		if err != nil {
			return fmt.Errorf("load target %s: resolve %q: %w", raw, host, err)
		}
		for _, ip := range got {
			ips = append(ips, canonIP(ip))
		}
	}
	if canon == p.forgeHost && port == p.forgePort {
		return &Violation{Target: raw, Rule: net.JoinHostPort(canon, strconv.Itoa(port)), Key: keyForge}
	}
	hostAllowed := false
	for _, r := range p.allow {
		if r.matchHost(host) {
			hostAllowed = true
		}
	}
	for _, ip := range ips {
		if err := p.checkAddr(ip, port, hostAllowed, raw); err != nil {
			return err
		}
	}
	return nil
}

// builtinDenied reports whether a built-in rule refuses ip:port.
func (p *Policy) builtinDenied(ip netip.Addr, port int) bool {
	ip = canonIP(ip)
	for _, r := range p.deny {
		if r.key == keyBuiltin && r.matchIP(ip) {
			return true
		}
	}
	return port == p.forgePort && (slices.Contains(p.forgeIPs, ip) || (p.forgeLocal && p.isLocal(ip)))
}

// checkAddr applies the address rules to one resolved address.
func (p *Policy) checkAddr(ip netip.Addr, port int, hostAllowed bool, target string) error {
	ip = canonIP(ip)
	if p.isOwn(ip, port) && !p.builtinDenied(ip, port) {
		return nil
	}
	for _, r := range p.deny {
		if r.matchIP(ip) {
			return &Violation{Target: target, Rule: r.text, Key: r.key}
		}
	}
	if port == p.forgePort {
		for _, f := range p.forgeIPs {
			if f == ip {
				return &Violation{Target: target, Rule: net.JoinHostPort(f.String(), strconv.Itoa(port)), Key: keyForge}
			}
		}
		if p.forgeLocal && p.isLocal(ip) {
			return &Violation{Target: target, Rule: fmt.Sprintf("port %d on any address of this host", port), Key: keyForge}
		}
	}
	if len(p.allow) == 0 || hostAllowed {
		return nil
	}
	for _, r := range p.allow {
		if r.matchIP(ip) {
			return nil
		}
	}
	return &Violation{Target: target, Rule: "not in the allow-list", Key: "load.allow_targets"}
}

// Control is a net.Dialer Control function. It sees the resolved address
// of every connection the load engine opens and refuses denied ones, so a
// DNS answer that changes between the pre-flight check and the dial cannot
// get around the policy. With an allow-list, an address is accepted when it
// is inside an allowed CIDR, or when hostsAllowed is true (every configured
// target host matched an allowed host glob before the run). A refusal is a
// [*Violation] with Addr set and Target empty: the dial knows no URL, so
// the caller that knows its targets may name the one refused.
func (p *Policy) Control(hostsAllowed bool) func(network, address string, c syscall.RawConn) error {
	return func(network, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("load policy: cannot parse dial address %q: %w", address, err)
		}
		err = p.checkAddr(ap.Addr(), int(ap.Port()), hostsAllowed, "")
		var v *Violation
		if errors.As(err, &v) {
			v.Addr = address
		}
		return err
	}
}

// HostsAllowed reports whether every host matches an allow-list host glob,
// which [Policy.Control] needs to know for allow-lists written as globs.
func (p *Policy) HostsAllowed(hosts []string) bool {
	if len(p.allow) == 0 || len(hosts) == 0 {
		return false
	}
	for _, h := range hosts {
		ok := false
		for _, r := range p.allow {
			if r.matchHost(h) {
				ok = true
			}
		}
		if !ok {
			return false
		}
	}
	return true
}
