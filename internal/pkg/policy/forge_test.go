package policy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"testing"

	"github.com/forgeload/forgeload/internal/pkg/dnstest"
)

// isForgeRefusal reports whether err is the policy refusing the forge's
// own address (or, for addresses a built-in rule covers anyway, that rule).
func isForgeRefusal(err error) bool {
	var v *Violation
	return errors.As(err, &v) && v.builtin()
}

// TestForgeAddressForms: the forge is recognised however its address and a
// target's are written: IPv6 with a zone (%25 in a URL, % in a dial
// address), bracketed or not, upper or lower case, IPv4-mapped, with a
// trailing dot, with the scheme's default port implied. Names resolve
// through a test DNS server.
func TestForgeAddressForms(t *testing.T) {
	t.Parallel()
	dns := dnstest.Start(t, func(name string) netip.Addr {
		if name == "forge.test." {
			return netip.MustParseAddr("192.0.2.77")
		}
		return netip.Addr{}
	})
	// The local host's non-loopback IPv6 address, if it has one: a forge
	// on it owns its port on every local address too.
	var local6 netip.Addr
	for _, a := range interfaceAddrs() {
		if a.Is6() && !a.IsLoopback() && !a.IsLinkLocalUnicast() {
			local6 = a
		}
	}
	tests := []struct {
		forge   string
		targets []string // CheckURL targets that must be refused
		dials   []string // dial addresses that must be refused
		allowed []string // CheckURL targets that must pass
	}{
		{
			forge: "http://[::1%25lo]:3000",
			targets: []string{"http://[::1%25lo]:3000/", "http://[::1]:3000/", "http://[0:0:0:0:0:0:0:1]:3000/", "http://[::1%25eth0]:3000/",
				"http://127.0.0.1:3000/", "ws://[::1%25lo]:3000/ws", "grpc://[::1]:3000"},
			dials:   []string{"[::1%lo]:3000", "[::1]:3000", "127.0.0.1:3000", "[::ffff:127.0.0.1]:3000"},
			allowed: []string{"http://[::1%25lo]:3001/", "http://127.0.0.1:3001/"},
		},
		{
			forge:   "http://[FD00::2%25eth0]:3000",
			targets: []string{"http://[fd00::2]:3000/", "http://[fd00::2%25eth0]:3000/", "http://[fd00:0::2%25lo]:3000/"},
			dials:   []string{"[fd00::2%eth0]:3000", "[fd00::2]:3000", "[FD00::2]:3000"},
			allowed: []string{"http://[fd00::2]:3001/"},
		},
		{
			forge:   "https://[2001:db8::5%25eth0]",
			targets: []string{"https://[2001:db8::5]/", "https://[2001:DB8::5]:443/", "wss://[2001:db8::5%25x]/", "http://[2001:db8::5]:443/"},
			dials:   []string{"[2001:db8::5%eth0]:443", "[2001:db8::5]:443"},
			allowed: []string{"http://[2001:db8::5]/", "https://[2001:db8::5]:8443/"},
		},
		{
			forge:   "http://[::ffff:192.0.2.9]:3000",
			targets: []string{"http://192.0.2.9:3000/", "http://[::ffff:192.0.2.9]:3000/"},
			dials:   []string{"192.0.2.9:3000", "[::ffff:192.0.2.9]:3000"},
			allowed: []string{"http://192.0.2.9:3001/"},
		},
		{
			forge:   "HTTPS://Forge.Test./",
			targets: []string{"https://forge.test/", "https://FORGE.TEST.:443/", "http://forge.test:443/", "https://192.0.2.77/"},
			dials:   []string{"192.0.2.77:443", "[::ffff:192.0.2.77]:443"},
			allowed: []string{"http://forge.test/", "https://forge.test:8443/"},
		},
	}
	if local6.IsValid() {
		tests = append(tests, struct {
			forge                   string
			targets, dials, allowed []string
		}{
			forge:   "http://[" + local6.String() + "%25eth0]:3000",
			targets: []string{"http://[" + local6.String() + "]:3000/", "http://127.0.0.1:3000/", "http://[::1]:3000/"},
			dials:   []string{"[" + local6.String() + "]:3000", "127.0.0.1:3000", "[::1%lo]:3000"},
		})
	}
	for _, tt := range tests {
		t.Run(tt.forge, func(t *testing.T) {
			t.Parallel()
			p := mustNew(t, Options{Forge: tt.forge, Resolver: dns.Resolver()})
			for _, target := range tt.targets {
				if err := p.CheckURL(context.Background(), target); !isForgeRefusal(err) {
					t.Errorf("forge %s: CheckURL(%q) = %v, want the forge refused", tt.forge, target, err)
				}
			}
			for _, addr := range tt.dials {
				if err := p.Control(false)("tcp", addr, nil); !isForgeRefusal(err) {
					t.Errorf("forge %s: Control(%q) = %v, want the forge refused", tt.forge, addr, err)
				}
			}
			for _, target := range tt.allowed {
				if err := p.CheckURL(context.Background(), target); err != nil {
					t.Errorf("forge %s: CheckURL(%q) = %v, want allowed", tt.forge, target, err)
				}
			}
		})
	}
}

// FuzzForgeRecognised renders one address and port as the forge's URL in
// one form and as a target URL and a dial address in others: every
// rendering of the forge's own address is refused, and the same address on
// another port is not refused as the forge (unless a built-in rule covers
// the address or the host is this machine).
func FuzzForgeRecognised(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, "lo", uint16(3000), uint8(0), uint8(1))
	f.Add([]byte{0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2}, "eth0", uint16(443), uint8(3), uint8(5))
	f.Add([]byte{192, 0, 2, 9}, "", uint16(80), uint8(2), uint8(7))
	f.Add([]byte{0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5}, "x", uint16(443), uint8(0xff), uint8(0))
	p0 := mustNew(f, Options{})
	f.Fuzz(func(t *testing.T, raw []byte, zone string, port uint16, forgeForm, targetForm uint8) {
		ip, ok := netip.AddrFromSlice(raw)
		if !ok || port == 0 || port == 65535 {
			return
		}
		if !zoneName(zone) {
			zone = "lo"
		}
		forge := render(ip, zone, port, forgeForm)
		p, err := New(context.Background(), Options{Forge: forge})
		if err != nil {
			t.Fatalf("New(forge %q) = %v", forge, err)
		}
		target := render(ip, zone, port, targetForm)
		if err := p.CheckURL(context.Background(), target); !isForgeRefusal(err) {
			t.Fatalf("forge %q: CheckURL(%q) = %v, want the forge refused", forge, target, err)
		}
		dial := net.JoinHostPort(dialHost(ip, zone, targetForm), strconv.Itoa(int(port)))
		if err := p.Control(false)("tcp", dial, nil); !isForgeRefusal(err) {
			t.Fatalf("forge %q: Control(%q) = %v, want the forge refused", forge, dial, err)
		}
		// Another port of the same address is the forge's only on this
		// host (the forge owns its port on every local address, not every
		// port); a built-in rule refuses it anyway.
		other := render(ip, zone, port+1, targetForm&^4)
		if err, base := p.CheckURL(context.Background(), other), p0.CheckURL(context.Background(), other); (err == nil) != (base == nil) {
			t.Fatalf("forge %q: CheckURL(%q) = %v, want %v as without a forge (another port)", forge, other, err, base)
		}
	})
}

// zoneName reports whether s looks like an interface name.
func zoneName(s string) bool {
	if s == "" || len(s) > 15 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// render writes ip:port as a URL in the form form selects: its bits pick
// the scheme (http or https, the port omitted when it is the scheme's
// default), upper case, a zone on IPv6, IPv4 as IPv4-mapped IPv6, and the
// expanded IPv6 form.
func render(ip netip.Addr, zone string, port uint16, form uint8) string {
	scheme := "http"
	if form&1 != 0 {
		scheme = "https"
	}
	host := ip.String()
	if form&8 != 0 && ip.Is4() {
		host = netip.AddrFrom16(ip.As16()).String() // ::ffff:a.b.c.d
	}
	if form&16 != 0 && netip.MustParseAddr(host).Is6() && !ip.Is4In6() {
		host = netip.MustParseAddr(host).StringExpanded()
	}
	if form&2 != 0 {
		host = strings.ToUpper(host)
	}
	if strings.Contains(host, ":") {
		if form&32 != 0 {
			host += "%25" + zone
		}
		host = "[" + host + "]"
	}
	p := fmt.Sprintf(":%d", port)
	if form&4 != 0 && ((scheme == "http" && port == 80) || (scheme == "https" && port == 443)) {
		p = ""
	}
	return scheme + "://" + host + p + "/"
}

// dialHost writes ip as a dialer would pass it to Control, with a zone on
// IPv6 when form asks for one.
func dialHost(ip netip.Addr, zone string, form uint8) string {
	if form&8 != 0 && ip.Is4() {
		ip = netip.AddrFrom16(ip.As16())
	}
	if ip.Is6() && form&32 != 0 {
		return ip.WithZone(zone).String()
	}
	return ip.String()
}

// FuzzCanonHost: the canonical form of a host is a fixed point, and the
// forms of one IP address agree.
func FuzzCanonHost(f *testing.F) {
	for _, s := range []string{"[FD00::1%25lo]", "fd00::1%lo", "Forge.Example.", "127.0.0.1.", "::ffff:10.0.0.1", "a..", "%:", "["} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, host string) {
		c := canonHost(host)
		if again := canonHost(c); again != c {
			t.Fatalf("canonHost(%q) = %q, but canonHost(%q) = %q", host, c, c, again)
		}
		if ip, err := netip.ParseAddr(host); err == nil {
			want := ip.Unmap().WithZone("").String()
			for _, form := range []string{host, "[" + host + "]", strings.ToUpper(host), ip.WithZone("eth0").String()} {
				if got := canonHost(form); got != want {
					t.Fatalf("canonHost(%q) = %q, want %q", form, got, want)
				}
			}
		}
	})
}
