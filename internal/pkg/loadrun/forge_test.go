package loadrun

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
)

// TestForgeWithZoneIsNotATarget: a forge registered by an IPv6 address
// with a zone ("%25" in its URL) is still the forge: a load step aimed at
// it, written with or without the zone, is refused before anything is sent,
// and so is its port on the loopback address when the forge's address is
// one of this host's. The "forge" is a real server on [::1].
func TestForgeWithZoneIsNotATarget(t *testing.T) {
	t.Parallel()
	var hits atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	l, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback here: %v", err)
	}
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(l.Addr().String())
	forges := []string{"http://[::1%25lo]:" + port, "http://[0:0::1%25lo]:" + port + "/"}
	if ifc, addr, ok := localIPv6(); ok {
		forges = append(forges, "http://["+addr.String()+"%25"+ifc+"]:"+port+"/")
	}
	for _, forge := range forges {
		pol, err := Policy(context.Background(), nil, forge)
		if err != nil {
			t.Fatal(err)
		}
		for _, target := range []string{"http://[::1%25lo]:" + port + "/", "http://[::1]:" + port + "/", "http://[0:0:0:0:0:0:0:1]:" + port + "/"} {
			cfg := validated(t, "forge.yaml", "target: "+target+"\ntotal: 2\n", nil)
			lt, err := New(context.Background(), cfg, Settings{Policy: pol})
			if err == nil {
				_, _ = lt.Run(context.Background())
				_ = lt.Close()
				t.Errorf("forge %s: target %s was accepted", forge, target)
				continue
			}
			if !strings.Contains(err.Error(), "the forge's own address") {
				t.Errorf("forge %s: target %s refused with %q, want the forge named", forge, target, err)
			}
		}
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the forge saw %d requests", n)
	}
}

// localIPv6 returns an interface of this host with a global IPv6 address.
func localIPv6() (string, netip.Addr, bool) {
	ifs, err := net.Interfaces()
	if err != nil {
		return "", netip.Addr{}, false
	}
	for _, ifc := range ifs {
		addrs, _ := ifc.Addrs()
		for _, a := range addrs {
			if pn, ok := a.(*net.IPNet); ok {
				if ip, ok := netip.AddrFromSlice(pn.IP); ok && ip.Is6() && !ip.Is4In6() && ip.IsGlobalUnicast() {
					return ifc.Name, ip, true
				}
			}
		}
	}
	return "", netip.Addr{}, false
}
