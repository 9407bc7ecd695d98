package build

import (
	"strings"
	"testing"

	"github.com/forgeload/forgeload/internal/pkg/load/spec"
)

// Describe masks URL passwords, credential-like query values and header
// values as "***", and shows everything else as written.
func TestDescribeMasksCredentials(t *testing.T) {
	t.Parallel()
	cfg := &spec.Config{
		Target:  "https://user:s3cret-pw@api.test/v1?access_token=s3cret-tok&page=2",
		Method:  "GET",
		Headers: map[string]string{"Authorization": "Bearer s3cret-hdr", "X-Trace": "visible"},
		Endpoints: []spec.Endpoint{
			{Name: "search", Weight: 1, URL: "https://api.test/search?X-Api-Key=s3cret-key&q=a", Headers: map[string]string{"Cookie": "s3cret-cookie"}},
		},
	}
	rows := map[string]string{}
	for _, r := range Describe(cfg) {
		rows[r.Key] = r.Value
	}
	for key, want := range map[string]string{
		"target":            "https://user:***@api.test/v1?access_token=***&page=2",
		"headers":           "Authorization: ***\nX-Trace: visible",
		"endpoints[search]": "https://api.test/search?X-Api-Key=***&q=a weight 1\nCookie: ***",
	} {
		if got := rows[key]; got != want {
			t.Errorf("row %s = %q, want %q", key, got, want)
		}
	}
	for key, v := range rows {
		if strings.Contains(v, "s3cret") {
			t.Errorf("row %s = %q shows a secret", key, v)
		}
	}
}

// TestDescribeMixedProtocols: a mixed-protocol run is described as mixed,
// with its protocols, and each endpoint by its protocol rather than an
// HTTP method it does not send.
func TestDescribeMixedProtocols(t *testing.T) {
	t.Parallel()
	cfg, err := spec.Parse("m.yaml", []byte("target: http://a.test\nrate: 1\nendpoints:\n  - {name: rest, path: /x}\n  - {name: chat, protocol: websocket, url: 'ws://b.test/c'}\n"))
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{}
	for _, r := range Describe(cfg) {
		rows[r.Key] = r.Value
	}
	for key, want := range map[string]string{
		"protocol":        "mixed (http, websocket)",
		"endpoints[rest]": "/x weight 1",
		"endpoints[chat]": "websocket ws://b.test/c weight 1",
	} {
		if got := rows[key]; got != want {
			t.Errorf("row %s = %q, want %q", key, got, want)
		}
	}
}
