package redact

import (
	"errors"
	"strings"
	"testing"
)

func TestURL(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ in, want string }{
		{"", ""},
		{"redis://127.0.0.1:6379/0", "redis://127.0.0.1:6379/0"},
		{"redis://:hunter2@127.0.0.1:6379", "redis://:xxxxx@127.0.0.1:6379"},
		{"https://bob:hunter2@example.test/a?b=1", "https://bob:xxxxx@example.test/a?b=1"},
		{"https://bob@example.test/", "https://bob@example.test/"},
		{"http://127.0.0.1/a b", "http://127.0.0.1/a b"}, // no password: unchanged, not re-encoded
		{"http://bob:hun%zzter2@example.test/", "…@example.test/"},
		{"redis://%zz", Unparsable},
		// An address (host:port, as a dialer sees it) holds no credential:
		// shown as is.
		{"127.0.0.2:8080", "127.0.0.2:8080"},
		{"[::1]:443", "[::1]:443"},
		{"127.0.0.2:80/%zz?token=t0k", Unparsable},
		// Credential-like query parameters are hidden too, in any case.
		{"https://example.test/a?access_token=t0k&page=2", "https://example.test/a?access_token=xxxxx&page=2"},
		{"https://example.test/?X-Api-Key=k3y", "https://example.test/?X-Api-Key=xxxxx"},
		{"https://bob:pw@example.test/?sig=1&Signature=s1g", "https://bob:xxxxx@example.test/?Signature=xxxxx&sig=1"},
		{"https://example.test/?page=2&q=a+b", "https://example.test/?page=2&q=a+b"}, // nothing hidden: not re-encoded
	} {
		if got := URL(tt.in); got != tt.want {
			t.Errorf("URL(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// URLAs shows the mask as written, also where a query would escape it.
func TestURLAs(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ in, want string }{
		{"https://user:s3cret@example.test/p?token=abc&x=1", "https://user:***@example.test/p?token=***&x=1"},
		{"https://example.test/p?x=1", "https://example.test/p?x=1"},
		{"no scheme at all", "no scheme at all"},
		{"http://u:p@h/%zz", "…@h/%zz"},
	} {
		if got := URLAs(tt.in, "***"); got != tt.want {
			t.Errorf("URLAs(%q, ***) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestSensitive(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]bool{
		"Authorization": true, "Cookie": true, "X-API-KEY": true, "access_token": true, "client_secret": true,
		"Password": true, "sessionid": true, "X-Amz-Signature": true, "credentials": true,
		"Accept": false, "X-Trace": false, "page": false, "": false,
	} {
		if got := Sensitive(name); got != want {
			t.Errorf("Sensitive(%q) = %t, want %t", name, got, want)
		}
	}
}

// Error hides the URL's password wherever the message quotes it, and
// nothing else.
func TestError(t *testing.T) {
	t.Parallel()
	if Error(nil, "redis://:pw@h") != nil {
		t.Error("Error(nil, …) is not nil")
	}
	for _, tt := range []struct{ msg, url, want string }{
		{`parse "redis://u:hunter2@h:1": invalid port`, "redis://u:hunter2@h:1", `parse "redis://u:xxxxx@h:1": invalid port`},
		{"auth hunter2 failed; hunter2", "redis://:hunter2@h", "auth xxxxx failed; xxxxx"},
		{"dial tcp h:1: refused", "redis://u@h:1", "dial tcp h:1: refused"}, // no password
		{"dial tcp h:1: refused", "h:1", "dial tcp h:1: refused"},           // no scheme
		{"bad p@ss word", "redis://u:p@ss@h", "bad xxxxx word"},             // the last @ ends the user info
	} {
		if got := Error(errors.New(tt.msg), tt.url).Error(); got != tt.want {
			t.Errorf("Error(%q, %q) = %q, want %q", tt.msg, tt.url, got, tt.want)
		}
	}
}

// FuzzURL checks that a password never survives redaction, whatever the
// text around it.
func FuzzURL(f *testing.F) {
	for _, s := range []string{"", "bob", "b%zzob", "b ob", "\x00"} {
		f.Add(s, "s3cretpass", "example.test:80/p?q=1")
	}
	f.Fuzz(func(t *testing.T, user, pw, rest string) {
		// The password is whatever sits between the user's ":" and the
		// last "@", so user and pw may not hold the delimiters.
		rest = strings.ReplaceAll(rest, "@", "")
		if len(pw) < 6 || strings.ContainsAny(user+pw, ":@/?#") || strings.Contains(user+rest, pw) {
			return
		}
		raw := "http://" + user + ":" + pw + "@" + rest
		// The host and path may be re-escaped around it, so look for the
		// password where it was: after the user's ":".
		if got := URL(raw); strings.Contains(got, ":"+pw) {
			t.Fatalf("URL(%q) = %q keeps the password %q", raw, got, pw)
		}
	})
}
