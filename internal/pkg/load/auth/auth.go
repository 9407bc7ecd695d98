package auth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/forgeload/forgeload/internal/pkg/redact"
)

// The auth types, as Crankfire names them.
const (
	ClientCredentials = "oauth2_client_credentials"
	ResourceOwner     = "oauth2_resource_owner"
	OIDCImplicit      = "oidc_implicit"
	OIDCAuthCode      = "oidc_auth_code"
	// Static is forgeload's name for a static bearer token.
	Static = "bearer"
)

// DefaultRefreshBeforeExpiry is how long before its expiry a token is
// replaced when the config does not say.
const DefaultRefreshBeforeExpiry = 30 * time.Second

// Config is the auth block.
type Config struct {
	Type, TokenURL, ClientID, ClientSecret, Username, Password, StaticToken string
	Scopes                                                                  []string
	RefreshBeforeExpiry                                                     time.Duration
	// HTTPClient fetches tokens; nil is a client with a 30 s timeout.
	HTTPClient *http.Client
}

// Source returns the Authorization value of each request.
type Source func(ctx context.Context) (string, error)

// New checks c and returns its Source. OAuth2 tokens are fetched lazily, at
// the first call, and cached until refresh_before_expiry before they
// expire; a caller that wants a wrong secret to fail before a run calls the
// Source once first.
func New(c Config) (Source, error) {
	switch c.Type {
	case OIDCImplicit, OIDCAuthCode, Static, "":
		if c.StaticToken == "" {
			return nil, fmt.Errorf("auth type %s needs static_token", cmpOr(c.Type, "(none)"))
		}
		v := "Bearer " + c.StaticToken
		return func(context.Context) (string, error) { return v, nil }, nil
	case ClientCredentials, ResourceOwner:
	default:
		return nil, fmt.Errorf("auth type %q is unknown (want %s, %s, %s or %s)", c.Type, ClientCredentials, ResourceOwner, OIDCImplicit, OIDCAuthCode)
	}
	if u, err := url.Parse(c.TokenURL); err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, errors.New("auth.token_url must be an absolute http(s) URL (want e.g. https://idp.example.com/oauth/token)")
	}
	if c.ClientID == "" && c.Type == ClientCredentials {
		return nil, errors.New("auth.client_id is required for " + ClientCredentials)
	}
	if c.Type == ResourceOwner && (c.Username == "" || c.Password == "") {
		return nil, errors.New("auth.username and auth.password are required for " + ResourceOwner)
	}
	hc := c.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	early := c.RefreshBeforeExpiry
	if early <= 0 {
		early = DefaultRefreshBeforeExpiry
	}
	var fetch oauth2.TokenSource
	// The token requests run on a context of their own carrying the
	// client: a request's context may end while the token it waits for is
	// shared by every worker.
	bg := context.WithValue(context.Background(), oauth2.HTTPClient, hc)
	if c.Type == ClientCredentials {
		fetch = (&clientcredentials.Config{ClientID: c.ClientID, ClientSecret: c.ClientSecret, TokenURL: c.TokenURL, Scopes: c.Scopes}).TokenSource(bg)
	} else {
		oc := &oauth2.Config{ClientID: c.ClientID, ClientSecret: c.ClientSecret, Endpoint: oauth2.Endpoint{TokenURL: c.TokenURL}, Scopes: c.Scopes}
		fetch = passwordSource{ctx: bg, c: oc, user: c.Username, pass: c.Password}
	}
	ts := oauth2.ReuseTokenSourceWithExpiry(nil, fetch, early)
	where := redact.URL(c.TokenURL)
	return func(context.Context) (string, error) {
		t, err := ts.Token()
		if err != nil {
			return "", describe(where, err)
		}
		return t.Type() + " " + t.AccessToken, nil
	}, nil
}

// passwordSource runs the resource-owner password grant for every new
// token (a refresh token, when the server gives one, is not needed).
type passwordSource struct {
	ctx        context.Context
	c          *oauth2.Config
	user, pass string
}

func (p passwordSource) Token() (*oauth2.Token, error) {
	return p.c.PasswordCredentialsToken(p.ctx, p.user, p.pass)
}

// describe turns a token error into a message without secrets or the
// response body.
func describe(where string, err error) error {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		code := 0
		if re.Response != nil {
			code = re.Response.StatusCode
		}
		msg := fmt.Sprintf("auth: token endpoint %s answered %d", where, code)
		if re.ErrorCode != "" {
			msg += " (" + re.ErrorCode + ")"
		}
		return errors.New(msg + ": check auth.client_id, the secret and auth.token_url")
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("auth: token endpoint %s: %w", where, ue.Err)
	}
	return fmt.Errorf("auth: token from %s: %s", where, strings.ReplaceAll(err.Error(), "\n", " "))
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
