package policy

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/forgeload/forgeload/internal/pkg/config"
	"github.com/forgeload/forgeload/internal/pkg/dnstest"
)

func mustNew(t testing.TB, o Options) *Policy {
	t.Helper()
	p, err := New(context.Background(), o)
	if err != nil {
		t.Fatalf("New(%+v) = %v", o, err)
	}
	return p
}

func TestCheckURL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		opts    Options
		target  string
		wantErr string // substring; "" = allowed
	}{
		{"loopback allowed by default", Options{}, "http://127.0.0.1:8080/", ""},
		{"metadata service denied", Options{}, "http://169.254.169.254/latest/meta-data", `built-in deny rule "169.254.0.0/16"`},
		{"ipv6 link-local denied", Options{}, "http://[fe80::1]:80/", `"fe80::/10"`},
		{"aws ipv6 metadata denied", Options{}, "http://[fd00:ec2::254]/", `"fd00:ec2::254/128"`},
		{"forge host and port denied", Options{Forge: "http://127.0.0.1:3000"}, "http://127.0.0.1:3000/api", "the forge's own address"},
		{"forge host, other port allowed", Options{Forge: "http://127.0.0.1:3000"}, "http://127.0.0.1:3001/", ""},
		{"forge default port", Options{Forge: "https://localhost/"}, "https://127.0.0.1/", "the forge's own address"},
		{"deny cidr", Options{Deny: []string{"127.0.0.2/32"}}, "http://127.0.0.2:80/", `load.deny_targets rule "127.0.0.2/32"`},
		{"deny host glob", Options{Deny: []string{"*.prod.example.com"}}, "http://api.prod.example.com/", `load.deny_targets rule "*.prod.example.com"`},
		{"allow-list miss", Options{Allow: []string{"10.0.0.0/8"}}, "http://127.0.0.1:80/", "not in the allow-list"},
		{"allow-list hit", Options{Allow: []string{"127.0.0.0/8"}}, "http://127.0.0.1:80/", ""},
		{"allow does not beat deny", Options{Allow: []string{"169.254.0.0/16"}}, "http://169.254.1.1/", "built-in deny"},
		{"not a url", Options{}, "127.0.0.1:80", "not an absolute URL"},
		{"unspecified ipv4 denied", Options{}, "http://0.0.0.0:8080/", `built-in deny rule "0.0.0.0/8"`},
		{"unspecified ipv6 denied", Options{}, "http://[::]:8080/", `built-in deny rule "::/128"`},
		{"mapped unspecified denied", Options{}, "http://[::ffff:0.0.0.0]:8080/", `built-in deny rule "0.0.0.0/8"`},
		{"alibaba metadata denied", Options{}, "http://100.100.100.200/latest/meta-data", `"100.100.100.200/32"`},
		{"azure wireserver denied", Options{}, "http://168.63.129.16/", `"168.63.129.16/32"`},
		{"gcp ipv6 metadata denied", Options{}, "http://[fd20:ce::254]/", `"fd20:ce::254/128"`},
		{"forge port on another loopback address", Options{Forge: "http://127.0.0.1:3000"}, "http://127.0.0.2:3000/", "port 3000 on any address of this host"},
		{"forge port on ipv6 loopback", Options{Forge: "http://127.0.0.1:3000"}, "http://[::1]:3000/", "the forge's own address"},
		{"remote forge's port on loopback allowed", Options{Forge: "http://192.0.2.1:3000"}, "http://127.0.0.1:3000/", ""},
		{"decimal integer host refused", Options{}, "http://2130706434:8080/", "written as a number"},
		{"hex host refused", Options{}, "http://0x7f000002/", "written as a number"},
		{"short form host refused", Options{}, "http://127.2/", "written as a number"},
		{"octal host refused", Options{}, "http://0177.0.0.1/", "written as a number"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := mustNew(t, tt.opts)
			err := p.CheckURL(context.Background(), tt.target)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("CheckURL(%q) = %v, want nil", tt.target, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("CheckURL(%q) = %v, want error containing %q", tt.target, err, tt.wantErr)
			}
		})
	}
}

func TestViolationIsErrDenied(t *testing.T) {
	t.Parallel()
	p := mustNew(t, Options{})
	err := p.CheckURL(context.Background(), "http://169.254.169.254/")
	if !errors.Is(err, ErrDenied) {
		t.Fatalf("errors.Is(%v, ErrDenied) = false", err)
	}
}

func TestNewRejectsBadRules(t *testing.T) {
	t.Parallel()
	for _, in := range []string{"", "10.0.0.0/33", "a:b", "[bad", "name..", ".name", "0x7f000002", "2130706434", "127.2", "10.0.*"} {
		_, err := New(context.Background(), Options{Deny: []string{in}})
		if err == nil || !strings.Contains(err.Error(), "load.deny_targets") {
			t.Errorf("New(deny %q) = %v, want an error naming load.deny_targets", in, err)
		}
	}
}

// TestControlRefusesAtDialTime dials through a real net.Dialer whose Control
// is the policy: the denied listener must never see a connection, and the
// allowed one must.
func TestControlRefusesAtDialTime(t *testing.T) {
	t.Parallel()
	var denied, allowed atomic.Int64
	bad := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { denied.Add(1) }))
	l, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("no 127.0.0.2 on this machine: %v", err)
	}
	bad.Listener = l
	bad.Start()
	defer bad.Close()
	good := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { allowed.Add(1) }))
	defer good.Close()

	p := mustNew(t, Options{Deny: []string{"127.0.0.2/32"}})
	d := &net.Dialer{Timeout: 2 * time.Second, Control: p.Control(false)}
	client := &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}

	resp, err := client.Get(bad.URL)
	if err == nil {
		resp.Body.Close()
		t.Fatalf("GET %s succeeded, want a policy error", bad.URL)
	}
	if !errors.Is(err, ErrDenied) {
		t.Fatalf("GET denied target: %v, want ErrDenied", err)
	}
	resp, err = client.Get(good.URL)
	if err != nil {
		t.Fatalf("GET allowed target: %v", err)
	}
	resp.Body.Close()
	if denied.Load() != 0 || allowed.Load() != 1 {
		t.Fatalf("requests seen: denied=%d allowed=%d, want 0 and 1", denied.Load(), allowed.Load())
	}
}

func TestControlWithGlobAllowList(t *testing.T) {
	t.Parallel()
	p := mustNew(t, Options{Allow: []string{"*.staging.example.com"}})
	if !p.HostsAllowed([]string{"api.staging.example.com"}) {
		t.Fatal("HostsAllowed(api.staging.example.com) = false, want true")
	}
	if p.HostsAllowed([]string{"api.staging.example.com", "evil.com"}) {
		t.Fatal("HostsAllowed with an unlisted host = true, want false")
	}
	if err := p.Control(true)("tcp", "10.1.2.3:443", nil); err != nil {
		t.Fatalf("Control(true) on a glob-allowed host = %v", err)
	}
	if err := p.Control(false)("tcp", "10.1.2.3:443", nil); err == nil {
		t.Fatal("Control(false) with an allow-list and no CIDR match = nil, want refusal")
	}
	if err := p.Control(true)("tcp", "169.254.169.254:80", nil); err == nil {
		t.Fatal("Control(true) on metadata address = nil, want refusal")
	}
}

// TestDNSRebindingRefusedAtDial resolves a name to an allowed address for
// the pre-flight check, then to a denied one for the dial: the dial must be
// refused and the denied listener must see nothing.
func TestDNSRebindingRefusedAtDial(t *testing.T) {
	t.Parallel()
	var seen atomic.Int64
	l, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("no 127.0.0.2 on this machine: %v", err)
	}
	bad := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { seen.Add(1) }))
	bad.Listener = l
	bad.Start()
	defer bad.Close()
	_, port, _ := net.SplitHostPort(l.Addr().String())

	var lookups atomic.Int64
	dns := dnstest.Start(t, func(string) netip.Addr {
		if lookups.Add(1) == 1 {
			return netip.MustParseAddr("127.0.0.1")
		}
		return netip.MustParseAddr("127.0.0.2")
	})
	p := mustNew(t, Options{Deny: []string{"127.0.0.2/32"}, Resolver: dns.Resolver()})
	target := "http://rebind.test:" + port + "/"
	if err := p.CheckURL(context.Background(), target); err != nil {
		t.Fatalf("pre-flight CheckURL(%s) = %v, want allowed (the name resolves to 127.0.0.1 first)", target, err)
	}
	d := &net.Dialer{Timeout: 2 * time.Second, Control: p.Control(false), Resolver: dns.Resolver()}
	client := &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
	resp, err := client.Get(target)
	if err == nil {
		resp.Body.Close()
		t.Fatal("GET after the DNS answer changed succeeded, want a policy refusal")
	}
	if !errors.Is(err, ErrDenied) {
		t.Fatalf("GET after rebinding: %v, want ErrDenied", err)
	}
	if seen.Load() != 0 {
		t.Fatalf("the denied address saw %d requests", seen.Load())
	}
}

// TestNumericHostNeverLooksUp: a host written as a number is refused
// before the resolver sees it, so the system resolver cannot read it as an
// address the policy never checked.
func TestNumericHostNeverLooksUp(t *testing.T) {
	t.Parallel()
	dns := dnstest.Start(t, func(string) netip.Addr { return netip.MustParseAddr("127.0.0.1") })
	p := mustNew(t, Options{Resolver: dns.Resolver()})
	for _, target := range []string{"http://2130706434/", "http://0x7f000002:80/", "http://127.2/", "http://0177.0.0.01/", "http://a.0x10/"} {
		if err := p.CheckURL(context.Background(), target); err == nil || !strings.Contains(err.Error(), "dotted decimal") {
			t.Errorf("CheckURL(%s) = %v, want a refusal asking for dotted decimal", target, err)
		}
	}
	if n := dns.Queries(); n != 0 {
		t.Fatalf("the resolver saw %d queries for numeric hosts, want 0", n)
	}
	if err := p.CheckURL(context.Background(), "http://host1.test/"); err != nil {
		t.Fatalf("CheckURL(host1.test) = %v, want allowed", err)
	}
}

// TestControlRefusesUnspecifiedToLoopback dials 0.0.0.0 and [::], which
// Linux connects to the local host, with 127.0.0.0/8 denied and with the
// forge on a loopback port: a real listener must never see a connection.
func TestControlRefusesUnspecifiedToLoopback(t *testing.T) {
	t.Parallel()
	var seen atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { seen.Add(1) }))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	for _, o := range []Options{
		{Deny: []string{"127.0.0.0/8"}},
		{Forge: srv.URL},
	} {
		p := mustNew(t, o)
		d := &net.Dialer{Timeout: 2 * time.Second, Control: p.Control(false)}
		client := &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
		for _, host := range []string{"0.0.0.0", "[::ffff:0.0.0.0]", "127.0.0.2"} {
			target := "http://" + host + ":" + port + "/"
			resp, err := client.Get(target)
			if err == nil {
				resp.Body.Close()
				t.Fatalf("policy %+v: GET %s reached the local listener", o, target)
			}
			if !errors.Is(err, ErrDenied) {
				t.Fatalf("policy %+v: GET %s: %v, want ErrDenied", o, target, err)
			}
		}
	}
	if seen.Load() != 0 {
		t.Fatalf("the loopback listener saw %d requests through unspecified addresses", seen.Load())
	}
}

// FuzzCheckURL checks that CheckURL never panics, never asks the resolver
// about a host that ends in a number, and refuses unspecified addresses.
func FuzzCheckURL(f *testing.F) {
	for _, s := range []string{"http://127.0.0.1:80/", "http://0x7f.1/", "http://[::]/", "http://2130706434/", "http://a.b/"} {
		f.Add(s)
	}
	dns := dnstest.Start(f, func(string) netip.Addr { return netip.MustParseAddr("192.0.2.1") })
	p, err := New(context.Background(), Options{Resolver: dns.Resolver()})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		u, perr := url.Parse(raw)
		before := dns.Queries()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		err := p.CheckURL(ctx, raw)
		if perr != nil || u.Host == "" {
			return
		}
		host := u.Hostname()
		ip, ipErr := netip.ParseAddr(host)
		if ipErr != nil && config.NumericHost(host) && dns.Queries() != before {
			t.Fatalf("CheckURL(%q) looked up numeric host %q", raw, host)
		}
		if ipErr == nil && ip.Unmap().IsUnspecified() && err == nil {
			t.Fatalf("CheckURL(%q) allowed an unspecified address", raw)
		}
	})
}

// The job's own services are allowed whatever the admin's lists say, at
// their exact address and port only; the built-in denies still hold.
func TestWithOwn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	base := mustNew(t, Options{Allow: []string{"10.0.0.0/8"}, Deny: []string{"127.0.0.0/8"}})
	own := base.WithOwn([]netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:49153"), netip.MustParseAddrPort("169.254.0.9:80")})
	if err := own.CheckURL(ctx, "http://127.0.0.1:49153/burn"); err != nil {
		t.Errorf("own service: CheckURL = %v, want allowed", err)
	}
	if err := own.Control(false)("tcp", "127.0.0.1:49153", nil); err != nil {
		t.Errorf("own service: Control = %v, want allowed", err)
	}
	if err := own.CheckURL(ctx, "http://127.0.0.1:49154/"); !errors.Is(err, ErrDenied) {
		t.Errorf("another port: CheckURL = %v, want denied", err)
	}
	if err := own.CheckURL(ctx, "http://169.254.0.9/"); !errors.Is(err, ErrDenied) {
		t.Errorf("link-local service: CheckURL = %v, want the built-in deny", err)
	}
	if err := base.CheckURL(ctx, "http://127.0.0.1:49153/"); !errors.Is(err, ErrDenied) {
		t.Errorf("the base policy is unchanged: CheckURL = %v, want denied", err)
	}
}
