package loadtarget

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// Grant is one token request the OAuth2 server received.
type Grant struct {
	// Type is grant_type; ClientID and ClientSecret come from HTTP Basic
	// auth or the form; Username and Password from the form.
	Type, ClientID, ClientSecret, Username, Password, Scope string
	// Token is the access token issued, "" when refused.
	Token string
}

// OAuth2 is a real OAuth2 token endpoint (POST /token). It issues tok-1,
// tok-2, … each valid for ExpiresIn seconds, to client "svc" with secret
// "s3cret" (and, for the password grant, user "alice" with password
// "pw"); anything else gets 401 invalid_client.
type OAuth2 struct {
	// URL is the token endpoint's URL.
	URL string
	// ExpiresIn is the expires_in of every token.
	ExpiresIn int
	mu        sync.Mutex
	grants    []Grant
}

// StartOAuth2 starts a token endpoint whose tokens expire after expiresIn
// seconds.
func StartOAuth2(t testing.TB, expiresIn int) *OAuth2 {
	t.Helper()
	s := &OAuth2{ExpiresIn: expiresIn}
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	s.URL = hs.URL + "/token"
	return s
}

// ServeHTTP answers one token request.
func (s *OAuth2) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/token" || r.Method != http.MethodPost || r.ParseForm() != nil {
		http.Error(w, "no", http.StatusBadRequest)
		return
	}
	g := Grant{Type: r.PostForm.Get("grant_type"), Username: r.PostForm.Get("username"), Password: r.PostForm.Get("password"), Scope: r.PostForm.Get("scope")}
	if id, secret, ok := r.BasicAuth(); ok {
		g.ClientID, g.ClientSecret = id, secret
	} else {
		g.ClientID, g.ClientSecret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	ok := g.ClientID == "svc" && g.ClientSecret == "s3cret"
	if g.Type == "password" {
		ok = ok && g.Username == "alice" && g.Password == "pw"
	} else if g.Type != "client_credentials" {
		ok = false
	}
	s.mu.Lock()
	if ok {
		g.Token = fmt.Sprintf("tok-%d", len(s.grants)+1)
	}
	s.grants = append(s.grants, g)
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if !ok {
		w.WriteHeader(http.StatusUnauthorized)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": "invalid_client", "error_description": "secret s3cret-echo is wrong"})
		return
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"access_token": g.Token, "token_type": "bearer", "expires_in": s.ExpiresIn})
}

// Grants returns the token requests received, in order.
func (s *OAuth2) Grants() []Grant {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Grant(nil), s.grants...)
}
