package client_test

import (
	"strings"
	"testing"

	"github.com/forgeload/forgeload/internal/pkg/client"
)

// FuzzNewAddress checks that any configured address either builds a client
// whose Address is an http(s) URL without a trailing slash, or fails with an
// error that never echoes the token.
func FuzzNewAddress(f *testing.F) {
	for _, s := range []string{"https://gitea.example.com/", "http://127.0.0.1:3000", "gitea", "ftp://x", "https://u:p@h/sub//", "http://[::1", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, addr string) {
		c, err := client.New(client.Options{Address: addr, UUID: "u", Token: "tok-SECRET"})
		if err != nil {
			if strings.Contains(err.Error(), "tok-SECRET") {
				t.Fatalf("error %q contains the token", err)
			}
			return
		}
		got := c.Address()
		if strings.HasSuffix(got, "/") || !(strings.HasPrefix(got, "http://") || strings.HasPrefix(got, "https://")) {
			t.Fatalf("New(%q).Address() = %q, want an http(s) URL without a trailing slash", addr, got)
		}
	})
}
