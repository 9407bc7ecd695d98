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
