package policy

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/forgeload/forgeload/internal/pkg/dnstest"
)

func mustNew(t *testing.T, o Options) *Policy {
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
	for _, in := range []string{"", "10.0.0.0/33", "a:b", "[bad"} {
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
