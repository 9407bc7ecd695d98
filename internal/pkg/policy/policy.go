package policy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"

	"github.com/forgeload/forgeload/internal/pkg/config"
)

// ErrDenied is wrapped by every refusal, so callers can tell a policy
// violation from a network error with errors.Is.
var ErrDenied = errors.New("target denied by the runner's load policy")

// Keys naming the built-in rules in a Violation.
const (
	keyBuiltin = "built-in deny"
	keyForge   = "the forge's own address (built-in)"
)

// builtinDeny are always denied: link-local ranges and cloud metadata services.
var builtinDeny = []string{"169.254.0.0/16", "fe80::/10", "fd00:ec2::254/128"}

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
	forgeIPs    []netip.Addr
	forgeHost   string
	forgePort   int
	resolver    *net.Resolver
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
		p.forgeHost = strings.ToLower(u.Hostname())
		p.forgePort = portOf(u)
		if ip, err := netip.ParseAddr(p.forgeHost); err == nil {
			p.forgeIPs = []netip.Addr{ip.Unmap()}
		} else if ips, err := p.resolver.LookupNetIP(ctx, "ip", p.forgeHost); err == nil {
			for _, ip := range ips {
				p.forgeIPs = append(p.forgeIPs, ip.Unmap())
			}
		}
	}
	return p, nil
}

func parseRule(s, key string) (rule, error) {
	tr, err := config.ParseTargetRule(s)
	if err != nil {
		return rule{}, fmt.Errorf("%s: %w", key, err)
	}
	return rule{TargetRule: tr, text: strings.TrimSpace(s), key: key}, nil
}

func portOf(u *url.URL) int {
	if p := u.Port(); p != "" {
		n, _ := strconv.Atoi(p)
		return n
	}
	switch u.Scheme {
	case "https", "wss":
		return 443
	default:
		return 80
	}
}

// Violation describes one refusal. It wraps [ErrDenied].
type Violation struct {
	Target string // what was refused: a URL or host:port
	Rule   string // the rule that refused it, as the admin wrote it
	Key    string // the config key that holds the rule
}

func (v *Violation) Error() string {
	target := v.Target
	if u, err := url.Parse(target); err == nil && u.User != nil {
		target = u.Redacted()
	}
	if v.builtin() {
		return fmt.Sprintf("load target %s is denied by %s rule %q, which no setting lifts: link-local, cloud-metadata and the forge's own address never receive load; point the test at another target", target, v.Key, v.Rule)
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
	port := portOf(u)
	for _, r := range p.deny {
		if r.matchHost(host) {
			return &Violation{Target: raw, Rule: r.text, Key: r.key}
		}
	}
	var ips []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		ips = []netip.Addr{ip.Unmap()}
	} else {
		got, err := p.resolver.LookupNetIP(ctx, "ip", host)
		if err != nil {
			return fmt.Errorf("load target %s: resolve %q: %w", raw, host, err)
		}
		for _, ip := range got {
			ips = append(ips, ip.Unmap())
		}
	}
	if host == p.forgeHost && port == p.forgePort {
		return &Violation{Target: raw, Rule: fmt.Sprintf("%s:%d", host, port), Key: keyForge}
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

// checkAddr applies the address rules to one resolved address.
func (p *Policy) checkAddr(ip netip.Addr, port int, hostAllowed bool, target string) error {
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
// target host matched an allowed host glob before the run).
func (p *Policy) Control(hostsAllowed bool) func(network, address string, c syscall.RawConn) error {
	return func(network, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("load policy: cannot parse dial address %q: %w", address, err)
		}
		return p.checkAddr(ap.Addr().Unmap(), int(ap.Port()), hostsAllowed, address)
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
