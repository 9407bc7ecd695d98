package loadrun

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

	"github.com/forgeload/forgeload/internal/pkg/dnstest"
	"github.com/forgeload/forgeload/internal/pkg/load/build"
	"github.com/forgeload/forgeload/internal/pkg/load/loadtarget"
	"github.com/forgeload/forgeload/internal/pkg/load/loadtarget/grpctarget"
	"github.com/forgeload/forgeload/internal/pkg/policy"
)

// redirector answers every request with a redirect (status code) to the
// same path on base, and counts what it answered.
func redirector(t *testing.T, code int, base string) (port string, hits *atomic.Int64) {
	t.Helper()
	hits = &atomic.Int64{}
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.Redirect(w, r, base+r.URL.Path, code)
	}))
	t.Cleanup(s.Close)
	_, port, _ = net.SplitHostPort(s.Listener.Addr().String())
	return port, hits
}

// portOf is the port of a base URL or host:port.
func portOf(t *testing.T, s string) string {
	t.Helper()
	if i := strings.Index(s, "://"); i >= 0 {
		s = s[i+3:]
	}
	s, _, _ = strings.Cut(s, "/")
	_, port, err := net.SplitHostPort(s)
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// TestRedirectsCheckedOnEveryHop: every client of the load step that
// follows redirects (the WebSocket handshake, the OAuth2 token request, the
// OTLP/HTTP exporter) checks the redirect's new host against the policy's
// host-name rules before following it, and the HTTP and SSE drivers follow
// none. Every name resolves to 127.0.0.1, so only the name rules can tell
// the allowed host (ok.test) from the denied one (evil.example): a deny
// glob and an allow-list of host names are both checked. The denied
// server sees nothing, and the run stops (or, for the token fetched before it, does not
// start) with the host and the rule in its error.
func TestRedirectsCheckedOnEveryHop(t *testing.T) {
	t.Parallel()
	dns := dnstest.Start(t, func(string) netip.Addr { return netip.MustParseAddr("127.0.0.1") })
	rules := []struct {
		name string
		opts policy.Options
		want string
	}{
		{"deny glob", policy.Options{Deny: []string{"*.example"}}, `load.deny_targets rule "*.example"`},
		{"allow-list", policy.Options{Allow: []string{"ok.test"}}, "load.allow_targets"},
	}
	type kind struct {
		name string
		// setup starts the denied server and a redirector to it, and
		// returns the config and how many requests the denied server saw.
		setup func(t *testing.T, code int) (config string, denied func() int)
	}
	kinds := []kind{
		{"websocket", func(t *testing.T, code int) (string, func() int) {
			ws := loadtarget.StartWebSocket(t)
			port, _ := redirector(t, code, "ws://evil.example:"+portOf(t, ws.URL))
			return "protocol: websocket\ntarget: ws://ok.test:" + port + "/echo\ntotal: 3\nwebsocket: {messages: [hi], expect_replies: true}\n",
				func() int { return int(ws.Sessions()) }
		}},
		{"oauth2 token", func(t *testing.T, code int) (string, func() int) {
			target := loadtarget.StartHTTP(t)
			idp := loadtarget.StartOAuth2(t, 60)
			port, _ := redirector(t, code, "http://evil.example:"+portOf(t, idp.URL))
			return "target: http://ok.test:" + portOf(t, target.URL) + "/\ntotal: 3\n" +
					"auth: {type: oauth2_client_credentials, token_url: \"http://ok.test:" + port + "/token\", client_id: svc, client_secret: s3cret}\n",
				func() int { return len(idp.Grants()) }
		}},
		{"otlp http", func(t *testing.T, code int) (string, func() int) {
			target := loadtarget.StartHTTP(t)
			otlp := grpctarget.StartOTLP(t)
			// The receiver counts only well-formed exports; a 302 turns
			// the POST into a GET, so the front counts every request.
			var seen atomic.Int64
			front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				seen.Add(1)
				http.Redirect(w, r, "http://"+otlp.HTTPAddr+r.URL.Path, http.StatusTemporaryRedirect)
			}))
			t.Cleanup(front.Close)
			port, _ := redirector(t, code, "http://evil.example:"+portOf(t, front.URL))
			return "target: http://ok.test:" + portOf(t, target.URL) + "/\ntotal: 3\n" +
					"tracing: {endpoint: \"ok.test:" + port + "\", protocol: http, insecure: true}\n",
				func() int { return int(seen.Load()) + len(otlp.Spans()) }
		}},
		{"http", func(t *testing.T, code int) (string, func() int) {
			target := loadtarget.StartHTTP(t)
			port, _ := redirector(t, code, "http://evil.example:"+portOf(t, target.URL))
			return "target: http://ok.test:" + port + "/\ntotal: 3\n", func() int { return len(target.Requests()) }
		}},
		{"sse", func(t *testing.T, code int) (string, func() int) {
			sse := loadtarget.StartSSE(t)
			port, _ := redirector(t, code, "http://evil.example:"+portOf(t, sse.URL))
			return "protocol: sse\ntarget: http://ok.test:" + port + "/\ntotal: 3\nsse: {max_events: 1}\n", func() int { return int(sse.Requests()) }
		}},
	}
	for _, r := range rules {
		for i, k := range kinds {
			code := []int{http.StatusFound, http.StatusTemporaryRedirect}[i%2]
			t.Run(r.name+"/"+k.name, func(t *testing.T) {
				t.Parallel()
				text, denied := k.setup(t, code)
				o := r.opts
				o.Resolver = dns.Resolver()
				pol, err := policy.New(context.Background(), o)
				if err != nil {
					t.Fatal(err)
				}
				cfg := validated(t, "redirect.yaml", text, nil)
				lt, err := New(context.Background(), cfg, Settings{Policy: pol, Engine: build.Settings{Resolver: dns.Resolver()}})
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				defer lt.Close()
				// The token is fetched before the run starts: a refusal
				// there is Run's error.
				out, err := lt.Run(context.Background())
				if err != nil && !errors.Is(err, policy.ErrDenied) {
					t.Fatalf("Run: %v", err)
				}
				refused := err
				if err == nil {
					refused = out.Refused
				}
				if n := denied(); n != 0 {
					t.Errorf("the denied host evil.example saw %d requests through a %d redirect", n, code)
				}
				if k.name == "http" || k.name == "sse" {
					// These drivers never follow a redirect: the 3xx is
					// the response, and nothing is refused.
					return
				}
				if !errors.Is(refused, policy.ErrDenied) {
					t.Fatalf("the run was not stopped by the policy: refused %v, stopped %v", out.Refused, out.Stopped)
				}
				msg := refused.Error()
				t.Logf("refused: %s", msg)
				for _, w := range []string{`"evil.example"`, r.want} {
					if !strings.Contains(msg, w) {
						t.Errorf("refusal %q does not name %s", msg, w)
					}
				}
			})
		}
	}
}
