package policy

import (
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/forgeload/forgeload/internal/pkg/dnstest"
)

// TestCheckRedirect follows redirects with a real client whose
// CheckRedirect is the policy: every name resolves to 127.0.0.1, so only
// the host-name rules tell the hops apart. A denied hop is not followed
// and the error names its host and the rule; an allowed one is; a loop
// stops after MaxRedirects.
func TestCheckRedirect(t *testing.T) {
	t.Parallel()
	dns := dnstest.Start(t, func(string) netip.Addr { return netip.MustParseAddr("127.0.0.1") })
	var finals atomic.Int64
	final := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { finals.Add(1) }))
	t.Cleanup(final.Close)
	_, finalPort, _ := net.SplitHostPort(final.Listener.Addr().String())
	hop := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/loop" {
			http.Redirect(w, r, "/loop", http.StatusFound)
			return
		}
		http.Redirect(w, r, "http://"+r.URL.Query().Get("to")+":"+finalPort+"/", http.StatusTemporaryRedirect)
	}))
	t.Cleanup(hop.Close)
	_, hopPort, _ := net.SplitHostPort(hop.Listener.Addr().String())
	tests := []struct {
		name, to string
		opts     Options
		want     string // "" = followed
	}{
		{"deny glob", "api.evil.example", Options{Deny: []string{"*.example"}}, `to host "api.evil.example" refused: load target http://api.evil.example:` + finalPort + `/ is denied by load.deny_targets rule "*.example"`},
		{"allow-list of names", "other.test", Options{Allow: []string{"ok.test"}}, `to host "other.test" refused: load target http://other.test:` + finalPort + `/ is denied by load.allow_targets`},
		{"allowed name", "ok.test", Options{Allow: []string{"ok.test"}}, ""},
		{"upper case and trailing dot", "API.Evil.Example.", Options{Deny: []string{"*.example"}}, `load.deny_targets rule "*.example"`},
		{"forge by name", "forge.test", Options{Forge: "http://forge.test:" + finalPort}, "the forge's own address"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.Resolver = dns.Resolver()
			p := mustNew(t, tt.opts)
			c := &http.Client{CheckRedirect: p.CheckRedirect, Transport: &http.Transport{
				Proxy: nil, DialContext: (&net.Dialer{Resolver: dns.Resolver()}).DialContext}}
			before := finals.Load()
			resp, err := c.Get("http://ok.test:" + hopPort + "/?to=" + tt.to)
			if resp != nil {
				resp.Body.Close()
			}
			if tt.want == "" {
				if err != nil || finals.Load() != before+1 {
					t.Fatalf("redirect to %s: %v, final server saw %d, want followed", tt.to, err, finals.Load()-before)
				}
				return
			}
			if !errors.Is(err, ErrDenied) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("redirect to %s: %v, want a refusal containing %q", tt.to, err, tt.want)
			}
			if n := finals.Load() - before; n != 0 {
				t.Fatalf("the refused hop saw %d requests", n)
			}
		})
	}
	t.Run("loop", func(t *testing.T) {
		p := mustNew(t, Options{Resolver: dns.Resolver()})
		c := &http.Client{CheckRedirect: p.CheckRedirect}
		resp, err := c.Get(hop.URL + "/loop")
		if resp != nil {
			resp.Body.Close()
		}
		if err == nil || !strings.Contains(err.Error(), "stopped after 10 redirects") {
			t.Fatalf("redirect loop: %v, want stopped after 10", err)
		}
	})
}
