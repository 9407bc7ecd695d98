// Package auth gives load requests their Authorization value from
// Crankfire's auth block: OAuth2 client-credentials and resource-owner
// password grants (through golang.org/x/oauth2), with the token fetched
// before the first request and again refresh_before_expiry ahead of its
// expiry, and static bearer tokens (Crankfire's OIDC types). Token
// requests go through the caller's HTTP client, so the runner's target
// policy applies to the token endpoint, and to every redirect it answers
// with, too. Errors never contain a token,
// a secret or the token endpoint's response body.
package auth
