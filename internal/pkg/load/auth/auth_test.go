package auth

import (
	"context"
	"strings"
	"testing"

	"github.com/forgeload/forgeload/internal/pkg/load/loadtarget"
)

func TestClientCredentialsRefreshesExpiringTokens(t *testing.T) {
	t.Parallel()
	// Tokens live 1 s and are replaced 30 s before they expire: every
	// request needs a new one.
	srv := loadtarget.StartOAuth2(t, 1)
	src, err := New(Config{Type: ClientCredentials, TokenURL: srv.URL, ClientID: "svc", ClientSecret: "s3cret", Scopes: []string{"api:read", "api:write"}})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"Bearer tok-1", "Bearer tok-2", "Bearer tok-3"} {
		got, err := src(context.Background())
		if err != nil || got != want {
			t.Fatalf("request %d: %q, %v; want %q", i+1, got, err, want)
		}
	}
	g := srv.Grants()
	if len(g) != 3 || g[0].Type != "client_credentials" || g[0].Scope != "api:read api:write" {
		t.Errorf("grants = %+v", g)
	}
}

func TestLongLivedTokenIsReused(t *testing.T) {
	t.Parallel()
	srv := loadtarget.StartOAuth2(t, 3600)
	src, err := New(Config{Type: ResourceOwner, TokenURL: srv.URL, ClientID: "svc", ClientSecret: "s3cret", Username: "alice", Password: "pw"})
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if got, err := src(context.Background()); err != nil || got != "Bearer tok-1" {
			t.Fatalf("got %q, %v", got, err)
		}
	}
	if g := srv.Grants(); len(g) != 1 || g[0].Type != "password" || g[0].Username != "alice" {
		t.Errorf("grants = %+v, want one password grant", g)
	}
}

func TestErrorsHoldNoSecret(t *testing.T) {
	t.Parallel()
	srv := loadtarget.StartOAuth2(t, 60)
	src, err := New(Config{Type: ClientCredentials, TokenURL: srv.URL, ClientID: "svc", ClientSecret: "wrong-secret"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = src(context.Background())
	if err == nil || !strings.Contains(err.Error(), "answered 401 (invalid_client)") {
		t.Fatalf("err = %v", err)
	}
	for _, secret := range []string{"wrong-secret", "s3cret-echo"} {
		if strings.Contains(err.Error(), secret) {
			t.Errorf("the error %q holds %q", err, secret)
		}
	}
}

// The token endpoint in an error keeps its ordinary query parameters and
// hides the credential-like ones.
func TestErrorsHideTokenURLSecrets(t *testing.T) {
	t.Parallel()
	srv := loadtarget.StartOAuth2(t, 60)
	src, err := New(Config{Type: ClientCredentials, TokenURL: srv.URL + "?api_key=s3cret-q&tenant=t1", ClientID: "svc", ClientSecret: "wrong-secret"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = src(context.Background())
	if err == nil || !strings.Contains(err.Error(), "api_key=xxxxx&tenant=t1") || strings.Contains(err.Error(), "s3cret-q") {
		t.Fatalf("err = %v, want the token URL with api_key hidden and tenant shown", err)
	}
}

func TestStaticAndBadConfigs(t *testing.T) {
	t.Parallel()
	src, err := New(Config{Type: OIDCImplicit, StaticToken: "abc"})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := src(context.Background()); got != "Bearer abc" {
		t.Errorf("static = %q", got)
	}
	for _, tt := range []struct {
		c    Config
		want string
	}{
		{Config{Type: OIDCAuthCode}, "needs static_token"},
		{Config{Type: "magic"}, `auth type "magic" is unknown`},
		{Config{Type: ClientCredentials, TokenURL: "idp/token", ClientID: "x"}, "auth.token_url must be an absolute"},
		{Config{Type: ClientCredentials, TokenURL: "https://idp/token"}, "auth.client_id is required"},
		{Config{Type: ResourceOwner, TokenURL: "https://idp/token", Username: "u"}, "auth.username and auth.password are required"},
	} {
		if _, err := New(tt.c); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("New(%+v) = %v, want %q", tt.c, err, tt.want)
		}
	}
}
