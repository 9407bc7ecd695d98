package redact

import (
	"errors"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// Hidden stands for a hidden value in the output of [URL], as in
// url.URL.Redacted.
const Hidden = "xxxxx"

// Unparsable stands for a URL that does not parse and holds no "@", so that
// no part of it can be shown safely.
const Unparsable = "[unparsable URL redacted]"

// URL returns raw with its credentials replaced by [Hidden]: the password of
// its user info and the values of query parameters whose names look like
// credentials ([Sensitive]). A URL without either is returned unchanged,
// byte for byte. Text that does not parse as a URL keeps only what follows
// its last "@" (the host and path, behind "…"), or becomes [Unparsable]
// when it has no "@"; an address (host:port, which does not parse as a URL
// when the host is an IP address) is shown as is.
func URL(raw string) string { return URLAs(raw, Hidden) }

// URLAs is [URL] with mask in place of [Hidden], for views that show every
// hidden value alike (the load summaries' configuration rows use "***").
func URLAs(raw, mask string) string {
	u, err := url.Parse(raw)
	if err != nil {
		if isAddress(raw) {
			return raw
		}
		if at := strings.LastIndex(raw, "@"); at >= 0 {
			return "…" + raw[at:]
		}
		return Unparsable
	}
	changed := false
	if u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), mask)
			changed = true
		}
	}
	if q := u.Query(); len(q) > 0 {
		masked := false
		for k := range q {
			if Sensitive(k) {
				q[k] = []string{mask}
				masked = true
			}
		}
		if masked {
			u.RawQuery = q.Encode()
			changed = true
		}
	}
	if !changed {
		return raw
	}
	// The mask is shown as written, not percent-encoded ("***" in a query
	// would read "%2A%2A%2A").
	s := u.String()
	if esc := url.QueryEscape(mask); esc != mask {
		s = strings.ReplaceAll(s, esc, mask)
	}
	return s
}

// isAddress reports whether s is a bare host:port, which holds no
// credential.
func isAddress(s string) bool {
	host, port, err := net.SplitHostPort(s)
	if err != nil || host == "" || strings.ContainsAny(host, "/?#@%& \t") {
		return false
	}
	_, err = strconv.ParseUint(port, 10, 16)
	return err == nil
}

// sensitiveWords are the parts of a header or parameter name that mark its
// value as a credential.
var sensitiveWords = []string{"auth", "token", "cookie", "key", "secret", "password", "session", "signature", "credential"}

// Sensitive reports whether a header or query parameter named name carries
// a credential: its name, in any case, contains auth, token, cookie, key,
// secret, password, session, signature or credential (Authorization,
// X-Api-Key, access_token, …).
func Sensitive(name string) bool {
	n := strings.ToLower(name)
	for _, s := range sensitiveWords {
		if strings.Contains(n, s) {
			return true
		}
	}
	return false
}

// Error returns err with the password of rawURL's user info replaced by
// [Hidden] wherever err's message quotes it, for errors of code that was
// given the URL (a client library's parse or dial error). nil stays nil.
// The result does not wrap err, so the password cannot be reached through
// errors.As either.
func Error(err error, rawURL string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if i := strings.Index(rawURL, "://"); i >= 0 {
		if at := strings.LastIndex(rawURL, "@"); at > i {
			if _, pw, ok := strings.Cut(rawURL[i+3:at], ":"); ok && pw != "" {
				msg = strings.ReplaceAll(msg, pw, Hidden)
			}
		}
	}
	return errors.New(msg)
}
